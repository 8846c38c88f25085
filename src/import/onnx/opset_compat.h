// Opsets: what a model imports against what memplan's ONNX library knows,
// node checks against operator schemas, and the operators newer than the
// library.
//
// A model whose opset is newer than the library runs with the newest schemas
// the library has. That is right for ops whose newer versions only added
// types; a node using a signature added later fails the schema check and is
// refused with a hint. Reduce* and Split changed at opset 18 in ways the old
// shape inference would get silently wrong (axes moved to an input;
// num_outputs), so their nodes never reach it: the scratch copy marks them
// with kNewerRuleDomain, which ONNX skips, and ShapeFolder sizes their
// outputs by the opset-18 rule (newerOpShapes). A few ops added after
// opset 17 whose output is shaped like their input (Gelu, Mish,
// GroupNormalization, BitwiseNot) take the same path; other unknown ops are
// refused by name.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "import/onnx/int_tensor.h"

namespace memplan::onnx_import {

// The domain that hides nodes sized by memplan's own rule from ONNX.
constexpr const char* kNewerRuleDomain = "memplan.newer";

struct Opsets {
  std::map<std::string, int> model;        // domain ("" = ai.onnx) -> imported version
  std::map<std::string, int> library_max;  // domains the model imports beyond the library:
                                           // the library's newest version
  bool beyondLibrary(const std::string& domain) const { return library_max.count(domain) > 0; }
};

// Reads the model's opset_import; "" or what is wrong with it.
std::string readOpsets(const ox::ModelProto& model, Opsets& out);

// Checks a node of `domain` at `opset` against its schema (input/output
// counts, attribute types): shape inference trusts these. "" when the node
// is fine, else the error naming it (`label` is its nodeLabel).
std::string checkNode(const ox::NodeProto& n, const std::string& label, const std::string& domain,
                      int opset, const Opsets& opsets);

// A default-domain node sized by memplan's own rule at this opset (opset-18
// Reduce*/Split, newer same-shape ops).
bool newerOpRule(const ox::NodeProto& n, int opset);

// Moves the nodes newerOpRule() takes into kNewerRuleDomain, in `g` and its
// bodies.
void markNewerRules(ox::GraphProto* g, int opset, int depth = 0);

// The opset-18 output shapes of a node marked by markNewerRules(), from
// input 0's shape `x` and the value of input 1 (Reduce axes or Split sizes;
// nullptr when absent). nullopt when the node is invalid for these shapes.
std::optional<std::vector<std::vector<std::int64_t>>> newerOpShapes(
    const ox::NodeProto& n, const std::vector<std::int64_t>& x, const IntTensor* arg);

// Whether the shapes of a node marked by markNewerRules() depend on the
// value of input 1 (Reduce axes, Split sizes).
bool newerOpReadsInput1(const ox::NodeProto& n);

}  // namespace memplan::onnx_import

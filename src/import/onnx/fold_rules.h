// Shape folding, one rule per ONNX op: given the integer values of a node's
// inputs (and the inferred shapes in scope), the value of its output.
//
// Exporters compute shapes at run time (Shape -> Gather -> Concat -> Reshape,
// PyTorch's pad list built with ConstantOfShape/Slice/Transpose). ONNX's data
// propagation covers only a few of these ops and does not cross into
// control-flow bodies. A rule returns nullopt whenever it cannot be sure
// (an input unknown, an index out of range, a result too large): the output
// then simply stays unfolded.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "import/onnx/int_tensor.h"

namespace memplan::onnx_import {

// Names visible while folding one graph level; lookups fall through to the
// enclosing graph (a body reads outer values).
struct FoldScope {
  const FoldScope* outer = nullptr;
  std::unordered_map<std::string, IntTensor> values;               // known values
  std::unordered_map<std::string, const ox::TypeProto*> types;     // every name defined here

  // The value of `name`; nullptr when it is not known (or not a constant).
  const IntTensor* value(const std::string& name) const;
  // The inferred type of `name`; nullptr when none.
  const ox::TypeProto* type(const std::string& name) const;
  // The fully known shape of `name`, from the inferred types.
  std::optional<std::vector<std::int64_t>> knownShape(const std::string& name) const;
};

// What a rule sees of one node.
struct FoldArgs {
  const ox::NodeProto& node;
  const FoldScope& scope;
  std::vector<const IntTensor*> in;  // per input: its value, nullptr when unknown or omitted
  bool all_known = true;             // every input's value is known

  const IntTensor* input(std::size_t i) const { return i < in.size() ? in[i] : nullptr; }
};

using FoldRule = std::optional<IntTensor> (*)(const FoldArgs&);

// The rule of a default-domain op; nullptr when memplan does not fold it.
FoldRule foldRule(std::string_view op_type);

// The value of a default-domain node's single output, or nullopt.
std::optional<IntTensor> foldNode(FoldRule rule, const ox::NodeProto& n, const FoldScope& s);

}  // namespace memplan::onnx_import

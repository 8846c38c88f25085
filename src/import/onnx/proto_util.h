// Small helpers over ONNX protobuf messages shared by the ONNX reader's
// parts: names, data types, shapes, attributes, graph traversal, limits.
// Internal to src/import/onnx: no protobuf type leaves that folder.
#pragma once

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/graph.h"
#include "memplan/limits.h"

namespace memplan::onnx_import {

namespace ox = ::ONNX_NAMESPACE;

// Nested bodies accepted (If inside Loop inside If ...): memplan's one
// limit for every importer, so what `memplan import` writes reads back.
constexpr int kMaxGraphDepth = static_cast<int>(limits::kMaxControlFlowDepth);
// Message nesting allowed while parsing. A control-flow body costs three
// levels (NodeProto > AttributeProto > GraphProto); a few bodies more than
// the limit still parse, so that the nesting is what gets refused, by name,
// and 32 levels are left for types and tensors inside the deepest body.
constexpr int kProtoRecursionLimit = 3 * (kMaxGraphDepth + 4) + 32;

// Keeps the first line of an exception message (ONNX errors span lines).
std::string firstLine(std::string_view s);

// ONNX TensorProto.DataType -> memplan DType (Unknown when memplan has none).
DType mapDType(std::int32_t t);

inline bool isDefaultDomain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// "Conv", or "com.microsoft::FusedConv" outside the default domain.
std::string opName(const ox::NodeProto& n);

// The node's name, or "<op>_<index>" when it has none.
std::string nodeLabel(const ox::NodeProto& n, std::size_t index);

// "a, b, c" (at most `max` names), "(none)" when empty.
std::string joinNames(const std::vector<std::string>& names, std::size_t max = 20);

// A shape as far as it is known: dims < 0 are unknown.
struct ShapeInfo {
  bool has_shape = false;         // rank known
  std::vector<std::int64_t> dims;
  std::vector<std::string> text;  // per dim: value, symbol or "?"
  bool complete() const {
    return has_shape && std::all_of(dims.begin(), dims.end(), [](auto d) { return d >= 0; });
  }
};

ShapeInfo shapeOf(const ox::TypeProto_Tensor& tt);

// A tensor type whose element type and every dimension are known.
inline bool completeTensorType(const ox::TypeProto* t) {
  return t && t->has_tensor_type() && t->tensor_type().elem_type() != 0 &&
         shapeOf(t->tensor_type()).complete();
}

// ---- attributes -------------------------------------------------------------

const ox::AttributeProto* attrOf(const ox::NodeProto& n, const std::string& name);
// The INT attribute `name`, else `fallback`.
std::int64_t attrInt(const ox::NodeProto& n, const std::string& name, std::int64_t fallback);
// The INTS attribute `name`, else empty.
std::vector<std::int64_t> intsAttr(const ox::NodeProto& n, const std::string& name);

// Normalizes a possibly negative axis; nullopt when out of range.
std::optional<std::size_t> axisOf(std::int64_t axis, std::size_t rank);

// ---- traversal --------------------------------------------------------------

// Visits every tensor type inside `t`, descending into sequence, optional and
// map element types.
template <class F>
void forEachTensorType(ox::TypeProto* t, F& f, int depth = 0) {
  if (depth > kProtoRecursionLimit) return;
  if (t->has_tensor_type()) f(*t->mutable_tensor_type());
  if (t->has_sequence_type() && t->sequence_type().has_elem_type())
    forEachTensorType(t->mutable_sequence_type()->mutable_elem_type(), f, depth + 1);
  if (t->has_optional_type() && t->optional_type().has_elem_type())
    forEachTensorType(t->mutable_optional_type()->mutable_elem_type(), f, depth + 1);
  if (t->has_map_type() && t->map_type().has_value_type())
    forEachTensorType(t->mutable_map_type()->mutable_value_type(), f, depth + 1);
}

// Visits every tensor type of a graph and its bodies (inputs, outputs,
// value_info).
template <class F>
void forEachGraphTensorType(ox::GraphProto* g, F& f, int depth = 0) {
  if (depth > kMaxGraphDepth) return;
  for (auto* list : {g->mutable_input(), g->mutable_output(), g->mutable_value_info()})
    for (auto& vi : *list)
      if (vi.has_type()) forEachTensorType(vi.mutable_type(), f);
  for (auto& n : *g->mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) forEachGraphTensorType(a.mutable_g(), f, depth + 1);
      for (auto& sub : *a.mutable_graphs()) forEachGraphTensorType(&sub, f, depth + 1);
    }
}

}  // namespace memplan::onnx_import

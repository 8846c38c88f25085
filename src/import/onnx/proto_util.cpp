#include "import/onnx/proto_util.h"

namespace memplan::onnx_import {

std::string firstLine(std::string_view s) {
  const auto nl = s.find('\n');
  std::string line(s.substr(0, nl));
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

// ONNX 1.12 headers predate the float8/int4 codes, so they are matched by
// number.
DType mapDType(std::int32_t t) {
  switch (t) {
    case 1: return DType::Float32;
    case 2: return DType::UInt8;
    case 3: return DType::Int8;
    case 4: return DType::UInt16;
    case 5: return DType::Int16;
    case 6: return DType::Int32;
    case 7: return DType::Int64;
    case 8: return DType::String;
    case 9: return DType::Bool;
    case 10: return DType::Float16;
    case 11: return DType::Float64;
    case 12: return DType::UInt32;
    case 13: return DType::UInt64;
    case 14: return DType::Complex64;
    case 15: return DType::Complex128;
    case 16: return DType::BFloat16;
    case 17: return DType::Float8E4M3;  // FLOAT8E4M3FN
    case 18: return DType::Float8E4M3;  // FLOAT8E4M3FNUZ
    case 19: return DType::Float8E5M2;  // FLOAT8E5M2
    case 20: return DType::Float8E5M2;  // FLOAT8E5M2FNUZ
    case 21: return DType::UInt4;
    case 22: return DType::Int4;
    // FLOAT4E2M1 and FLOAT8E8M0 have no DType of their own; they are sized
    // by their bit width, which is all planning needs.
    case 23: return DType::UInt4;
    case 24: return DType::UInt8;
    default: return DType::Unknown;
  }
}

std::string opName(const ox::NodeProto& n) {
  return isDefaultDomain(n.domain()) ? n.op_type() : n.domain() + "::" + n.op_type();
}

std::string nodeLabel(const ox::NodeProto& n, std::size_t index) {
  return n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
}

std::string joinNames(const std::vector<std::string>& names, std::size_t max) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < max; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > max) s += ", ...";
  return s.empty() ? "(none)" : s;
}

ShapeInfo shapeOf(const ox::TypeProto_Tensor& tt) {
  ShapeInfo s;
  if (!tt.has_shape()) return s;
  s.has_shape = true;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0) {
      s.dims.push_back(d.dim_value());
      s.text.push_back(std::to_string(d.dim_value()));
    } else {
      s.dims.push_back(-1);
      s.text.push_back(d.has_dim_param() && !d.dim_param().empty() ? d.dim_param() : "?");
    }
  }
  return s;
}

const ox::AttributeProto* attrOf(const ox::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::int64_t attrInt(const ox::NodeProto& n, const std::string& name, std::int64_t fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name && a.type() == ox::AttributeProto::INT) return a.i();
  return fallback;
}

std::vector<std::int64_t> intsAttr(const ox::NodeProto& n, const std::string& name) {
  const auto* a = attrOf(n, name);
  if (!a) return {};
  return {a->ints().begin(), a->ints().end()};
}

std::optional<std::size_t> axisOf(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

}  // namespace memplan::onnx_import

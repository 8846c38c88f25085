// Element types: names and sizes.
#include <array>

#include "memplan/graph.h"

namespace memplan {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  unsigned bits;
};

constexpr std::array<DTypeInfo, 23> kDTypes{{
    {DType::Unknown, "unknown", 0},      {DType::Bool, "bool", 8},
    {DType::Int4, "int4", 4},            {DType::UInt4, "uint4", 4},
    {DType::Int8, "int8", 8},            {DType::UInt8, "uint8", 8},
    {DType::Int16, "int16", 16},         {DType::UInt16, "uint16", 16},
    {DType::Int32, "int32", 32},         {DType::UInt32, "uint32", 32},
    {DType::Int64, "int64", 64},         {DType::UInt64, "uint64", 64},
    {DType::Float8E4M3, "float8_e4m3", 8}, {DType::Float8E5M2, "float8_e5m2", 8},
    {DType::Float16, "float16", 16},     {DType::BFloat16, "bfloat16", 16},
    {DType::Float32, "float32", 32},     {DType::Float64, "float64", 64},
    {DType::Complex64, "complex64", 64}, {DType::Complex128, "complex128", 128},
    {DType::String, "string", 0},        {DType::Resource, "resource", 0},
    {DType::Variant, "variant", 0},
}};

const DTypeInfo& info(DType t) {
  for (const auto& i : kDTypes)
    if (i.type == t) return i;
  return kDTypes[0];
}

}  // namespace

unsigned dtypeBits(DType t) { return info(t).bits; }
std::string_view dtypeName(DType t) { return info(t).name; }

std::optional<DType> parseDType(std::string_view name) {
  for (const auto& i : kDTypes)
    if (i.name == name) return i.type;
  return std::nullopt;
}

std::optional<Bytes> denseBytes(const std::vector<std::int64_t>& shape, DType t) {
  Bytes elements = 1;
  for (std::int64_t d : shape) {
    if (d < 0) return std::nullopt;
    auto next = checkedMul(elements, static_cast<Bytes>(d));
    if (!next) return std::nullopt;
    elements = *next;
  }
  const unsigned bits = dtypeBits(t);
  if (bits == 0) return std::nullopt;
  auto total_bits = checkedMul(elements, bits);
  if (!total_bits) return std::nullopt;
  return (*total_bits + 7) / 8;
}

std::string_view nodeKindName(NodeKind k) {
  switch (k) {
    case NodeKind::Op: return "op";
    case NodeKind::Cond: return "cond";
    case NodeKind::While: return "while";
    case NodeKind::Map: return "map";
    case NodeKind::Scan: return "scan";
    case NodeKind::Call: return "call";
  }
  return "op";
}

}  // namespace memplan

// Small integer tensors: the values shape folding computes with (shapes,
// axes, pads, indices). ONNX data type codes, values widened to int64 and
// wrapped to the type's width. Element counts are bounded by
// kMaxFoldElements, so nothing here allocates more than that per tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "import/onnx/proto_util.h"

namespace memplan::onnx_import {

// Largest tensor folded (elements).
constexpr std::size_t kMaxFoldElements = 4096;

struct IntTensor {
  int elem = 7;                      // ONNX data type, integer or bool
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> v;       // row-major values
};

// ONNX integer and bool data types (uint8 ... uint64, bool).
bool isIntType(int t);
// Bytes per element of an integer type in raw_data.
unsigned intTypeBytes(int t);
// Wraps a value to the width and signedness of ONNX integer type `t`.
std::int64_t wrapTo(int t, std::int64_t v);

// Elements of a tensor of `dims`; nullopt when a dim is negative or the count
// exceeds kMaxFoldElements.
std::optional<std::size_t> elementCount(const std::vector<std::int64_t>& dims);

// The values of an integer TensorProto (raw or typed fields); nullopt when
// it is not an integer type, is external, too large, or inconsistent.
std::optional<IntTensor> fromProto(const ox::TensorProto& tp);
ox::TensorProto toProto(const IntTensor& t);

// Row-major strides (in elements) of `dims`.
std::vector<std::size_t> stridesOf(const std::vector<std::int64_t>& dims);

// Calls f(out_flat, index) for every multi-index of `dims`, row-major.
template <class F>
void forEachIndex(const std::vector<std::int64_t>& dims, F f) {
  auto n = elementCount(dims);
  if (!n || *n == 0) return;
  std::vector<std::int64_t> idx(dims.size(), 0);
  for (std::size_t flat = 0; flat < *n; ++flat) {
    f(flat, idx);
    for (std::size_t k = dims.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
}

// One output element from the inputs' elements at the same (broadcast)
// index; nullopt makes the whole result unknown (division by zero).
using ElementFn = std::optional<std::int64_t> (*)(const std::int64_t* args);

// numpy broadcasting of several inputs; the result has type `elem`.
std::optional<IntTensor> broadcast(const std::vector<const IntTensor*>& in, int elem,
                                   ElementFn f);

}  // namespace memplan::onnx_import

#include "import/onnx/int_tensor.h"

namespace memplan::onnx_import {

bool isIntType(int t) {
  return t == 2 || t == 3 || t == 4 || t == 5 || t == 6 || t == 7 || t == 9 || t == 12 ||
         t == 13;
}

unsigned intTypeBytes(int t) {
  switch (t) {
    case 2: case 3: case 9: return 1;
    case 4: case 5: return 2;
    case 6: case 12: return 4;
    default: return 8;
  }
}

std::int64_t wrapTo(int t, std::int64_t v) {
  switch (t) {
    case 2: return static_cast<std::uint8_t>(v);
    case 3: return static_cast<std::int8_t>(v);
    case 4: return static_cast<std::uint16_t>(v);
    case 5: return static_cast<std::int16_t>(v);
    case 6: return static_cast<std::int32_t>(v);
    case 9: return v != 0;
    case 12: return static_cast<std::uint32_t>(v);
    default: return v;
  }
}

std::optional<std::size_t> elementCount(const std::vector<std::int64_t>& dims) {
  std::size_t n = 1;
  for (auto d : dims) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > kMaxFoldElements / static_cast<std::size_t>(d)) return std::nullopt;
    n *= static_cast<std::size_t>(d);
  }
  return n;
}

std::optional<IntTensor> fromProto(const ox::TensorProto& tp) {
  if (!isIntType(tp.data_type()) || tp.data_location() == ox::TensorProto::EXTERNAL)
    return std::nullopt;
  IntTensor t;
  t.elem = tp.data_type();
  t.dims.assign(tp.dims().begin(), tp.dims().end());
  auto n = elementCount(t.dims);
  if (!n) return std::nullopt;
  if (tp.has_raw_data()) {
    const unsigned w = intTypeBytes(t.elem);
    const std::string& raw = tp.raw_data();
    if (raw.size() != *n * w) return std::nullopt;
    for (std::size_t i = 0; i < *n; ++i) {
      std::uint64_t u = 0;
      for (unsigned b = 0; b < w; ++b)
        u |= static_cast<std::uint64_t>(static_cast<unsigned char>(raw[i * w + b])) << (8 * b);
      t.v.push_back(wrapTo(t.elem, static_cast<std::int64_t>(u)));
    }
  } else if (t.elem == 7) {
    t.v.assign(tp.int64_data().begin(), tp.int64_data().end());
  } else if (t.elem == 12 || t.elem == 13) {
    for (auto u : tp.uint64_data()) t.v.push_back(wrapTo(t.elem, static_cast<std::int64_t>(u)));
  } else {
    for (auto x : tp.int32_data()) t.v.push_back(wrapTo(t.elem, x));
  }
  if (t.v.size() != *n) return std::nullopt;
  return t;
}

ox::TensorProto toProto(const IntTensor& t) {
  ox::TensorProto tp;
  tp.set_data_type(t.elem);
  for (auto d : t.dims) tp.add_dims(d);
  for (auto x : t.v) {
    if (t.elem == 7) tp.add_int64_data(x);
    else if (t.elem == 12 || t.elem == 13) tp.add_uint64_data(static_cast<std::uint64_t>(x));
    else tp.add_int32_data(static_cast<std::int32_t>(x));
  }
  return tp;
}

std::vector<std::size_t> stridesOf(const std::vector<std::int64_t>& dims) {
  std::vector<std::size_t> s(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * static_cast<std::size_t>(dims[i]);
  return s;
}

std::optional<IntTensor> broadcast(const std::vector<const IntTensor*>& in, int elem,
                                   ElementFn f) {
  std::size_t rank = 0;
  for (const auto* t : in) rank = std::max(rank, t->dims.size());
  IntTensor out;
  out.elem = elem;
  out.dims.assign(rank, 1);
  for (const auto* t : in)
    for (std::size_t k = 0; k < t->dims.size(); ++k) {
      auto& o = out.dims[rank - t->dims.size() + k];
      const auto d = t->dims[k];
      if (d == o || d == 1) continue;
      if (o != 1) return std::nullopt;
      o = d;
    }
  auto n = elementCount(out.dims);
  if (!n) return std::nullopt;
  // Per input, the stride of each output axis (0 where it is broadcast).
  std::vector<std::vector<std::size_t>> strides;
  for (const auto* t : in) {
    auto s = stridesOf(t->dims);
    std::vector<std::size_t> full(rank, 0);
    for (std::size_t k = 0; k < t->dims.size(); ++k)
      if (t->dims[k] != 1) full[rank - t->dims.size() + k] = s[k];
    strides.push_back(std::move(full));
  }
  out.v.resize(*n);
  std::vector<std::int64_t> args(in.size());
  bool ok = true;
  forEachIndex(out.dims, [&](std::size_t flat, const std::vector<std::int64_t>& idx) {
    for (std::size_t i = 0; i < in.size(); ++i) {
      std::size_t off = 0;
      for (std::size_t k = 0; k < rank; ++k)
        off += static_cast<std::size_t>(idx[k]) * strides[i][k];
      args[i] = in[i]->v[off];
    }
    auto r = f(args.data());
    if (!r) ok = false;
    else out.v[flat] = wrapTo(elem, *r);
  });
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace memplan::onnx_import

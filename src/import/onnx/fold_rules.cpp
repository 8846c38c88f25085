#include "import/onnx/fold_rules.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>

namespace memplan::onnx_import {

const IntTensor* FoldScope::value(const std::string& name) const {
  for (const FoldScope* s = this; s; s = s->outer) {
    auto it = s->values.find(name);
    if (it != s->values.end()) return &it->second;
    if (s->types.count(name)) return nullptr;  // defined here, not constant
  }
  return nullptr;
}

const ox::TypeProto* FoldScope::type(const std::string& name) const {
  for (const FoldScope* s = this; s; s = s->outer) {
    auto it = s->types.find(name);
    if (it != s->types.end()) return it->second;
  }
  return nullptr;
}

std::optional<std::vector<std::int64_t>> FoldScope::knownShape(const std::string& name) const {
  const auto* t = type(name);
  if (!t || !t->has_tensor_type()) return std::nullopt;
  ShapeInfo info = shapeOf(t->tensor_type());
  if (!info.complete()) return std::nullopt;
  return info.dims;
}

namespace {

using Result = std::optional<IntTensor>;

// Most rules read input 0's value; they are written against it.
template <Result (*F)(const FoldArgs&, const IntTensor&)>
Result withX(const FoldArgs& a) {
  const IntTensor* x = a.input(0);
  if (!x) return std::nullopt;
  return F(a, *x);
}

// ---- sources: values from shapes and attributes ------------------------------

Result shapeRule(const FoldArgs& a) {
  const ox::NodeProto& n = a.node;
  if (n.input_size() < 1) return std::nullopt;
  auto shape = a.scope.knownShape(n.input(0));
  if (!shape) return std::nullopt;
  const auto r = static_cast<std::int64_t>(shape->size());
  std::int64_t start = attrInt(n, "start", 0), end = attrInt(n, "end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<std::int64_t>(start, 0, r);
  end = std::clamp<std::int64_t>(end, start, r);
  return IntTensor{7, {end - start}, {shape->begin() + start, shape->begin() + end}};
}

Result sizeRule(const FoldArgs& a) {
  const ox::NodeProto& n = a.node;
  if (n.input_size() < 1) return std::nullopt;
  auto shape = a.scope.knownShape(n.input(0));
  if (!shape) return std::nullopt;
  std::uint64_t p = 1;
  for (auto d : *shape) {
    auto next = checkedMul(p, static_cast<std::uint64_t>(d));
    if (!next) return std::nullopt;
    p = *next;
  }
  return IntTensor{7, {}, {static_cast<std::int64_t>(p)}};
}

Result constantOfShapeRule(const FoldArgs& a) {
  const IntTensor* dims = a.input(0);
  if (!dims || dims->dims.size() != 1) return std::nullopt;
  IntTensor t{7, dims->v, {}};
  std::int64_t fill = 0;
  if (const auto* v = attrOf(a.node, "value"); v && v->has_t()) {
    auto value = fromProto(v->t());
    if (!value || value->v.size() != 1) return std::nullopt;
    t.elem = value->elem;
    fill = value->v[0];
  } else {
    return std::nullopt;  // the default is float 0
  }
  auto count = elementCount(t.dims);
  if (!count) return std::nullopt;
  t.v.assign(*count, fill);
  return t;
}

Result rangeRule(const FoldArgs& a) {
  if (!a.all_known || a.in.size() != 3) return std::nullopt;
  for (const auto* t : a.in)
    if (t->v.size() != 1) return std::nullopt;
  const __int128 start = a.in[0]->v[0], limit = a.in[1]->v[0], delta = a.in[2]->v[0];
  if (delta == 0) return std::nullopt;
  const __int128 diff = limit - start;
  __int128 count = 0;  // ceil(diff / delta) when positive
  if (diff != 0 && (diff > 0) == (delta > 0)) count = (diff + delta - (delta > 0 ? 1 : -1)) / delta;
  if (count > static_cast<__int128>(kMaxFoldElements)) return std::nullopt;
  IntTensor t{a.in[0]->elem, {}, {}};
  for (__int128 i = 0; i < count; ++i)
    t.v.push_back(wrapTo(t.elem, static_cast<std::int64_t>(start + i * delta)));
  t.dims = {static_cast<std::int64_t>(t.v.size())};
  return t;
}

// ---- elementwise ---------------------------------------------------------------

Result identityRule(const FoldArgs&, const IntTensor& x) { return x; }

Result castRule(const FoldArgs& a, const IntTensor& x) {
  const int to = static_cast<int>(attrInt(a.node, "to", 0));
  if (!isIntType(to)) return std::nullopt;
  IntTensor t = x;
  t.elem = to;
  for (auto& v : t.v) v = wrapTo(to, v);
  return t;
}

// Two's-complement negation without signed overflow.
std::int64_t negate(std::int64_t v) {
  return static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(v));
}

Result negRule(const FoldArgs&, const IntTensor& x) {
  IntTensor t = x;
  for (auto& v : t.v) v = wrapTo(t.elem, negate(v));
  return t;
}

Result absRule(const FoldArgs&, const IntTensor& x) {
  IntTensor t = x;
  for (auto& v : t.v) v = wrapTo(t.elem, v < 0 ? negate(v) : v);
  return t;
}

Result notRule(const FoldArgs&, const IntTensor& x) {
  IntTensor t = x;
  for (auto& v : t.v) v = !v;
  return t;
}

// Integer arithmetic wraps (as the runtime's does), computed unsigned.
std::uint64_t u(std::int64_t a) { return static_cast<std::uint64_t>(a); }
std::optional<std::int64_t> add(const std::int64_t* a) {
  return static_cast<std::int64_t>(u(a[0]) + u(a[1]));
}
std::optional<std::int64_t> sub(const std::int64_t* a) {
  return static_cast<std::int64_t>(u(a[0]) - u(a[1]));
}
std::optional<std::int64_t> mul(const std::int64_t* a) {
  return static_cast<std::int64_t>(u(a[0]) * u(a[1]));
}
std::optional<std::int64_t> div(const std::int64_t* a) {
  if (a[1] == 0 || (a[1] == -1 && a[0] == std::numeric_limits<std::int64_t>::min()))
    return std::nullopt;
  return a[0] / a[1];
}
std::optional<std::int64_t> equal(const std::int64_t* a) { return a[0] == a[1]; }
std::optional<std::int64_t> less(const std::int64_t* a) { return a[0] < a[1]; }
std::optional<std::int64_t> greater(const std::int64_t* a) { return a[0] > a[1]; }
std::optional<std::int64_t> lessOrEqual(const std::int64_t* a) { return a[0] <= a[1]; }
std::optional<std::int64_t> greaterOrEqual(const std::int64_t* a) { return a[0] >= a[1]; }
std::optional<std::int64_t> logicalAnd(const std::int64_t* a) { return a[0] && a[1]; }
std::optional<std::int64_t> logicalOr(const std::int64_t* a) { return a[0] || a[1]; }
std::optional<std::int64_t> max(const std::int64_t* a) { return std::max(a[0], a[1]); }
std::optional<std::int64_t> min(const std::int64_t* a) { return std::min(a[0], a[1]); }
std::optional<std::int64_t> where(const std::int64_t* a) { return a[0] ? a[1] : a[2]; }

// The element type of an elementwise result.
enum class ResultType { LikeInput0, Bool, LikeInput1 };

// Broadcasts `kMinInputs`..`kMaxInputs` known inputs through F.
template <ElementFn F, ResultType R, std::size_t kMinInputs = 2,
          std::size_t kMaxInputs = std::numeric_limits<std::size_t>::max()>
Result elementwise(const FoldArgs& a) {
  if (!a.all_known || a.in.size() < kMinInputs || a.in.size() > kMaxInputs) return std::nullopt;
  const int elem = R == ResultType::Bool         ? 9
                   : R == ResultType::LikeInput1 ? a.in[1]->elem
                                                 : a.in[0]->elem;
  return broadcast(a.in, elem, F);
}

// ---- layout -------------------------------------------------------------------

Result reshapeRule(const FoldArgs& a, const IntTensor& x) {
  const IntTensor* shape = a.input(1);
  if (!shape) return std::nullopt;
  const bool allowzero = attrInt(a.node, "allowzero", 0) != 0;
  std::vector<std::int64_t> dims = shape->v;
  int infer = -1;
  __int128 known = 1;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 0 && !allowzero) {
      if (k >= x.dims.size()) return std::nullopt;
      dims[k] = x.dims[k];
    }
    if (dims[k] == -1) {
      if (infer >= 0) return std::nullopt;
      infer = static_cast<int>(k);
    } else if (dims[k] < 0) {
      return std::nullopt;
    } else {
      known *= dims[k];
      if (known > static_cast<__int128>(kMaxBytes)) return std::nullopt;
    }
  }
  const auto total = static_cast<std::int64_t>(x.v.size());
  if (infer >= 0) {
    if (known == 0 || total % known) return std::nullopt;
    dims[static_cast<std::size_t>(infer)] = static_cast<std::int64_t>(total / known);
  }
  auto count = elementCount(dims);
  if (!count || *count != x.v.size()) return std::nullopt;
  return IntTensor{x.elem, dims, x.v};
}

Result flattenRule(const FoldArgs& a, const IntTensor& x) {
  auto axis = axisOf(attrInt(a.node, "axis", 1), x.dims.size() + 1);
  if (!axis) return std::nullopt;
  __int128 outer = 1, inner = 1;  // dims of a tensor of <= kMaxFoldElements
  for (std::size_t k = 0; k < x.dims.size(); ++k) {
    if (x.dims[k] == 0) return std::nullopt;
    (k < *axis ? outer : inner) *= x.dims[k];
  }
  return IntTensor{x.elem, {static_cast<std::int64_t>(outer), static_cast<std::int64_t>(inner)},
                   x.v};
}

// Axes from the attribute (older opsets) or input 1; nullopt when input 1
// is given but not known.
std::optional<std::vector<std::int64_t>> axesOf(const FoldArgs& a) {
  const ox::NodeProto& n = a.node;
  if (attrOf(n, "axes")) return intsAttr(n, "axes");
  if (const IntTensor* axes = a.input(1)) return axes->v;
  if (n.input_size() > 1 && !n.input(1).empty()) return std::nullopt;
  return std::vector<std::int64_t>{};
}

Result unsqueezeRule(const FoldArgs& a, const IntTensor& x) {
  const auto axes = axesOf(a);
  if (!axes) return std::nullopt;
  IntTensor t = x;
  const std::size_t rank = x.dims.size() + axes->size();
  std::vector<bool> is_new(rank, false);
  for (auto axis : *axes) {
    auto ax = axisOf(axis, rank);
    if (!ax || is_new[*ax]) return std::nullopt;
    is_new[*ax] = true;
  }
  t.dims.clear();
  std::size_t src = 0;
  for (std::size_t k = 0; k < rank; ++k) t.dims.push_back(is_new[k] ? 1 : x.dims[src++]);
  return t;
}

Result squeezeRule(const FoldArgs& a, const IntTensor& x) {
  const auto axes = axesOf(a);
  if (!axes) return std::nullopt;
  IntTensor t = x;
  std::vector<bool> drop(x.dims.size(), false);
  for (std::size_t k = 0; k < x.dims.size(); ++k) drop[k] = axes->empty() && x.dims[k] == 1;
  for (auto axis : *axes) {
    auto ax = axisOf(axis, x.dims.size());
    if (!ax || x.dims[*ax] != 1) return std::nullopt;
    drop[*ax] = true;
  }
  t.dims.clear();
  for (std::size_t k = 0; k < x.dims.size(); ++k)
    if (!drop[k]) t.dims.push_back(x.dims[k]);
  return t;
}

Result concatRule(const FoldArgs& a, const IntTensor& x) {
  if (!a.all_known) return std::nullopt;
  auto axis = axisOf(attrInt(a.node, "axis", 0), x.dims.size());
  if (!axis) return std::nullopt;
  IntTensor t{x.elem, x.dims, {}};
  t.dims[*axis] = 0;
  for (const auto* p : a.in) {
    if (p->dims.size() != x.dims.size() || p->elem != x.elem) return std::nullopt;
    for (std::size_t k = 0; k < x.dims.size(); ++k)
      if (k != *axis && p->dims[k] != x.dims[k]) return std::nullopt;
    t.dims[*axis] += p->dims[*axis];
  }
  auto count = elementCount(t.dims);
  if (!count) return std::nullopt;
  // Outer blocks before the axis, each the concatenation of the inputs' rows.
  std::size_t outer = 1;
  for (std::size_t k = 0; k < *axis; ++k) outer *= static_cast<std::size_t>(x.dims[k]);
  for (std::size_t o = 0; o < outer; ++o)
    for (const auto* p : a.in) {
      const std::size_t block = outer ? p->v.size() / outer : 0;
      t.v.insert(t.v.end(), p->v.begin() + static_cast<std::ptrdiff_t>(o * block),
                 p->v.begin() + static_cast<std::ptrdiff_t>((o + 1) * block));
    }
  if (t.v.size() != *count) return std::nullopt;
  return t;
}

Result gatherRule(const FoldArgs& a, const IntTensor& x) {
  const IntTensor* indices = a.input(1);
  if (!indices) return std::nullopt;
  auto axis = axisOf(attrInt(a.node, "axis", 0), x.dims.size());
  if (!axis) return std::nullopt;
  const IntTensor& idx = *indices;
  IntTensor t{x.elem, {}, {}};
  t.dims.assign(x.dims.begin(), x.dims.begin() + static_cast<std::ptrdiff_t>(*axis));
  t.dims.insert(t.dims.end(), idx.dims.begin(), idx.dims.end());
  t.dims.insert(t.dims.end(), x.dims.begin() + static_cast<std::ptrdiff_t>(*axis) + 1,
                x.dims.end());
  auto count = elementCount(t.dims);
  if (!count) return std::nullopt;
  const auto xs = stridesOf(x.dims);
  const std::int64_t extent = x.dims[*axis];
  bool ok = true;
  t.v.resize(*count);
  const std::size_t q = idx.dims.size();
  forEachIndex(t.dims, [&](std::size_t flat, const std::vector<std::int64_t>& oi) {
    std::size_t ii = 0;
    for (std::size_t k = 0; k < q; ++k)
      ii = ii * static_cast<std::size_t>(idx.dims[k]) + static_cast<std::size_t>(oi[*axis + k]);
    std::int64_t j = idx.v[ii];
    if (j < 0) j += extent;
    if (j < 0 || j >= extent) {
      ok = false;
      return;
    }
    std::size_t off = 0;
    for (std::size_t k = 0; k < x.dims.size(); ++k) {
      const std::int64_t c = k < *axis ? oi[k] : k == *axis ? j : oi[k + q - 1];
      off += static_cast<std::size_t>(c) * xs[k];
    }
    t.v[flat] = x.v[off];
  });
  if (!ok) return std::nullopt;
  return t;
}

Result sliceRule(const FoldArgs& a, const IntTensor& x) {
  const ox::NodeProto& n = a.node;
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (attrOf(n, "starts")) {  // opset < 10
    starts = intsAttr(n, "starts");
    ends = intsAttr(n, "ends");
    axes = intsAttr(n, "axes");
  } else {
    if (!a.input(1) || !a.input(2)) return std::nullopt;
    if (n.input_size() > 3 && !n.input(3).empty() && !a.input(3)) return std::nullopt;
    if (n.input_size() > 4 && !n.input(4).empty() && !a.input(4)) return std::nullopt;
    starts = a.in[1]->v;
    ends = a.in[2]->v;
    if (a.input(3)) axes = a.in[3]->v;
    if (a.input(4)) steps = a.in[4]->v;
  }
  if (axes.empty())
    for (std::size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return std::nullopt;
  const std::size_t r = x.dims.size();
  std::vector<std::int64_t> b(r, 0), st(r, 1), len = x.dims;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    auto ax = axisOf(axes[i], r);
    if (!ax || steps[i] == 0) return std::nullopt;
    const std::int64_t d = x.dims[*ax];
    const __int128 step = steps[i];
    auto clampIdx = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) {
      if (v < 0) v += d;
      return std::clamp(v, lo, hi);
    };
    std::int64_t s0, e0;
    if (step > 0) {
      s0 = clampIdx(starts[i], 0, d);
      e0 = clampIdx(ends[i], 0, d);
      len[*ax] = e0 > s0 ? static_cast<std::int64_t>((e0 - s0 + step - 1) / step) : 0;
    } else {
      s0 = clampIdx(starts[i], -1, d - 1);
      e0 = clampIdx(ends[i], -1, d - 1);
      if (ends[i] < -d) e0 = -1;
      len[*ax] = s0 > e0 ? static_cast<std::int64_t>((s0 - e0 - step - 1) / -step) : 0;
    }
    b[*ax] = s0;
    st[*ax] = steps[i];
  }
  IntTensor t{x.elem, len, {}};
  auto count = elementCount(len);
  if (!count) return std::nullopt;
  t.v.resize(*count);
  const auto xs = stridesOf(x.dims);
  forEachIndex(len, [&](std::size_t flat, const std::vector<std::int64_t>& oi) {
    std::size_t off = 0;
    for (std::size_t k = 0; k < r; ++k)
      off += static_cast<std::size_t>(b[k] + oi[k] * st[k]) * xs[k];
    t.v[flat] = x.v[off];
  });
  return t;
}

Result transposeRule(const FoldArgs& a, const IntTensor& x) {
  const std::size_t r = x.dims.size();
  std::vector<std::int64_t> perm = intsAttr(a.node, "perm");
  if (perm.empty())
    for (std::size_t k = 0; k < r; ++k) perm.push_back(static_cast<std::int64_t>(r - 1 - k));
  if (perm.size() != r) return std::nullopt;
  std::vector<bool> seen(r, false);
  for (auto p : perm) {
    if (p < 0 || p >= static_cast<std::int64_t>(r) || seen[static_cast<std::size_t>(p)])
      return std::nullopt;
    seen[static_cast<std::size_t>(p)] = true;
  }
  IntTensor t{x.elem, {}, std::vector<std::int64_t>(x.v.size())};
  for (auto p : perm) t.dims.push_back(x.dims[static_cast<std::size_t>(p)]);
  const auto xs = stridesOf(x.dims);
  forEachIndex(t.dims, [&](std::size_t flat, const std::vector<std::int64_t>& oi) {
    std::size_t off = 0;
    for (std::size_t k = 0; k < r; ++k)
      off += static_cast<std::size_t>(oi[k]) * xs[static_cast<std::size_t>(perm[k])];
    t.v[flat] = x.v[off];
  });
  return t;
}

// ---- the table ----------------------------------------------------------------

struct Entry {
  std::string_view op;
  FoldRule rule;
};

// Sorted by op name (checked below) for a binary search.
constexpr Entry kRules[] = {
    {"Abs", withX<absRule>},
    {"Add", elementwise<add, ResultType::LikeInput0>},
    {"And", elementwise<logicalAnd, ResultType::Bool>},
    {"Cast", withX<castRule>},
    {"Concat", withX<concatRule>},
    {"ConstantOfShape", constantOfShapeRule},
    {"Div", elementwise<div, ResultType::LikeInput0>},
    {"Equal", elementwise<equal, ResultType::Bool>},
    {"Flatten", withX<flattenRule>},
    {"Gather", withX<gatherRule>},
    {"Greater", elementwise<greater, ResultType::Bool>},
    {"GreaterOrEqual", elementwise<greaterOrEqual, ResultType::Bool>},
    {"Identity", withX<identityRule>},
    {"Less", elementwise<less, ResultType::Bool>},
    {"LessOrEqual", elementwise<lessOrEqual, ResultType::Bool>},
    {"Max", elementwise<max, ResultType::LikeInput0, 2, 2>},
    {"Min", elementwise<min, ResultType::LikeInput0, 2, 2>},
    {"Mul", elementwise<mul, ResultType::LikeInput0>},
    {"Neg", withX<negRule>},
    {"Not", withX<notRule>},
    {"Or", elementwise<logicalOr, ResultType::Bool>},
    {"Range", rangeRule},
    {"Reshape", withX<reshapeRule>},
    {"Shape", shapeRule},
    {"Size", sizeRule},
    {"Slice", withX<sliceRule>},
    {"Squeeze", withX<squeezeRule>},
    {"Sub", elementwise<sub, ResultType::LikeInput0>},
    {"Transpose", withX<transposeRule>},
    {"Unsqueeze", withX<unsqueezeRule>},
    {"Where", elementwise<where, ResultType::LikeInput1, 3, 3>},
};
static_assert(std::ranges::is_sorted(kRules, std::less<>{}, &Entry::op),
              "kRules must be sorted by op name");

}  // namespace

FoldRule foldRule(std::string_view op_type) {
  const auto* it = std::ranges::lower_bound(kRules, op_type, std::less<>{}, &Entry::op);
  return it != std::end(kRules) && it->op == op_type ? it->rule : nullptr;
}

std::optional<IntTensor> foldNode(FoldRule rule, const ox::NodeProto& n, const FoldScope& s) {
  FoldArgs args{n, s, {}, true};
  args.in.reserve(static_cast<std::size_t>(n.input_size()));
  for (const auto& name : n.input()) {
    const IntTensor* t = name.empty() ? nullptr : s.value(name);
    if (!t) args.all_known = false;
    args.in.push_back(t);
  }
  return rule(args);
}

}  // namespace memplan::onnx_import

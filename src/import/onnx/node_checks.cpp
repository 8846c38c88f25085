// Refuses nodes whose inferred outputs they cannot produce (node_checks.h).
#include "import/onnx/node_checks.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "import/onnx/fold_rules.h"
#include "import/onnx/int_tensor.h"

namespace memplan::onnx_import {
namespace {

// "[4,3]".
std::string dimsText(const std::vector<std::int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ","));
}

// Elements of a known shape; nullopt when the count does not fit 64 bits
// (such a tensor is refused by the size check anyway).
std::optional<std::uint64_t> elementsIn(const std::vector<std::int64_t>& dims) {
  unsigned __int128 n = 1;
  for (auto d : dims) {
    if (d == 0) return 0;
    n *= static_cast<std::uint64_t>(d);
    if (n > UINT64_MAX) {
      for (auto z : dims)
        if (z == 0) return 0;
      return std::nullopt;
    }
  }
  return static_cast<std::uint64_t>(n);
}

// A graph level's integer values and types (FoldScope) and its float and
// double scalars, which Range also takes.
struct CheckScope {
  struct Real {
    double value;
    unsigned bytes;  // of the element type
  };
  const CheckScope* outer = nullptr;
  FoldScope fold;
  std::unordered_map<std::string, Real> reals;

  std::optional<Real> real(const std::string& name) const {
    for (const CheckScope* s = this; s; s = s->outer) {
      if (const auto it = s->reals.find(name); it != s->reals.end()) return it->second;
      if (s->fold.types.count(name)) return std::nullopt;  // defined here, not a constant
    }
    return std::nullopt;
  }
};

// The value of a float or double tensor of one element.
std::optional<CheckScope::Real> realScalar(const ox::TensorProto& t) {
  for (auto d : t.dims())
    if (d != 1) return std::nullopt;
  if (t.data_location() == ox::TensorProto::EXTERNAL) return std::nullopt;
  const std::string& raw = t.raw_data();
  if (t.data_type() == ox::TensorProto::FLOAT) {
    float f = 0;
    if (t.float_data_size() == 1) return CheckScope::Real{t.float_data(0), 4};
    if (raw.size() != sizeof f) return std::nullopt;
    std::memcpy(&f, raw.data(), sizeof f);
    return CheckScope::Real{f, 4};
  }
  if (t.data_type() == ox::TensorProto::DOUBLE) {
    double d = 0;
    if (t.double_data_size() == 1) return CheckScope::Real{t.double_data(0), 8};
    if (raw.size() != sizeof d) return std::nullopt;
    std::memcpy(&d, raw.data(), sizeof d);
    return CheckScope::Real{d, 8};
  }
  return std::nullopt;
}

// Range over floats: the count ceil((limit - start) / delta) depends on the
// runtime's rounding, so only what no rounding can save is refused.
std::string realRangeProblem(const ox::NodeProto& n, const CheckScope& s) {
  long double v[3];
  unsigned bytes = 0;
  for (int k = 0; k < 3; ++k) {
    const auto r = s.real(n.input(k));
    if (!r) return "";
    v[k] = r->value;
    bytes = r->bytes;
  }
  if (!std::isfinite(v[0]) || !std::isfinite(v[1]) || !std::isfinite(v[2]))
    return "start, limit and delta must be finite";
  if (v[2] == 0) return "delta is 0: the output would never end";
  const long double count = std::ceil((v[1] - v[0]) / v[2]);
  if (count > 0 && count * bytes > static_cast<long double>(kMaxBytes))
    return fmt::format("output '{}' of {:.3g} elements: size overflows", n.output(0),
                       static_cast<double>(count));
  return "";
}

// Range(start, limit, delta) over integers holds max(ceil((limit - start) /
// delta), 0) elements (ONNX's definition). Only checked where all three are
// known scalars.
std::string rangeProblem(const ox::NodeProto& n, const CheckScope& scope) {
  if (n.input_size() != 3 || n.output_size() < 1 || n.output(0).empty()) return "";
  const FoldScope& s = scope.fold;
  const IntTensor* in[3];
  for (int k = 0; k < 3; ++k) {
    in[k] = n.input(k).empty() ? nullptr : s.value(n.input(k));
    if (!in[k] || in[k]->v.size() != 1) return realRangeProblem(n, scope);
  }
  const __int128 start = in[0]->v[0], limit = in[1]->v[0], delta = in[2]->v[0];
  if (delta == 0) return "delta is 0: the output would never end";
  const __int128 diff = limit - start;
  __int128 count = 0;
  if (diff != 0 && (diff > 0) == (delta > 0)) count = (diff + delta - (delta > 0 ? 1 : -1)) / delta;
  const auto elements = static_cast<std::uint64_t>(count);  // at most 2^64 - 1
  if (count * intTypeBytes(in[0]->elem) > static_cast<__int128>(kMaxBytes))
    return fmt::format("output '{}' of {} elements: size overflows", n.output(0), elements);
  const auto inferred = s.knownShape(n.output(0));
  if (inferred && (inferred->size() != 1 || static_cast<std::uint64_t>((*inferred)[0]) != elements))
    return fmt::format("output '{}' is typed {} but Range produces {} elements", n.output(0),
                       dimsText(*inferred), elements);
  return "";
}

// Reshape keeps every element: its output holds as many as its input.
std::string reshapeProblem(const ox::NodeProto& n, const FoldScope& s) {
  if (n.input_size() < 1 || n.output_size() < 1 || n.output(0).empty()) return "";
  const auto in = s.knownShape(n.input(0)), out = s.knownShape(n.output(0));
  if (!in || !out) return "";
  const auto a = elementsIn(*in), b = elementsIn(*out);
  if (!a || !b || *a == *b) return "";
  return fmt::format("output '{}' {} holds {} elements, its input '{}' {} holds {}: element "
                     "count mismatch",
                     n.output(0), dimsText(*out), *b, n.input(0), dimsText(*in), *a);
}

class InferredShapeChecker {
 public:
  explicit InferredShapeChecker(const std::set<const ox::GraphProto*>& dead) : dead_(dead) {}

  std::string problem;

  void graph(const ox::GraphProto& g, const CheckScope* outer, int depth,
             const std::string& in_graph) {
    if (depth > kMaxGraphDepth || !problem.empty()) return;
    CheckScope scope;
    scope.outer = outer;
    scope.fold.outer = outer ? &outer->fold : nullptr;
    for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
      for (const auto& vi : *list)
        if (vi.has_type()) scope.fold.types.emplace(vi.name(), &vi.type());
    for (const auto& init : g.initializer()) constant(scope, init.name(), init);
    for (int i = 0; i < g.node_size() && problem.empty(); ++i) node(g.node(i), i, scope, depth, in_graph);
  }

 private:
  static void constant(CheckScope& scope, const std::string& name, const ox::TensorProto& t) {
    scope.fold.types.emplace(name, nullptr);
    if (auto v = fromProto(t)) scope.fold.values[name] = std::move(*v);
    if (auto r = realScalar(t)) scope.reals[name] = *r;
  }

  void node(const ox::NodeProto& n, int index, CheckScope& scope, int depth,
            const std::string& in_graph) {
    for (const auto& a : n.attribute()) {
      if (a.has_g()) body(a.g(), scope, depth);
      for (const auto& sub : a.graphs()) body(sub, scope, depth);
    }
    for (const auto& o : n.output()) scope.fold.types.emplace(o, nullptr);
    if (!isDefaultDomain(n.domain()) || n.output_size() < 1) return;
    if (n.op_type() == "Constant") {
      if (const auto* a = attrOf(n, "value"); a && a->has_t()) constant(scope, n.output(0), a->t());
      return;
    }
    std::string why;
    if (n.op_type() == "Range") why = rangeProblem(n, scope);
    if (n.op_type() == "Reshape") why = reshapeProblem(n, scope.fold);
    if (!why.empty())
      problem = fmt::format("node '{}' ({}){}: {}", nodeLabel(n, static_cast<std::size_t>(index)),
                            opName(n), in_graph, why);
  }

  void body(const ox::GraphProto& b, const CheckScope& scope, int depth) {
    if (dead_.count(&b) || !problem.empty()) return;
    graph(b, &scope, depth + 1, b.name().empty() ? "" : " in graph '" + b.name() + "'");
  }

  const std::set<const ox::GraphProto*>& dead_;
};

}  // namespace

std::string checkInferredShapes(const ox::GraphProto& g,
                                const std::set<const ox::GraphProto*>& dead) {
  InferredShapeChecker checker(dead);
  checker.graph(g, nullptr, 0, "");
  return checker.problem;
}

}  // namespace memplan::onnx_import

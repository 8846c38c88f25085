// A read program as memplan's structures: one method as a model of its own
// (the plan the file carries is plan/pte_embedded.cpp: it needs the
// lifetimes).
#include <algorithm>

#include <fmt/format.h>

#include "memplan/pte.h"

namespace memplan {
namespace {

// First tensor of method `m` (tensors are stored method by method).
TensorId methodBase(const PteProgram& p, GraphId m) {
  const auto it = std::lower_bound(p.tensors.begin(), p.tensors.end(), m,
                                   [](const PteTensor& t, GraphId g) { return t.method < g; });
  return static_cast<TensorId>(it - p.tensors.begin());
}

}  // namespace

Model methodModel(const PteProgram& p, GraphId m) {
  if (m < 0 || static_cast<std::size_t>(m) >= p.model.graphs.size())
    throw InputError(fmt::format("{}: no method {}", p.source, m));
  const TensorId base = methodBase(p, m);
  const TensorId end = methodBase(p, m + 1);
  Model out;
  out.name = p.model.graphs.size() == 1 ? p.source : p.source + ":" + p.model.graphs[m].name;
  out.tensors.assign(p.model.tensors.begin() + base, p.model.tensors.begin() + end);
  for (Tensor& t : out.tensors) {
    t.graph = 0;
    if (t.alias_of != kNone) t.alias_of -= base;
  }
  Graph g = p.model.graphs[m];
  const auto shift = [&](std::vector<TensorId>& v) {
    for (TensorId& t : v) t -= base;
  };
  shift(g.inputs);
  shift(g.outputs);
  for (Node& n : g.nodes) {
    shift(n.inputs);
    shift(n.outputs);
  }
  out.graphs.push_back(std::move(g));
  return out;
}

}  // namespace memplan

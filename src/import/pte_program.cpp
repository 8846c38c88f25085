// A read program as memplan's structures: one method as a model of its own,
// and the plan the file carries as a Plan.
#include <algorithm>
#include <map>

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

Plan embeddedPlan(const PteProgram& p, Bytes alignment) {
  Plan plan;
  plan.algorithm = "original";
  plan.options.alignment = 1;  // the file's own bytes: checked exactly
  for (GraphId g = 0; g < static_cast<GraphId>(p.methods.size()); ++g) {
    const PteMethod& method = p.methods[static_cast<std::size_t>(g)];
    GraphPlan gp;
    gp.graph = g;
    gp.specs = collectSpecs(p.model, g, plan.options);
    gp.bufsizes = method.buffer_sizes;
    if (gp.bufsizes.empty()) gp.bufsizes.push_back(0);
    gp.bufsizes[0] = 0;
    gp.pool_devices.assign(gp.bufsizes.size(), Device{});
    std::map<MemId, PoolProblem> problems;
    std::map<MemId, std::size_t> counts;
    for (const Spec& s : gp.specs.specs) {
      if (!s.planned) continue;
      const PteTensor& t = p.tensors[static_cast<std::size_t>(s.tensor)];
      if (!t.allocation)  // planned tensors are exactly those with allocation_info
        throw PlanError(fmt::format("{}: method '{}': '{}' is planned but has no allocation_info",
                                    p.source, method.name, s.name));
      gp.allocations.push_back({s.id, t.allocation->mem_id, 0, t.allocation->offset, s.nbytes});
      Buffer b;
      b.id = static_cast<BufferId>(problems[t.allocation->mem_id].buffers.size());
      b.start = s.first;
      b.end = s.last + 1;
      b.size = alignUp(s.nbytes, std::max<Bytes>(alignment, 1)).value_or(kMaxBytes);
      b.nbytes = s.nbytes;
      b.gaps = s.gaps;  // branches not taken together (pte_chain.cpp step 6)
      problems[t.allocation->mem_id].buffers.push_back(b);
    }
    for (auto& [m, problem] : problems) {
      PoolInfo info;
      info.mem_id = m;
      info.size = static_cast<std::size_t>(m) < gp.bufsizes.size() ? gp.bufsizes[static_cast<std::size_t>(m)] : 0;
      info.lower_bound = lowerBound(problem);
      for (const Buffer& b : problem.buffers) info.naive_size = checkedAdd(info.naive_size, b.size).value_or(kMaxBytes);
      info.buffers = problem.buffers.size();
      info.algorithm = "original";
      info.proven_optimal = info.size == info.lower_bound;
      gp.pools.push_back(info);
    }
    plan.graphs.push_back(std::move(gp));
  }
  return plan;
}

}  // namespace memplan

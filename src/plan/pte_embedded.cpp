// The plan an ExecuTorch program carries (its allocation_info), as a Plan:
// memplan/pte.h, embeddedPlan. A planning step, not a reader: each method's
// specs are recomputed (the lifetime stage) and the file's offsets placed on
// them.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "memplan/pte.h"

namespace memplan {

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

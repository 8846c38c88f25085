// The "exact" algorithm: auto's plan (every stage, so never larger than
// auto or anything auto contains) gives an upper bound, then the exact
// search (exact_search.h) lowers it toward the lower bound with a node
// budget of its own, scaled by AlgorithmParams::effort (deterministic),
// and the optional time cap. The shared skeleton (pool::solveOffsets)
// merges the in-place groups, checks the pins and fills the solution.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "algorithms/auto.h"
#include "algorithms/exact_search.h"
#include "algorithms/pool_util.h"
#include "algorithms/stop.h"
#include "memplan/algorithm.h"

namespace memplan {
namespace {

class ExactAlgorithm : public Algorithm {
 public:
  const AlgorithmInfo& info() const override {
    static const AlgorithmInfo kInfo{
        .name = "exact",
        .summary = "branch-and-bound search from auto's plan toward the lower bound",
        .honours_gaps = true,
        .honours_hints = true};
    return kInfo;
  }
  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams& params) const override {
    AlgorithmParams hp = params;
    hp.progress = nullptr;
    const PoolSolution start = makeAutoAlgorithm(AutoParams{})->solve(problem, hp);
    if (!start.stopped.empty()) return relabel(start);
    StopWatch watch(params.time_limit_seconds, params.stop);
    bool stopped = false;
    PoolSolution s = pool::solveOffsets(problem, [&](const pool::MergedProblem& m,
                                                     const pool::Bounds& bounds) {
      std::vector<Offset> incumbent(m.members.size());
      for (std::size_t g = 0; g < incumbent.size(); ++g)
        incumbent[g] = start.offsets[m.members[g].front()];
      exact::ExactParams ep;
      const double scaled = std::max(0.0, params.effort) * static_cast<double>(ep.node_limit);
      ep.node_limit = static_cast<std::uint64_t>(std::min(scaled, 1e15));
      ep.time_limit_seconds = params.time_limit_seconds;
      ep.stop = params.stop;
      exact::ExactResult r = exact::minimizeHeight(m.problem, incumbent, bounds.target, ep);
      stopped = r.stopped;
      if (r.height > pool::placementHeight(m.problem, incumbent)) r.offsets = incumbent;  // never worse
      return pool::Placement{.offsets = r.offsets,
                             .label = "exact",
                             .work = start.work + r.nodes,
                             .proven_optimal = r.proven_optimal || start.proven_optimal,
                             .proven_height = std::max(r.proven_bound, start.lower_bound -
                                                       std::min(start.lower_bound, bounds.padding))};
    });
    s.stages = start.stages;
    s.stages.push_back({"exact", s.size, s.work - start.work});
    if (stopped && watch.due()) s.stopped = watch.reason();
    return s;
  }

 private:
  static PoolSolution relabel(PoolSolution s) {
    s.algorithm = "exact";
    return s;
  }
};

}  // namespace

std::unique_ptr<Algorithm> makeExactAlgorithm() { return std::make_unique<ExactAlgorithm>(); }

}  // namespace memplan

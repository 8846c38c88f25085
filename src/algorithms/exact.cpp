// The "exact" algorithm: the best heuristic plan (auto without its exact
// stage, or local_search if lower) gives an upper bound, then the exact
// search (exact_search.h) lowers it toward the lower bound, with a node
// budget scaled by AlgorithmParams::effort (deterministic) and the
// optional time cap. The shared skeleton (pool::solveOffsets) merges the
// in-place groups, checks the pins and fills the solution.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "algorithms/auto.h"
#include "algorithms/exact_search.h"
#include "algorithms/pool_util.h"
#include "memplan/algorithm.h"

namespace memplan {
namespace {

class ExactAlgorithm : public Algorithm {
 public:
  const AlgorithmInfo& info() const override {
    static const AlgorithmInfo kInfo{
        .name = "exact",
        .summary = "branch-and-bound search from the best heuristic plan toward the lower bound",
        .honours_gaps = true,
        .honours_hints = true};
    return kInfo;
  }
  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams& params) const override {
    // Start from the best heuristic plan (auto without its exact stage, and
    // local_search), so the search never ends above any heuristic.
    AutoParams heuristic;
    heuristic.exact_search = false;
    AlgorithmParams hp = params;
    hp.progress = nullptr;
    PoolSolution start = makeAutoAlgorithm(heuristic)->solve(problem, hp);
    if (const auto ls = makeAlgorithm("local_search")) {
      PoolSolution other = ls->solve(problem, hp);
      if (other.size < start.size) start = std::move(other);
    }
    return pool::solveOffsets(problem, [&](const pool::MergedProblem& m,
                                           const pool::Bounds& bounds) {
      std::vector<Offset> incumbent(m.members.size());
      for (std::size_t g = 0; g < incumbent.size(); ++g)
        incumbent[g] = start.offsets[m.members[g].front()];
      exact::ExactParams ep;
      const double scaled = std::max(0.0, params.effort) * static_cast<double>(ep.node_limit);
      ep.node_limit = static_cast<std::uint64_t>(std::min(scaled, 1e15));
      ep.time_limit_seconds = params.time_limit_seconds;
      const exact::ExactResult r = exact::minimizeHeight(m.problem, incumbent, bounds.target, ep);
      return pool::Placement{.offsets = r.offsets,
                             .label = "exact",
                             .work = r.nodes,
                             .proven_optimal = r.proven_optimal,
                             .proven_height = r.proven_bound};
    });
  }
};

}  // namespace

std::unique_ptr<Algorithm> makeExactAlgorithm() { return std::make_unique<ExactAlgorithm>(); }

}  // namespace memplan

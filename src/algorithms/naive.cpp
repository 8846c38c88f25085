// ExecuTorch's naive planner, bit for bit: no reuse at all.
//
// Each buffer that owns storage, in insertion order, gets the current end of
// the pool (which starts after the reserved prefix); the end then moves past
// it. In-place buffers (inplace_base) take their chain root's offset.
// extra_padding is ignored (ExecuTorch's naive ignores it) and every
// mem_obj_id is 0.
#include <fmt/format.h>

#include "algorithms/greedy.h"
#include "memplan/algorithm.h"

namespace memplan {

namespace {

class ExecutorchNaive final : public Algorithm {
 public:
  const AlgorithmInfo& info() const override {
    static const AlgorithmInfo kInfo{
        .name = "naive",
        .summary = "ExecuTorch's naive, bit-exact: every tensor at the end of its pool, no reuse",
        .executorch_exact = true,
        .layout = BufsizesLayout::ExecutorchNaive,
        .honours_extra_padding = false,
        .honours_pins = false};
    return kInfo;
  }

  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams&) const override {
    const std::vector<BufferId> root = detail::inplaceRoots(problem);
    const auto n = static_cast<BufferId>(problem.buffers.size());
    PoolSolution sol;
    sol.algorithm = "naive";
    sol.offsets.assign(n, 0);
    sol.mem_obj_ids.assign(n, 0);
    Bytes end = problem.reserved;
    for (BufferId i = 0; i < n; ++i) {
      if (root[i] != i) continue;
      sol.offsets[i] = end;
      const auto next = checkedAdd(end, problem.buffers[i].size);
      if (!next) throw PlanError(fmt::format("pool {}: size exceeds {} bytes", problem.mem_id, kMaxBytes));
      end = *next;
    }
    // Roots come first in no particular order, so resolve after placing.
    for (BufferId i = 0; i < n; ++i) sol.offsets[i] = sol.offsets[root[i]];
    sol.size = end;
    sol.work = static_cast<std::uint64_t>(n);
    return sol;
  }
};

}  // namespace

std::unique_ptr<Algorithm> makeNaiveAlgorithm() { return std::make_unique<ExecutorchNaive>(); }

}  // namespace memplan

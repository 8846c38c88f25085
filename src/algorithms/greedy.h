// ExecuTorch's greedy planner as a function, for the algorithms that run it
// as one of their parts ("auto"); greedy.cpp describes it.
#pragma once

#include <atomic>
#include <vector>

#include "memplan/algorithm.h"

namespace memplan::detail {

// ExecuTorch's greedy (allow_overlapping) or greedy_no_overlap on one pool.
// When `stop` becomes true the run gives up and returns an empty solution
// (no offsets).
PoolSolution executorchGreedy(const PoolProblem& problem, bool allow_overlapping,
                              const std::atomic<bool>* stop);

// Root of each buffer's inplace_base chain (itself when it has none).
// Throws InputError on a dangling index or a cycle.
std::vector<BufferId> inplaceRoots(const PoolProblem& problem);

}  // namespace memplan::detail

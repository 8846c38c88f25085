// "auto", memplan's default algorithm, and its settings.
//
// Per pool, on the merged problem (pool_util.h), keeping the lowest
// placement found so far (the first found wins ties):
//  1. The built-in heuristics, each run in full, so auto is never larger
//     than any of them, on any input of any size: first fit and best fit
//     in their default order (best_fit.h), and ExecuTorch's greedy
//     (greedy.cpp, when its plan is safe: it ignores alignment above 16
//     and pins, and may place in-place results unsafely). They run
//     concurrently when there are cores for it; the lowest wins, ties in
//     that order, and first fit at the lower bound ends the others early.
//  2. The other orders and fits of the portfolio, within a work budget.
//  3. Iterated local search from the best placement (local_search.h),
//     within a work budget.
//  4. Exact search from the best placement toward the lower bound
//     (exact_search.h), within a node budget; it may prove the height
//     optimal or raise the proven lower bound.
// Every stage stops once the lower bound is reached. Budgets are work
// counters scaled by AlgorithmParams::effort (deterministic); the optional
// time limit only cuts later stages short, so more time never gives a
// larger plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "memplan/algorithm.h"

namespace memplan {

struct AutoParams {
  // Threads for the built-in heuristics of stage 1 (0 = one per core, up
  // to three). The result does not depend on it.
  unsigned threads = 0;
  bool executorch_greedy = true;   // ExecuTorch's greedy among the heuristics
  bool portfolio = true;           // the other orders and fits (stage 2)
  bool local_search = true;        // stage 3
  bool exact_search = true;        // stage 4
  // Budgets at effort 1, in placer work units (entries examined; one pass
  // over n buffers costs about 200 n on model-like lists, so the portfolio
  // runs in full below ~10k buffers and not at all above ~100k).
  std::uint64_t portfolio_work = 16'000'000;
  // Pools up to portfolio_min_passes_max_buffers get at least this many
  // passes' worth of portfolio work (a pass costs what first fit cost),
  // however much a pass costs: on dense real traces the second order is
  // where the gain is (S_1, 28,526 buffers: 1.025x -> 1.0025x the lower
  // bound for ~0.4 s).
  std::uint64_t portfolio_min_passes = 2;
  std::size_t portfolio_min_passes_max_buffers = 50'000;
  std::uint64_t local_search_base_work = 2'000'000;
  std::uint64_t local_search_work_per_buffer = 500;
  std::uint64_t local_search_max_work = 16'000'000;
  // No local search above this many (merged) buffers: one move changes
  // too little of so large a pool (measured: nothing gained at 100k).
  std::size_t local_search_max_buffers = 50'000;
  // Exact search only on pools up to this many (merged) buffers; above, it
  // searches a window of the buffers around the peak.
  std::size_t exact_max_buffers = 5'000;
};

std::unique_ptr<Algorithm> makeAutoAlgorithm(const AutoParams& params);

}  // namespace memplan

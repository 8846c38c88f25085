// "auto", memplan's default algorithm, and its settings.
//
// Per pool, on the merged problem (pool_util.h), keeping the lowest
// placement found so far (the first found wins ties). A plan within
// gap_tolerance of the lower bound is good enough: no later stage runs.
//  1. The built-in heuristics, each run in full, so auto is never larger
//     than any of them, on any input of any size: first fit in the
//     default order (best_fit.h), best fit in that order on pools of at
//     most best_fit_max_buffers buffers (merged), and ExecuTorch's greedy
//     (greedy.cpp, when its plan is safe: it ignores alignment above 16
//     and pins, and may place in-place results unsafely). So on larger
//     pools auto is never larger than first fit and greedy, and best fit
//     is not among its parts. They run concurrently when there are cores
//     for it; the lowest wins, ties in that order, and first fit at the
//     lower bound ends the others early.
//  2. The other orders and fits of the portfolio, within a work budget.
//  3. Iterated local search from the best placement (local_search.h),
//     within a work budget that grows with the pool. Stages 1-3 are the
//     "local_search" algorithm, run the same way, so auto is never larger
//     than it either.
//  4. Exact search from the best placement toward the lower bound
//     (exact_search.h), within a node and a step budget; it may prove the height
//     optimal or raise the proven lower bound. Large pools search a window
//     of buffers around the peak (ExactParams::window_threshold).
//  5. Anytime: while the plan is still above the tolerance, rounds of
//     local search (each from the best placement, with a seed of its own)
//     within a budget that grows with the pool, then exact search again if
//     they gained.
// Budgets are work counters scaled by AlgorithmParams::effort, so the same
// input gives the same plan on any machine under any load. What they
// allow at effort 1 on a pool of n buffers (work units: placer runs and
// entries, exact-search steps; 2-15 ns each):
//  - stages 1 and 2: whole passes: first fit, best fit and ExecuTorch's
//    greedy, then the ten other passes on pools up to
//    portfolio_full_max_buffers (above, what fits in portfolio_work). A
//    pass is O(n log n) on model-like lists; its work is n times the runs
//    a buffer reads, so it grows faster on lists whose live set grows
//    with n (issue 27's stairs: 56 M units at 2,000 rows).
//  - stage 3: min(100 M, max(2 M + 2,000 n, 8 passes));
//  - stage 4: one call of 500,000 nodes and 800 M steps (stage 5 may
//    call it again: 500,000 nodes and 200 M steps);
//  - stage 5: min(400 M, 4 M + 6,000 n).
// So apart from the passes the budget grows linearly in n up to a cap of
// 1.5 G units (about 4 s) whatever the pool; issue 27's lists of up to
// 8,000 rows (under 100 KB as CSV: stairs, random intervals) plan in
// 1-4 s of CPU (docs/benchmarks.md). The optional
// time limit and stop flag (AlgorithmParams) only cut later stages short:
// stage 1's first fit always completes, and more time never gives a larger
// plan. The solution lists what each stage reached (PoolSolution::stages).
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
  // Best fit runs in stage 1 only on pools of at most this many buffers
  // (merged). Above, it costs as much as first fit and greedy together and
  // gave larger plans than both on every large list measured (dense list
  // of 100,000 buffers: 1.19x the lower bound, first fit 1.027x, greedy
  // 1.025x; log-uniform 100,000: 1.085x, 1.058x, 1.063x).
  std::size_t best_fit_max_buffers = 50'000;
  bool portfolio = true;           // the other orders and fits (stage 2)
  bool local_search = true;        // stage 3
  bool exact_search = true;        // stage 4
  bool anytime = true;             // stage 5
  // Stop after stage 3: the "local_search" algorithm.
  bool stop_after_local_search = false;
  // A plan at most this share above the lower bound ends the search.
  double gap_tolerance = 1e-4;
  // Budgets at effort 1, in placer work units (runs and entries examined;
  // 5-15 ns each on this machine class).
  // Stage 2: passes within portfolio_work, except that pools up to
  // portfolio_full_max_buffers run every pass: a pass is cheap there, and
  // the orders differ most on real traces (a CPU training trace of a
  // ResNet: best_fit(breadth) 1.0013x the lower bound where the default
  // order gives 1.0168x).
  std::uint64_t portfolio_work = 16'000'000;
  std::size_t portfolio_full_max_buffers = 50'000;
  // Stage 3: base + per buffer, at least this many passes' worth (a
  // reorder move is a pass), capped. No local search (nor stage 5) on
  // pools above local_search_max_buffers: a pass there costs as much as
  // the whole budget (and the default stays fast on large lists).
  std::uint64_t local_search_base_work = 2'000'000;
  std::uint64_t local_search_work_per_buffer = 2'000;
  std::uint64_t local_search_min_passes = 8;
  std::uint64_t local_search_max_work = 100'000'000;
  std::size_t local_search_max_buffers = 50'000;
  // Stage 4: search nodes and search steps per call (a step is one item,
  // section or neighbour read, 2-3 ns; exact_search.h). A node's cost
  // grows with the lifetimes it overlaps: on MiniMalloc's challenging
  // lists a node is about 3,600 steps, on a 2,000-row list where every
  // buffer overlaps the 999 before and after it about 8 million (issue 27:
  // 44 s of CPU for 2,000 nodes). The step limit bounds a call at about
  // 2 s of CPU whatever the pool; the challenging lists D and J, the only
  // ones that spend a whole call, keep their heights down to 600 M steps.
  std::uint64_t exact_node_limit = 500'000;
  std::uint64_t exact_step_limit = 800'000'000;
  // Stage 5's exact search, after a round of local search gained, starts
  // near the height stage 4 left and gets a quarter of the steps (no
  // pinned list changes: of them only S_1 gets there, and its window is
  // left alone).
  std::uint64_t anytime_exact_step_limit = 200'000'000;
  // Stage 5: base + per buffer, capped (placer work units), in rounds.
  std::uint64_t anytime_rounds = 2;
  std::uint64_t anytime_base_work = 4'000'000;
  std::uint64_t anytime_work_per_buffer = 6'000;
  std::uint64_t anytime_max_work = 400'000'000;
};

std::unique_ptr<Algorithm> makeAutoAlgorithm(const AutoParams& params);

}  // namespace memplan

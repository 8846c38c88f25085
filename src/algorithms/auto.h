// "auto", memplan's default algorithm, and the two searching algorithms
// that share its list of stages: "local_search" (the list up to and
// including its local search) and "exact" (the list and one more exact
// search). Each is a declared list of stages (search_stage.h,
// search_stages.h); this file says what "auto" holds and what its budgets
// allow.
//
// Per pool, on the merged problem (pool_util.h), keeping the lowest
// placement found so far (the first found wins ties). A plan within
// search.gap_tolerance of the lower bound is good enough: no later stage runs.
//  1. The built-in heuristics, each run in full, so auto is never larger
//     than any of them, on any input of any size: first fit in the
//     default order (best_fit.h), best fit in that order on pools of at
//     most heuristics.best_fit_max_buffers buffers (merged), and ExecuTorch's greedy
//     (greedy.cpp, when its plan is safe: it ignores alignment above 16
//     and pins, and may place in-place results unsafely). So on larger
//     pools auto is never larger than first fit and greedy, and best fit
//     is not among its parts. They run concurrently when there are cores
//     for it, one after another on pools above
//     heuristics.concurrent_max_buffers (each holds an index of the whole
//     pool); the lowest wins, ties in that order, and first fit at the
//     lower bound ends the others early.
//  2. The other orders and fits of the portfolio, within a work budget.
//  3. Iterated local search from the best placement (local_search.h),
//     within a work budget that grows with the pool. Stages 1-3 are the
//     "local_search" algorithm, run the same way, so auto is never larger
//     than it either; "exact" is this whole list followed by one more exact
//     search (search_stages.h), so it is never larger than auto.
//  4. Exact search from the best placement toward the lower bound
//     (exact_search.h), within a node and a step budget; it may prove the height
//     optimal or raise the proven lower bound. Large pools search a window
//     of buffers around the peak (ExactParams::window_threshold), after a
//     probe of the bound on the whole pool when it has at most
//     ExactParams::whole_probe_max_pairs pairs of buffers alive together.
//  5. Anytime: while the plan is still above the tolerance, rounds of
//     local search (each from the best placement, with a seed of its own)
//     within a budget that grows with the pool, then exact search again if
//     they gained.
//  6. Peak stack: while the plan is still above the tolerance, stages 1-3
//     (stage 3 with four times its work) and exact search on pools larger
//     than its window, again on the pool
//     with the buffers live at its steps of most live bytes pinned in
//     stacks without a hole there, the latest to end lowest
//     (search_stages.h); taken when lower. On training traces the hole a
//     plan leaves at those steps under long-lived buffers is what keeps it
//     above the bound, and no local move closes it.
// Budgets are work counters scaled by AlgorithmParams::effort, so the same
// input gives the same plan on any machine under any load. What they
// allow at effort 1 on a pool of n buffers (work units: placer runs and
// entries, exact-search steps; 2-15 ns each):
//  - stages 1 and 2: whole passes: first fit, best fit and ExecuTorch's
//    greedy, then the ten other passes on pools up to
//    portfolio.full_max_buffers (above, what fits in portfolio.work). A
//    pass is O(n log n) on model-like lists; its work is n times the runs
//    a buffer reads, so it grows faster on lists whose live set grows
//    with n (issue 27's stairs: 56 M units at 2,000 rows).
//  - stage 3: min(100 M, max(2 M + 2,000 n, 8 passes));
//  - stage 4: one call of 500,000 nodes and 800 M steps (stage 5 may
//    call it again: 500,000 nodes and 200 M steps);
//  - stage 5: min(400 M, 4 M + 6,000 n);
//  - stage 6: stages 1-3 once more (or twice: every peak step stacked,
//    then the first alone), stage 3 at min(400 M, max(8 M + 8,000 n, 8
//    passes)), on pools of at most peak_stack.max_buffers buffers.
// So apart from the passes, stages 3-5 grow linearly in n up to a cap of
// 1.6 G units (about 4 s) whatever the pool, and stage 6 adds at most two
// runs of 400 M + 800 M; issue 27's lists of up to
// 8,000 rows (under 100 KB as CSV: stairs, random intervals) plan in
// 1-4 s of CPU (docs/benchmarks.md). The optional
// time limit and stop flag (AlgorithmParams) only cut later stages short:
// stage 1's first fit always completes, and more time never gives a larger
// plan. The solution lists what each stage reached (PoolSolution::stages).
#pragma once

#include <memory>

#include "algorithms/search_stages.h"
#include "memplan/algorithm.h"

namespace memplan {

// What auto's list holds and the budgets of its stages at effort 1.
struct AutoParams {
  search::BuiltInHeuristics heuristics;  // stage 1
  search::Portfolio portfolio;           // stage 2 (work 0 and full_max_buffers 0: no passes)
  // Stage 3. Its base work and per-buffer work and at least 8 passes'
  // worth (a reorder move is a pass), capped.
  search::LocalSearch local_search;
  // Stage 4. A node's cost grows with the lifetimes it overlaps: on
  // MiniMalloc's challenging lists a node is about 3,600 steps, on a
  // 2,000-row list where every buffer overlaps the 999 before and after
  // it about 8 million (issue 27: 44 s of CPU for 2,000 nodes). The step
  // limit bounds a call at about 2 s of CPU whatever the pool; the
  // challenging lists D and J, the only ones that spend a whole call, keep
  // their heights down to 600 M steps.
  search::BoundedExact exact;
  // Stage 5: rounds of local search, each from the incumbent with a seed
  // of its own (which moves pay off is a matter of chance on large pools),
  // then exact search again if they gained: it starts near the height
  // stage 4 left and gets a quarter of the steps (no pinned list changes:
  // of them only S_1 gets there, and its window is left alone).
  search::LocalSearch anytime{.base_work = 4'000'000,
                              .work_per_buffer = 6'000,
                              .min_passes = 0,
                              .max_work = 400'000'000,
                              .max_buffers = 50'000,
                              .rounds = 2,
                              .first_seed = 1};
  search::BoundedExact anytime_exact{.step_limit = 200'000'000, .after_gain = true};
  // Stage 6: stages 1-3 again on the pool with the buffers live at its step
  // of most live bytes pinned in a stack without a hole (search_stages.h),
  // then exact search on pools larger than the exact search's window
  // (2,000 buffers). There stage 4 searched a window only, and around the
  // stack it reaches what it could not (gpt2_train: 1.0022x -> 1.0000x).
  // Smaller pools it searched whole, and the stack only narrows them
  // (MiniMalloc's D and J: twice the time, the same heights).
  search::PeakStack peak_stack;
  // The local search around the stack gets four times stage 3's work: with
  // the peak's buffers pinned, the moves that are left are few and slow to
  // find (regnet_train: 1.0108x -> 1.0020x for 0.7 s more; resnet101ish_train
  // 1.0009x -> 1.00002x; the other traces the same, at the same time
  // within noise, except S_1: same height, 1.3 s more).
  search::LocalSearch peak_stack_local_search{.base_work = 8'000'000,
                                              .work_per_buffer = 8'000,
                                              .min_passes = 8,
                                              .max_work = 400'000'000};
  search::BoundedExact peak_stack_exact{.min_buffers = 2'000};
  // Which of the later stages the list holds (all by default).
  bool with_local_search = true;         // stage 3, and stage 5 with it
  bool with_exact = true;                // stage 4, and stage 5's exact
  bool with_anytime = true;              // stage 5
  bool with_peak_stack = true;           // stage 6
  search::SearchSettings search;         // gap tolerance
};

// Auto's list of stages, in order.
search::StageList autoStages(const AutoParams& params);

std::unique_ptr<Algorithm> makeAutoAlgorithm(const AutoParams& params);

}  // namespace memplan

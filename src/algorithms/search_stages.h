// The stages the searching algorithms are declared from (search_stage.h),
// each with its settings at effort 1. auto.h lists them into "auto",
// "local_search" and "exact".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "algorithms/search_stage.h"

namespace memplan::search {

// The built-in heuristics, each run in full (heuristic_stages.cpp): first
// fit and best fit in the default order and ExecuTorch's greedy (when its
// plan is safe: it ignores alignment above 16 and pins, and may place
// in-place results unsafely), concurrently when there are cores for it.
// The lowest wins, ties in that order; first fit at the lower bound ends
// the others early. Sets SearchState::pass_work. Records nothing itself:
// the portfolio after it records "heuristics".
struct BuiltInHeuristics {
  // Threads (0 = one per core, up to three). The result does not depend on it.
  unsigned threads = 0;
  // Above this many buffers (merged) the parts run one after another
  // whatever `threads` says: each holds an index of the whole pool, and
  // running two at once costs their sum (log-uniform list of 1,000,000
  // buffers: first fit's run tree and greedy's index together are about a
  // quarter of the peak). The CPU time is the same; the wall time grows by
  // greedy's.
  std::size_t concurrent_max_buffers = 250'000;
  bool executorch_greedy = true;
  // Best fit runs only on pools of at most this many buffers (merged).
  // Above, it costs as much as first fit and greedy together and gave
  // larger plans than both on every large list measured (dense list of
  // 100,000 buffers: 1.19x the lower bound, first fit 1.027x, greedy
  // 1.025x; log-uniform 100,000: 1.085x, 1.058x, 1.063x).
  std::size_t best_fit_max_buffers = 50'000;
};
std::shared_ptr<const Stage> builtInHeuristicsStage(const BuiltInHeuristics& settings);

// The other orders and fits of best_fit's portfolio ("heuristics";
// heuristic_stages.cpp): passes within `work` placer units, except that
// pools up to full_max_buffers run every pass: a pass is cheap there, and
// the orders differ most on real traces (a CPU training trace of a ResNet:
// best_fit(breadth) 1.0013x the lower bound where the default order gives
// 1.0168x). Runs while the incumbent is above the lower bound.
struct Portfolio {
  std::uint64_t work = 16'000'000;
  std::size_t full_max_buffers = 50'000;
};
std::shared_ptr<const Stage> portfolioStage(const Portfolio& settings);

// Iterated local search from the incumbent ("local search";
// local_search.h, local_search.cpp), in `rounds` rounds, round k with the
// seed AlgorithmParams::seed + first_seed + k. All rounds together get
// min(max_work, max(base_work + work_per_buffer x n, min_passes passes))
// placer units on a pool of n buffers. None on pools above max_buffers:
// a pass there costs as much as the whole budget. Runs while the incumbent
// is above the tolerance and not proven optimal.
struct LocalSearch {
  std::uint64_t base_work = 2'000'000;
  std::uint64_t work_per_buffer = 2'000;
  std::uint64_t min_passes = 8;
  std::uint64_t max_work = 100'000'000;
  std::size_t max_buffers = 50'000;
  std::uint64_t rounds = 1;
  std::uint64_t first_seed = 0;
};
std::shared_ptr<const Stage> localSearchStage(const LocalSearch& settings);

// Exact search from the incumbent toward the lower bound ("exact";
// exact_search.h, exact.cpp) within node_limit nodes and step_limit steps
// (a step is one item, section or neighbour read, 2-3 ns). Large pools
// search a window of buffers around the peak (ExactParams::window_threshold),
// after probing the bound on the whole pool when it is small enough
// (ExactParams::whole_probe_max_pairs).
// It may prove the height optimal or raise the proven bound. Runs while the
// incumbent is above the tolerance; with after_gain only when the stage
// just before it lowered the incumbent; only on pools of more than
// min_buffers buffers.
struct BoundedExact {
  std::uint64_t node_limit = 500'000;
  std::uint64_t step_limit = 800'000'000;
  bool after_gain = false;
  std::size_t min_buffers = 0;
};
std::shared_ptr<const Stage> boundedExactStage(const BoundedExact& settings);

// The "exact" algorithm's own search ("exact"; exact.cpp): from the
// incumbent (its hinted buffers moved to their hints first), with
// ExactParams' node limit scaled by the effort and no step limit, even
// when the incumbent is at the tolerance; takes the search's placement
// unless it is higher.
std::shared_ptr<const Stage> finalExactStage();

// The search again with the buffers live at the pool's steps of most live
// bytes pinned in stacks, the latest to end lowest ("peak stack";
// peak_stack_stage.cpp, heur::peakStack): `inner` runs on that pinned pool
// and its plan is taken when lower; first with every peak step that stacks
// without a hole, then, while still above the tolerance, with the first
// step alone. Runs while the incumbent is above the tolerance and not
// proven optimal, on pools of at most max_buffers buffers that have no pins
// of their own.
struct PeakStack {
  // Training traces of up to 62,185 buffers were measured (vit_long_train,
  // 55,630: 1.0015x -> 1.0000x with the stage); dense synthetic lists of
  // 100,000 paid 0.5-0.9 s for it and gained 0.3% at most.
  std::size_t max_buffers = 65'536;
  // Peak steps stacked, the first ones in time (a training trace repeats
  // its peak once a training step: 17 times in gpt2_long_train).
  std::size_t max_steps = 64;
};
std::shared_ptr<const Stage> peakStackStage(const PeakStack& settings, StageList inner);

}  // namespace memplan::search

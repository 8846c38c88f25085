// Iterated local search on a greedy placement ("local_search", and a stage
// of "auto").
//
// The height of a placement is set by the buffers that reach the peak. Each
// move picks one of them at random (seeded, deterministic) and tries to
// bring it down:
//  - ruin and recreate: lift the peak buffer and a random handful of the
//    buffers alive with it out of the placement, then put them back one by
//    one (best or first fit, largest first or a random order) while every
//    other buffer stays where it is;
//  - slab ruin: the same, lifting every buffer alive with the peak one
//    above a random level (the top of the stack, packed again);
//  - reorder: move the peak buffer to a random earlier place in the
//    greedy order and re-place everything after that place. On large
//    pools these moves get about half of the work (each place tried is a
//    pass) and try several places spread before the buffer's own, keeping
//    the best: the height is a step function of the place (on a CPU
//    training trace of 28,526 buffers, any place in one band of 1,400
//    takes the plan from 1.0025x to 1.0012x the lower bound).
// A move is kept when (height, buffers at the height) does not get worse,
// so the search can walk across plateaus; otherwise it is undone. The ruin
// size grows while no move improves and shrinks back after an improvement.
// Effort is counted in Placer work units, never in time.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "algorithms/best_fit.h"
#include "algorithms/placer.h"
#include "algorithms/stop.h"

namespace memplan::heur {

struct LocalSearchParams {
  std::uint64_t work_limit = 20'000'000;  // Placer work units for the search
  std::uint64_t seed = 1;
  StopWatch* watch = nullptr;             // optional time limit / stop flag
  Bytes target = 0;                       // stop once height <= target
  bool ruin_recreate = true;              // ruin-and-recreate moves
  // Half of the ruin moves lift a slab instead of a random sample: every
  // buffer alive with the peak buffer whose top is above a random level
  // under it, so the top of the stack is packed again as a whole.
  bool slab_ruin = true;
  std::size_t slab_max = 256;             // at most this many lifted
  bool reorder = true;                    // reorder moves
  // Up to this many buffers half of the moves reorder (chosen at random);
  // above, a reorder move (a pass) comes whenever the reorder moves have
  // spent no more than reorder_work_share of the work so far.
  std::size_t reorder_max_buffers = 2000;
  double reorder_work_share = 0.5;
  // Above reorder_max_buffers a reorder move tries this many places, spread
  // evenly before the buffer's own, and keeps the best (one pass each).
  std::size_t reorder_scan = 8;
  // What one pass costs, if known: no scan starts that would overrun
  // work_limit.
  std::uint64_t pass_work = 0;
  std::size_t ruin_min = 4;               // buffers lifted per move, at first
  std::size_t ruin_max = 64;              // ... growing up to this when stuck
  bool accept_equal = true;               // walk plateaus
  // Give up after this many moves without a lower score (0 = never):
  // max(stall_moves, stall_moves_per_buffer x buffers).
  std::uint64_t stall_moves = 5'000;
  std::uint64_t stall_moves_per_buffer = 20;
  std::function<void(std::string_view)> progress;  // optional status line
};

struct LocalSearchResult {
  Bytes height = 0;
  std::vector<Offset> offsets;  // merged offsets of the best placement
  std::uint64_t work = 0;
  std::uint64_t moves = 0;
  std::uint64_t improvements = 0;
  bool stopped = false;         // params.watch ended it
};

// Improves `offsets` (a valid placement of `merged` produced by the greedy
// in `order` with `fit`). Never returns anything worse than its input.
LocalSearchResult improvePlacement(const PoolProblem& merged, Placer& placer,
                                   std::vector<BufferId> order, Fit fit,
                                   std::vector<Offset> offsets,
                                   const LocalSearchParams& params);

}  // namespace memplan::heur

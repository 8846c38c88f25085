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
//  - reorder (small pools): move the peak buffer to a random earlier place
//    in the greedy order and re-place everything after that place.
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

namespace memplan::heur {

struct LocalSearchParams {
  std::uint64_t work_limit = 20'000'000;  // Placer work units for the search
  std::uint64_t seed = 1;
  double time_limit_seconds = 0;          // optional wall-clock cap (0 = none)
  Bytes target = 0;                       // stop once height <= target
  bool ruin_recreate = true;              // ruin-and-recreate moves
  // Half of the ruin moves lift a slab instead of a random sample: every
  // buffer alive with the peak buffer whose top is above a random level
  // under it, so the top of the stack is packed again as a whole.
  bool slab_ruin = true;
  std::size_t slab_max = 256;             // at most this many lifted
  bool reorder = true;                    // reorder moves (small pools only)
  std::size_t reorder_max_buffers = 2000; // no reorder moves above this
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
};

// Improves `offsets` (a valid placement of `merged` produced by the greedy
// in `order` with `fit`). Never returns anything worse than its input.
LocalSearchResult improvePlacement(const PoolProblem& merged, Placer& placer,
                                   std::vector<BufferId> order, Fit fit,
                                   std::vector<Offset> offsets,
                                   const LocalSearchParams& params);

}  // namespace memplan::heur

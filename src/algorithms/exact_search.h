// Exact search: branch and bound over placements of one pool.
//
// The question answered is "does every buffer fit below capacity C?"
// (solveWithinCapacity); minimizeHeight turns it into an optimizer by
// lowering C from a known placement toward the lower bound.
//
// How the search works (ideas from the published MiniMalloc solver; this is
// an independent implementation):
//  1. Canonical solutions. Any feasible placement can be pushed down until
//     every buffer rests on the floor (reserved prefix), on a buffer it
//     overlaps in time, or on a pinned buffer. The search builds only such
//     placements: each unplaced buffer has a lowest possible offset, and
//     the next buffer placed is taken in non-decreasing (offset, preorder)
//     order, so each placement is reached once.
//  2. Section inference. Time is cut into sections where the live set does
//     not change. Each section's floor (the highest placed top, raised to
//     the lowest offset any unplaced buffer there can still take) plus the
//     bytes still to place there must fit below C; later buffers never go
//     below the current offset either.
//  3. Dominance. A buffer is never placed at or above the top some other
//     unplaced buffer could reach at its own lowest offset (that gap could
//     always be filled first); and when a buffer that nothing unplaced
//     overlaps fails at its lowest offset, its siblings are not tried.
//  4. Decomposition. Time points that no buffer spans split the problem
//     into independent parts, solved one after the other.
//  5. Restarts. Rounds of attempts, one per static preorder (the tie-break
//     among buffers at the same offset), then the same preorders with
//     deterministic jitter, under a node limit growing every round: an easy
//     instance is solved by whichever order suits it.
//  6. Large pools (minimizeHeight above window_threshold buffers): only the
//     buffers nearest in time to the highest ones are re-placed; their
//     neighbours stay pinned at the incumbent's offsets.
// Effort is counted in nodes, never in time, so results are deterministic;
// an optional wall-clock cap can stop earlier (non-deterministically).
#pragma once

#include <cstdint>
#include <vector>

#include "memplan/algorithm.h"

namespace memplan::exact {

struct ExactParams {
  // Total search nodes over all attempts of one solveWithinCapacity call.
  std::uint64_t node_limit = 2'000'000;
  // Place buffers in non-decreasing (offset, preorder) order. Off: any
  // unplaced buffer may come next (each still at its lowest offset); far
  // slower, for testing only.
  bool canonical_order = true;
  // Prune with per-section bytes-left-to-place bounds.
  bool section_inference = true;
  // Raise a section's floor to the lowest offset any of its unplaced
  // buffers can still take (costly on long-lived buffers).
  bool unallocated_floor = true;
  // Min-height dominance and the "nothing above it" sibling cut (3.).
  bool dominance = true;
  // Solve time-disjoint parts independently.
  bool decompose = true;
  // Restart with growing node limits and varied tie-breaks.
  bool restarts = true;
  // Node limit of the first round of attempts when restarts is on (0 = two
  // per buffer); grows by restart_growth every round.
  std::uint64_t restart_first_limit = 0;
  // Node limit growth per round of restarts.
  double restart_growth = 1.5;
  // Relative noise on the preorder keys from the second round on (0 = the
  // same preorders every round).
  double restart_jitter = 0.3;
  // Optional wall-clock cap on top of the node limit (0 = none).
  double time_limit_seconds = 0;
  // minimizeHeight: above this many buffers, search a window of the buffers
  // live around the peak and keep the rest fixed.
  std::size_t window_threshold = 2000;
};

struct ExactResult {
  std::vector<Offset> offsets;   // absolute offsets (reserved prefix incl.)
  Bytes height = 0;              // max(offset + size), 0 for no buffers
  bool found = false;            // offsets hold a valid placement
  bool proven_optimal = false;   // minimizeHeight: height is the minimum
  bool proven_infeasible = false;  // solveWithinCapacity: nothing fits
  std::uint64_t nodes = 0;       // search nodes spent
};

// Is there a placement with max(offset + size) <= capacity? Honours
// alignment, fixed offsets, the reserved prefix and inplace_base pairs.
// Ignores problem.extra_padding and problem.capacity (the caller's business).
ExactResult solveWithinCapacity(const PoolProblem& problem, Bytes capacity,
                                const ExactParams& params);

// Lowers the height of `incumbent` (a valid placement: absolute offsets) by
// bisection on the capacity between `lower_bound` and the incumbent's
// height. Anytime: never returns anything worse than the incumbent; found is
// always true. node_limit bounds the total over all probes.
ExactResult minimizeHeight(const PoolProblem& problem,
                           const std::vector<Offset>& incumbent,
                           Bytes lower_bound, const ExactParams& params);

}  // namespace memplan::exact

// Exact search: does every buffer of a pool fit below a capacity C, and
// what is the lowest height that fits?
//
// The data layout, on three buffers (in-place groups merged first; each
// merged buffer that holds bytes is an *item*):
//
//   time          0     2     4     6     8      event_times = 0 2 4 6 8
//   section       | s0  | s1  | s2  | s3  |      section s = [event s, event s+1)
//   a (32 bytes)  [===========)
//   b (16 bytes)        [===========)
//   c (32 bytes)              [===========)
//
// Fixed for every capacity (SearchLayout, exact_layout.h):
//   items[i]          size, alignment, pin, lifetime, hull in sections
//                     (a: s0..s1), and IndexRanges into the flat lists:
//   spans             per item, the sections it holds which bytes of its
//                     own in (a: [s0, s2) bytes [0, 32); a buffer with
//                     gaps has several spans)
//   neighbours        per item, the items sharing time with it and the
//                     clearance to keep above it (a: b +32; b: a +16,
//                     c +16; c: b +32)
//   obstacles         per unpinned item, the pinned items it steps over
//   section_items     per section, its items, from section_begin:
//                       s0: a | s1: a b | s2: b c | s3: c
//                     its unplaced items first (SectionState::unplaced
//                     of them), so placing an item swaps it behind them;
//                     slot_position finds an item's k-th entry there
//   section_bytes     per section, all items' bytes: 32 48 48 32
//   spanning_at_start per boundary, the items crossing it: 1 1 1
//
// The partial placement (PartialPlacement, exact_search.cpp; undone
// through its trail):
//   item_state[i]      offset (or unplaced) and the lowest offset it can
//                      still take
//   section_state[s]   unplaced bytes, floor, unplaced item count
//   spanning           per boundary, the unplaced items crossing it
//
// Placing a at 0: b's lowest offset rises to 32 (a's neighbour); s0 and
// s1 lose a's 32 bytes (unplaced 0 and 16) and their floors rise to 32;
// a no longer crosses s0|s1, so s0 and s1..s3 are searched apart. Each
// change to a floor or a lowest offset is pushed on the trail with its old
// value and popped when a is taken back.
//
// The decision search (solveWithinCapacity) is a depth-first search over
// partial placements, built on the techniques of Google's MiniMalloc
// solver (Moffitt, ASPLOS 2023), reimplemented here, plus techniques of
// memplan's own. Each technique is a switch in ExactParams:
//
//  canonical_only        Canonical solutions. Any placement can be pushed
//                        down until each buffer rests on the floor, on a
//                        buffer it shares time with, or on a pinned one.
//                        The search builds only those, placing each buffer
//                        at its lowest feasible offset and the buffers in
//                        non-decreasing (offset, preorder) order, so each
//                        solution is reached once.
//  dynamic_ordering      At each node the unplaced buffers are tried by
//                        lowest feasible offset, ties by static preorder.
//  static_preordering    The preorder: by the keys of `preorders`, tried
//                        in turn by the restarts (W = lifetime width,
//                        A = area, T = the largest section total the buffer
//                        lives in, Z = size, L/U = start/end, O = overlaps,
//                        C = sections spanned).
//  section_inference     Sections: time is cut where the live set changes.
//                        A section's unplaced bytes must fit between its
//                        floor (the highest top placed in it) and C.
//  monotonic_floor       Later buffers never go below the current offset:
//                        that is every section's floor too (and, the
//                        candidates being sorted by offset, the first
//                        candidate failing it ends the node).
//  unallocated_floor     A section's floor is at least the lowest offset
//                        any of its unplaced buffers can still take.
//  check_dominance       A buffer is never placed at or above the top some
//                        unplaced buffer would have at its lowest offset:
//                        that buffer could fill the gap first.
//  hatless_pruning       When a buffer that no unplaced buffer shares time
//                        with fails at its lowest offset, its later
//                        siblings are not tried (they cannot help it).
//  dynamic_decomposition When no unplaced buffer spans a section boundary,
//                        the two sides are solved independently.
//  restarts              Round robin over `preorders` under a node limit
//                        that doubles every round (an easy instance is
//                        solved by whichever order suits it).
// memplan's own:
//  symmetry_breaking     Identical buffers (same size, alignment and
//                        lifetime segments, unpinned) are interchangeable:
//                        they are placed in index order only.
//  capacity_inference    A buffer whose lowest feasible offset leaves no
//                        room for it below C fails its partial placement
//                        at once (not when its turn comes).
//  pin_obstacles         Pinned buffers are buffers placed at their pin in
//                        turn, as in MiniMalloc, and also obstacles from
//                        the start: no buffer's lowest offset overlaps one.
//
// Gaps (Buffer::gaps) are honoured: a buffer above another that shares
// time with it clears the other's highest window over their shared steps
// (MiniMalloc's effective size); sections count window bytes. With windows
// that start above a buffer's offset this is conservative, and the search
// no longer claims infeasibility.
//
// Optimization (minimizeHeight) starts from a valid placement (the best
// heuristic one) and probes capacities between the lower bound and it: a
// probe that finds a placement lowers the incumbent to that placement's
// height, one that proves infeasibility raises the proven bound. First the
// bound itself; then a descent from the incumbent in steps that double
// while probes succeed and halve when one runs out of nodes; then sweeps
// over the capacities just below the incumbent with small budgets that
// double every round (near the optimum the search time jumps from one
// capacity to the next: trying several beats hammering one). Anytime:
// never above the incumbent. Effort is counted in search nodes and steps
// (ExactParams::step_limit; a probe gets the same share of both), never in
// time (an optional wall-clock cap may cut it shorter, non-deterministically).
//
// Pools larger than window_threshold are searched around their peak: the
// buffers nearest in time to the highest ones are re-placed, their
// neighbours stay at the incumbent's offsets (pinned). Before that, on
// pools with few enough pairs of buffers alive together
// (whole_probe_max_pairs), the first probe, at the bound, places the whole
// pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "memplan/algorithm.h"

namespace memplan::exact {

struct ExactParams {
  // Search nodes over all probes of one call (minimizeHeight) or all
  // attempts of one decision (solveWithinCapacity).
  std::uint64_t node_limit = 500'000;
  // Search steps over the same span (0 = no limit). A node's cost is not
  // constant: it reads the unplaced items, and its placement touches every
  // section and neighbour of the placed item (on long, densely overlapping
  // lifetimes, a node can cost a million steps). A step is one item,
  // section or neighbour read (a few ns each); a probe cut short by this
  // limit ends the call, as when the nodes run out.
  std::uint64_t step_limit = 0;
  // Optional wall-clock cap on top of the node limit (0 = none), and an
  // optional flag that ends the search when set (AlgorithmParams::stop).
  double time_limit_seconds = 0;
  const std::atomic<bool>* stop = nullptr;

  bool canonical_only = true;
  bool dynamic_ordering = true;
  bool static_preordering = true;
  bool section_inference = true;
  bool monotonic_floor = true;
  bool unallocated_floor = true;
  bool check_dominance = true;
  bool hatless_pruning = true;
  bool dynamic_decomposition = true;
  bool restarts = true;
  bool symmetry_breaking = true;
  bool capacity_inference = true;
  bool pin_obstacles = true;
  // Preorders tried by the restarts, MiniMalloc's by default.
  std::vector<std::string> preorders = {"WAT", "TAW", "TWA"};

  // minimizeHeight's probes, as shares of node_limit: the probe at the
  // lower bound; each step of the descent; the first round of the sweep
  // below the incumbent (doubling every round), over this many capacities.
  double bound_probe_share = 0.4;
  double descent_probe_share = 0.04;
  double sweep_probe_share = 0.02;
  std::size_t sweep_capacities = 8;
  // minimizeHeight: above this many buffers, search a window of the
  // buffers around the peak and keep the rest where they are.
  std::size_t window_threshold = 2000;
  // ... but first probe the lower bound on the whole pool (the first
  // probe's share of nodes and steps) when it has at most this many pairs
  // of buffers alive together: on training traces the bound often fits,
  // and a search that places every buffer finds it where a window cannot
  // (regnet_train, 6,423 buffers, 2.7 M pairs: 1.0020x -> 1.0000x). The
  // search holds every pair (about 86 bytes each: regnet 229 MB, S_1's
  // 43 M pairs 2.1 GB).
  std::uint64_t whole_probe_max_pairs = 3'000'000;
  // ... and at most this many buffers (counting the pairs sorts the pool).
  std::size_t whole_probe_max_buffers = 65'536;
};

struct ExactResult {
  std::vector<Offset> offsets;   // absolute offsets (reserved prefix incl.)
  Bytes height = 0;              // max(offset + size), 0 for no buffers
  bool found = false;            // offsets hold a valid placement
  bool proven_optimal = false;   // minimizeHeight: height is the minimum
  bool proven_infeasible = false;  // solveWithinCapacity: nothing fits
  Bytes proven_bound = 0;        // no placement is lower than this
  std::uint64_t nodes = 0;       // search nodes spent
  std::uint64_t steps = 0;       // search steps spent (ExactParams::step_limit)
  bool stopped = false;          // the time limit or the stop flag ended it
};

// Is there a placement with max(offset + size) <= capacity? Honours
// alignment (any >= 1), pins, gaps, the reserved prefix and in-place
// groups (pool_util.h). Ignores extra_padding and problem.capacity.
ExactResult solveWithinCapacity(const PoolProblem& problem, Bytes capacity,
                                const ExactParams& params);

// Lowers the height of `incumbent` (a valid placement: absolute offsets)
// toward `lower_bound` (see the header). found is always true.
ExactResult minimizeHeight(const PoolProblem& problem,
                           const std::vector<Offset>& incumbent,
                           Bytes lower_bound, const ExactParams& params);

// The same on a problem that is already merged (pool::mergeInplace's
// output, as the search stages hold it), without merging it again: on a
// pool of a million buffers the copy is 144 MB.
ExactResult minimizeMergedHeight(const PoolProblem& merged,
                                 const std::vector<Offset>& incumbent,
                                 Bytes lower_bound, const ExactParams& params);

}  // namespace memplan::exact

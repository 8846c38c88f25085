// What the offset-based algorithms (best_fit, first_fit, local_search,
// exact, auto) share: the merged problem they solve, the skeleton that runs
// them, and an independent check of their placements.
//
// Occupancy. A buffer holds bytes [offset, offset + size) over its lifetime
// [start, end), except inside its gaps (Buffer::gaps): there it holds the
// gap's window [offset + lo, offset + hi), or nothing when the gap has no
// window. Its *segments* list that occupancy piece by piece.
//
// In-place groups. A buffer whose `inplace_base` names another shares its
// storage: one offset for the whole group (chains included). The group is
// solved as ONE buffer with gaps (groupSegments): where no member is live
// it has a gap without a window, where a chain of overlapping members
// holds less than the group's largest, a gap with that chain's window. So
// the holes in a group's lifetime stay usable by other buffers (an XLA
// colocated pair with a hole between its members packs as tightly as two
// separate buffers would), while no two members of a group are ever
// checked against each other. size = the members' largest extent,
// alignment = the least common multiple of theirs, pin = the members' pin
// (two different pins: PlanError), hint = the first member's.
//
// The merged problem is also normalized: alignment >= 1, end > start, gaps
// clipped to the lifetime, merged where adjacent and equal.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/algorithm.h"

namespace memplan::pool {

// Bytes [lo, hi) counted from the buffer's offset, held over [start, end).
struct Segment {
  TimeValue start = 0, end = 0;
  Bytes lo = 0, hi = 0;
};
// Appends the buffer's segments in time order (none for a zero-size
// buffer).
void segmentsOf(const Buffer& b, std::vector<Segment>& out);
// The occupancy of an in-place group (members share one offset), as the
// verifier sees it: members live at overlapping times form a chain that
// holds the hull of their windows from the chain's first step to its last;
// between chains the group holds nothing. Appends the chains in time order.
void groupSegments(const std::vector<const Buffer*>& members, std::vector<Segment>& out);

// Bytes entering (+) or leaving (-) the live set at step t.
struct LoadDelta {
  TimeValue t;
  std::int64_t sign;  // +1 / -1
  Bytes bytes;
};
// The most bytes live at once over `deltas`, and the first step where they
// are (the first delta's step when nothing is ever live). Ends come before
// starts at equal steps: lifetimes are half-open. Sorts `deltas`.
struct LoadPeak {
  Bytes live = 0;
  TimeValue step = 0;
};
LoadPeak loadPeak(std::vector<LoadDelta>& deltas);

// How two buffers that are live together constrain their offsets: b at x_b
// is clear of a at x_a iff x_b >= x_a + above (b above a) or
// x_b + below <= x_a (b below a). For plain buffers above = a.size and
// below = b.size. Conservative with windows: b must clear a's highest
// window when above it at any shared step.
struct Clearance {
  Bytes above = 0;
  Bytes below = 0;
};
// nullopt when the two never hold bytes at the same step.
std::optional<Clearance> clearance(const Buffer& a, const Buffer& b);

struct MergedProblem {
  // One buffer per group, ids 0..m-1: a copy when some buffer had to be
  // merged or normalized, else the source problem itself (a million
  // buffers copied are 144 MB), valid while the source lives.
  const PoolProblem& pool() const { return source ? *source : own; }
  std::size_t size() const { return member_begin.empty() ? 0 : member_begin.size() - 1; }
  // Merged buffer g's originals, in insertion order (the first is the base).
  std::span<const BufferId> members(BufferId g) const {
    const auto b = static_cast<std::size_t>(member_begin[static_cast<std::size_t>(g)]);
    const auto e = static_cast<std::size_t>(member_begin[static_cast<std::size_t>(g) + 1]);
    return {member_ids.data() + b, e - b};
  }
  std::vector<BufferId> group_of;   // original buffer -> merged buffer
  bool merged_any = false;          // some group has more than one member
  // Placing the merged problem is exactly placing the original one: no
  // member of a group has a window starting above its offset (the hull of
  // such windows would cover bytes no member holds).
  bool exact = true;
  PoolProblem own;                     // pool() when it is a copy
  const PoolProblem* source = nullptr;  // pool() when it is the source
  // members(g) = member_ids[member_begin[g] .. member_begin[g + 1]).
  std::vector<std::int32_t> member_begin;
  std::vector<BufferId> member_ids;
};

// Root of each buffer's inplace_base chain (itself when it has none); the
// one definition every algorithm uses (memplan::detail, pool_util.cpp).
// Throws InputError on a dangling index or a cycle.
}  // namespace memplan::pool
namespace memplan::detail {
std::vector<BufferId> inplaceRoots(const PoolProblem& problem);
}  // namespace memplan::detail
namespace memplan::pool {

// Throws InputError when an inplace_base is out of range or gaps are
// malformed (unsorted, overlapping, window outside [0, size)); PlanError
// when a group's members are pinned at different offsets or its alignment
// overflows.
// The result may refer to `problem` (MergedProblem::pool()): not from a
// temporary.
MergedProblem mergeInplace(const PoolProblem& problem);
MergedProblem mergeInplace(PoolProblem&&) = delete;

// Offsets of the merged buffers -> offsets of the original buffers.
std::vector<Offset> expandOffsets(const MergedProblem& merged,
                                  const std::vector<Offset>& merged_offsets);
// Offsets of the original buffers -> offsets of the merged buffers (each
// group's first member's). Throws std::out_of_range when `offsets` has too
// few entries.
std::vector<Offset> mergedOffsets(const MergedProblem& merged, const std::vector<Offset>& offsets);

// max(offset + size) over the buffers, at least the reserved prefix.
Bytes placementHeight(const PoolProblem& problem, const std::vector<Offset>& offsets);

// Pool bytes of a placement: height plus extra_padding when any buffer exists.
Bytes poolSize(const PoolProblem& problem, const std::vector<Offset>& offsets);

// Independent safety check of a placement (sweep over segments, O(n log n)):
// in bounds, aligned, pins honoured, members of an in-place group at one
// offset, and no two groups holding one byte at one step (members of a
// group are exempt from each other: they share storage by design). The
// verifier's rule, and what ExecuTorch's plans are held to. Empty string =
// valid, else one line naming the first problem found.
std::string checkPlacement(const PoolProblem& problem, const std::vector<Offset>& offsets);

// Throws PlanError when pinned buffers of a merged problem collide, sit
// inside the reserved prefix or are not aligned.
void checkPins(const PoolProblem& merged);

// Fills a PoolSolution (mem_obj_ids all 0) from absolute offsets.
PoolSolution makeSolution(const PoolProblem& problem, std::vector<Offset> offsets,
                          std::string algorithm, Bytes lower_bound, std::uint64_t work);

// ---------------------------------------------------------------------------
// The skeleton every offset-based algorithm runs (solveOffsets):
//  1. merge in-place groups (mergeInplace) and check the pins (checkPins);
//  2. the lower bound of the pool, and the height to aim at (the bound
//     without extra_padding; with merged groups at least the merged
//     problem's own bound);
//  3. place the merged buffers (the algorithm's own step);
//  4. move hinted buffers to their hints where that is free and keeps the
//     height (moveToHints);
//  5. expand the groups' offsets to their members and fill the solution:
//     proven optimal at the bound or when the algorithm proved it.

struct Bounds {
  Bytes pool_bound = 0;   // lowerBound(problem): pool bytes, padding included
  Bytes target = 0;       // height no placement of the merged problem beats
                          // as far as the bound knows (padding excluded)
  Bytes padding = 0;      // extra_padding when any buffer exists
  bool exact = true;      // MergedProblem::exact: proofs on the merged
                          // problem hold for the pool
};

struct Placement {
  std::vector<Offset> offsets;   // one per merged buffer
  std::string label;             // names the winner, e.g. "best_fit(size)"
  std::uint64_t work = 0;
  bool proven_optimal = false;   // the height is the minimum (search proof)
  Bytes proven_height = 0;       // no placement is lower than this (0: none)
};

using PlaceFn = std::function<Placement(const MergedProblem&, const Bounds&)>;
PoolSolution solveOffsets(const PoolProblem& problem, const PlaceFn& place);

// Moves each hinted buffer (not pinned) to its hint when the hint is
// aligned, above the prefix, free of every other buffer while it lives and
// not above the current height. In buffer order; returns how many moved.
std::size_t moveToHints(const PoolProblem& merged, std::vector<Offset>& offsets);

}  // namespace memplan::pool

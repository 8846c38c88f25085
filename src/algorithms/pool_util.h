// Helpers shared by the offset-based algorithms (heuristics, local search,
// exact search, auto).
//
// In-place pairs. A buffer whose `inplace_base` names another must sit at
// its base's offset. The offset-based algorithms honour that safely by
// merging every such group (chains included) into one buffer before placing:
// lifetime = hull of the members' lifetimes, size / nbytes / alignment = the
// members' maximum, fixed offset = the members' pin (two different pins are
// an InputError). After placing, expandOffsets gives every member its
// group's offset. The merged buffer covers every member's bytes over every
// member's lifetime, so no other buffer can touch them.
//
// The merged problem is also normalized: alignment >= 1, end > start.
#pragma once

#include <string>
#include <vector>

#include "memplan/algorithm.h"

namespace memplan::pool {

struct MergedProblem {
  PoolProblem problem;              // one buffer per group, ids 0..m-1
  std::vector<BufferId> group_of;   // original buffer -> merged buffer
  std::vector<std::vector<BufferId>> members;  // merged buffer -> originals
  bool merged_any = false;          // some group has more than one member
};

// Throws InputError when an inplace_base is out of range or a group has two
// different fixed offsets; PlanError never.
MergedProblem mergeInplace(const PoolProblem& problem);

// Offsets of the merged buffers -> offsets of the original buffers.
std::vector<Offset> expandOffsets(const MergedProblem& merged,
                                  const std::vector<Offset>& merged_offsets);

// max(offset + size) over the buffers, at least the reserved prefix.
Bytes placementHeight(const PoolProblem& problem, const std::vector<Offset>& offsets);

// Pool bytes of a placement: height plus extra_padding when any buffer exists.
Bytes poolSize(const PoolProblem& problem, const std::vector<Offset>& offsets);

// Independent safety check of a placement (sweep, O(n log n)): in bounds,
// aligned, pins honoured, members of an in-place group at one offset, and
// no two time-overlapping groups share a byte (each group checked as its
// merged buffer: stricter than the verifier). Empty string = valid, else
// one line naming the first problem found.
std::string checkPlacement(const PoolProblem& problem, const std::vector<Offset>& offsets);

// The same check with each buffer on its own lifetime and size, members
// of one in-place group exempt from each other (the verifier's rule; what
// ExecuTorch's plans are held to). O(n x live buffers).
std::string checkPlacementExact(const PoolProblem& problem, const std::vector<Offset>& offsets);

// Fills a PoolSolution (mem_obj_ids all 0) from absolute offsets.
PoolSolution makeSolution(const PoolProblem& problem, std::vector<Offset> offsets,
                          std::string algorithm, Bytes lower_bound, std::uint64_t work);

}  // namespace memplan::pool

// An independent check of one pool's placement, for tests.
//
// The algorithms (and auto, to accept its candidates) use
// pool::checkPlacement; a test that validated their plans with the same
// function could not see a bug in it. This checker shares no code with
// src/: it rebuilds each buffer's occupancy from the problem as documented
// in memplan/algorithm.h and memplan/types.h and checks it from scratch.
//
// Rules (the verifier's):
//  - one offset per buffer; aligned; a buffer holding bytes lies after the
//    reserved prefix; a pinned buffer sits at its pin; an in-place result
//    (inplace_base) sits at its base's offset;
//  - a buffer holds [offset, offset + size) over [start, end), except in a
//    gap, where it holds the gap's window [offset + lo, offset + hi), or
//    nothing; a zero-size buffer holds nothing;
//  - the members of an in-place group (buffers joined by inplace_base) share
//    storage by design and are not checked against each other; at each step
//    the group holds the hull of its live members' bytes;
//  - no two groups hold one byte at one step.
//
// Groups are cut into rectangles (a time range x a byte range) that are
// disjoint inside a group, then one sweep over time checks that no two
// rectangles meet: O(n log n) for n buffers (k^2 for a group of k members).
#pragma once

#include <string>
#include <vector>

#include "memplan/algorithm.h"

namespace memplan::test {

// "" when the placement is valid, else one line naming the first problem.
std::string checkPoolPlacement(const PoolProblem& problem, const std::vector<Offset>& offsets);

// max(offset + size) over the buffers that hold bytes, at least the
// reserved prefix, plus extra_padding when the pool has any buffer: the
// pool bytes a placement needs.
Bytes placementBytes(const PoolProblem& problem, const std::vector<Offset>& offsets);

}  // namespace memplan::test

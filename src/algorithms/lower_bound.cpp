// Lower bound of a pool: no placement can be smaller.
//
//  1. Every live buffer needs its own bytes, so at each time the live sizes
//     add up (sweep over start/end events, O(n log n)). Inside a gap a
//     buffer needs only its window's bytes, or none.
//  2. Members of an in-place group share one offset: the group needs the
//     bytes its chains of overlapping members hold (pool::groupSegments),
//     not the sum of its members.
//  3. Everything sits above the reserved prefix; the lowest live buffer at
//     the first offset its alignment allows there.
//  4. A pinned buffer reaches fixed_offset + size whatever else happens.
//  5. extra_padding follows a used pool.
#include <algorithm>
#include <map>
#include <set>
#include <numeric>
#include <vector>

#include "algorithms/pool_util.h"
#include "memplan/algorithm.h"

namespace memplan {

namespace {

using pool::LoadDelta;

// An in-place group's occupancy (pool::groupSegments), as deltas.
void groupDeltas(const std::vector<const Buffer*>& members, std::vector<LoadDelta>& out) {
  std::vector<pool::Segment> chains;
  pool::groupSegments(members, chains);
  for (const pool::Segment& c : chains) {
    out.push_back({c.start, +1, c.hi - c.lo});
    out.push_back({c.end, -1, c.hi - c.lo});
  }
}

}  // namespace

Bytes lowerBound(const PoolProblem& problem) {
  const auto& bufs = problem.buffers;
  const auto n = static_cast<BufferId>(bufs.size());
  if (n == 0) return problem.reserved;

  // Members of each in-place group, by chain root; singletons go straight
  // to the sweep.
  const std::vector<BufferId> root = detail::inplaceRoots(problem);
  bool grouped = false;
  for (BufferId i = 0; i < n; ++i) grouped |= root[i] != i;
  std::vector<std::int32_t> group_size(n, 0);
  for (BufferId i = 0; grouped && i < n; ++i) ++group_size[root[i]];
  std::map<BufferId, std::vector<const Buffer*>> groups;
  std::vector<LoadDelta> deltas;
  deltas.reserve(2 * static_cast<std::size_t>(n));
  Bytes min_base = 0;
  Bytes pinned_top = 0;
  std::vector<pool::Segment> segs;
  for (BufferId i = 0; i < n; ++i) {
    const Buffer& b = bufs[i];
    if (b.size == 0) continue;  // occupies nothing, wherever it is
    if (b.fixed_offset) pinned_top = std::max(pinned_top, *b.fixed_offset + b.size);
    // The lowest buffer starts at its own alignment above the prefix (with
    // alignments that are not powers of two the smallest alignment does not
    // give the lowest start).
    const Bytes start = alignUp(problem.reserved, std::max<Bytes>(1, b.alignment)).value_or(kMaxBytes);
    min_base = min_base == 0 ? start : std::min(min_base, start);
    if (b.end <= b.start) continue;
    if (grouped && group_size[root[i]] > 1) {
      groups[root[i]].push_back(&b);
      continue;
    }
    if (b.gaps.empty()) {
      deltas.push_back({b.start, +1, b.size});
      deltas.push_back({b.end, -1, b.size});
      continue;
    }
    segs.clear();
    pool::segmentsOf(b, segs);
    for (const pool::Segment& s : segs) {
      deltas.push_back({s.start, +1, s.hi - s.lo});
      deltas.push_back({s.end, -1, s.hi - s.lo});
    }
  }
  for (auto& [r, members] : groups) groupDeltas(members, deltas);

  const Bytes peak = pool::loadPeak(deltas).live;
  const Bytes base = min_base == 0 ? problem.reserved : min_base;
  Bytes bound = std::max(peak > 0 ? base + peak : problem.reserved, pinned_top);
  return bound + problem.extra_padding;
}

}  // namespace memplan

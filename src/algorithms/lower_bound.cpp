// Lower bound of a pool: no placement can be smaller.
//
//  1. Every live buffer needs its own bytes, so at each time the live sizes
//     add up (sweep over start/end events, O(n log n)).
//  2. Members of an in-place group share one offset: at each time the group
//     needs only its largest live member, not their sum.
//  3. Everything sits above the reserved prefix; the lowest live buffer at
//     an offset that is a multiple of the smallest alignment.
//  4. A pinned buffer reaches fixed_offset + size whatever else happens.
//  5. extra_padding follows a used pool.
#include <algorithm>
#include <map>
#include <set>
#include <numeric>
#include <vector>

#include "memplan/algorithm.h"

namespace memplan {

namespace {

struct Delta {
  TimeValue t;
  std::int64_t bytes_sign;  // +1 / -1
  Bytes bytes;
};

BufferId root(std::vector<BufferId>& parent, BufferId x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

// Step function "largest live member" of one in-place group, as deltas.
void groupDeltas(const std::vector<const Buffer*>& members, std::vector<Delta>& out) {
  std::vector<std::pair<TimeValue, const Buffer*>> ev;
  for (const Buffer* b : members) {
    if (b->size == 0 || b->end <= b->start) continue;
    ev.emplace_back(b->start, b);
    ev.emplace_back(b->end, b);
  }
  std::sort(ev.begin(), ev.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::multiset<Bytes> live;
  Bytes current = 0;
  for (std::size_t i = 0; i < ev.size();) {
    const TimeValue t = ev[i].first;
    for (; i < ev.size() && ev[i].first == t; ++i) {
      const Buffer* b = ev[i].second;
      if (b->start == t) live.insert(b->size);
      else live.erase(live.find(b->size));
    }
    const Bytes now = live.empty() ? 0 : *live.rbegin();
    if (now > current) out.push_back({t, +1, now - current});
    if (now < current) out.push_back({t, -1, current - now});
    current = now;
  }
}

}  // namespace

Bytes lowerBound(const PoolProblem& problem) {
  const auto& bufs = problem.buffers;
  const auto n = static_cast<BufferId>(bufs.size());
  if (n == 0) return problem.reserved;

  std::vector<BufferId> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  bool grouped = false;
  for (BufferId i = 0; i < n; ++i) {
    const BufferId base = bufs[i].inplace_base;
    if (base < 0 || base >= n) continue;
    const BufferId a = root(parent, i), b = root(parent, base);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
    grouped = true;
  }

  // Members of each in-place group, by root; singletons go straight to
  // the sweep.
  std::vector<std::int32_t> group_size(n, 0);
  for (BufferId i = 0; grouped && i < n; ++i) ++group_size[root(parent, i)];
  std::map<BufferId, std::vector<const Buffer*>> groups;
  std::vector<Delta> deltas;
  deltas.reserve(2 * static_cast<std::size_t>(n));
  Bytes min_align = 0;
  Bytes pinned_top = 0;
  for (BufferId i = 0; i < n; ++i) {
    const Buffer& b = bufs[i];
    if (b.size == 0) continue;  // occupies nothing, wherever it is
    if (b.fixed_offset) pinned_top = std::max(pinned_top, *b.fixed_offset + b.size);
    const Bytes a = std::max<Bytes>(1, b.alignment);
    min_align = min_align == 0 ? a : std::min(min_align, a);
    if (b.end <= b.start) continue;
    if (grouped && group_size[root(parent, i)] > 1) {
      groups[root(parent, i)].push_back(&b);
      continue;
    }
    deltas.push_back({b.start, +1, b.size});
    deltas.push_back({b.end, -1, b.size});
  }
  for (auto& [r, members] : groups) groupDeltas(members, deltas);

  // Ends before starts at equal times: lifetimes are half-open.
  std::sort(deltas.begin(), deltas.end(), [](const Delta& a, const Delta& b) {
    if (a.t != b.t) return a.t < b.t;
    return a.bytes_sign < b.bytes_sign;
  });
  Bytes live = 0, peak = 0;
  for (const Delta& d : deltas) {
    if (d.bytes_sign > 0) {
      live += d.bytes;
      peak = std::max(peak, live);
    } else {
      live -= d.bytes;
    }
  }
  Bytes base = problem.reserved;
  if (min_align > 1 && base % min_align != 0) base += min_align - base % min_align;
  Bytes bound = std::max(peak > 0 ? base + peak : problem.reserved, pinned_top);
  return bound + problem.extra_padding;
}

}  // namespace memplan

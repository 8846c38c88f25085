#include "algorithms/pool_util.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "algorithms/placer.h"

namespace memplan {

namespace detail {

// (declared in greedy.h and pool_util.h)
// Root of each buffer's inplace_base chain (itself when it has none).
// Throws InputError on a dangling index or a cycle.
std::vector<BufferId> inplaceRoots(const PoolProblem& problem) {
  const auto n = static_cast<BufferId>(problem.buffers.size());
  std::vector<BufferId> root(n, kNone);
  for (BufferId i = 0; i < n; ++i) {
    BufferId r = i;
    BufferId steps = 0;
    while (problem.buffers[r].inplace_base != kNone) {
      const BufferId next = problem.buffers[r].inplace_base;
      if (next < 0 || next >= n)
        throw InputError(fmt::format("pool {}: buffer '{}': inplace_base {} out of range",
                                     problem.mem_id, problem.buffers[r].name, next));
      if (root[next] != kNone) {  // already resolved
        r = root[next];
        break;
      }
      r = next;
      if (++steps > n)
        throw InputError(fmt::format("pool {}: buffer '{}': inplace_base chain forms a cycle",
                                     problem.mem_id, problem.buffers[i].name));
    }
    root[i] = r;
  }
  return root;
}

}  // namespace detail

}  // namespace memplan

namespace memplan::pool {

namespace {

// Clips gaps to the lifetime, drops empty ones and full windows, reads an
// empty window as none (the buffer holds no bytes there), merges
// equal neighbours; InputError when they are unsorted, overlap or hold a
// window outside [0, size).
void normalizeGaps(const PoolProblem& problem, Buffer& b) {
  if (b.gaps.empty()) return;
  std::vector<Gap> out;
  TimeValue last_end = std::numeric_limits<TimeValue>::min();
  for (const Gap& g : b.gaps) {
    if (g.end <= g.start || g.start < last_end)
      throw InputError(fmt::format("pool {}: buffer '{}': gaps must be non-empty, sorted and "
                                   "disjoint (gap [{}, {}))",
                                   problem.mem_id, b.name, g.start, g.end));
    last_end = g.end;
    if (g.window && (g.window->first > g.window->second || g.window->second > b.size))
      throw InputError(fmt::format("pool {}: buffer '{}': gap [{}, {}) window [{}, {}) is not "
                                   "inside [0, {})",
                                   problem.mem_id, b.name, g.start, g.end, g.window->first,
                                   g.window->second, b.size));
    Gap c = g;
    if (c.window && c.window->first == c.window->second) c.window.reset();  // holds no bytes
    c.start = std::max(c.start, b.start);
    c.end = std::min(c.end, b.end);
    if (c.end <= c.start) continue;
    if (c.window && c.window->first == 0 && c.window->second == b.size) continue;
    if (!out.empty() && out.back().end == c.start && out.back().window == c.window)
      out.back().end = c.end;
    else
      out.push_back(c);
  }
  b.gaps = std::move(out);
}

std::optional<Bytes> lcm(Bytes a, Bytes b) {
  const Bytes g = std::gcd(a, b);
  return checkedMul(a / g, b);
}

// Occupancy of an in-place group as gaps of the merged buffer `m` (whose
// lifetime and size are already the group's): no window where no chain of
// members is live, the chain's window where it is smaller than m.
void groupGaps(const std::vector<const Buffer*>& members, Buffer& m) {
  std::vector<Segment> chains;
  groupSegments(members, chains);
  std::vector<Gap> gaps;
  auto add = [&](TimeValue a, TimeValue b, std::optional<std::pair<Bytes, Bytes>> window) {
    if (b <= a) return;
    if (window && window->first == 0 && window->second == m.size) return;  // no gap
    if (!gaps.empty() && gaps.back().end == a && gaps.back().window == window)
      gaps.back().end = b;
    else
      gaps.push_back(Gap{a, b, window});
  };
  TimeValue cursor = m.start;
  for (const Segment& c : chains) {
    add(cursor, c.start, std::nullopt);
    add(c.start, c.end, std::pair(c.lo, c.hi));
    cursor = c.end;
  }
  add(cursor, m.end, std::nullopt);
  m.gaps = std::move(gaps);
}

}  // namespace

LoadPeak loadPeak(std::vector<LoadDelta>& deltas) {
  std::sort(deltas.begin(), deltas.end(), [](const LoadDelta& a, const LoadDelta& b) {
    if (a.t != b.t) return a.t < b.t;
    return a.sign < b.sign;
  });
  LoadPeak peak;
  if (!deltas.empty()) peak.step = deltas.front().t;
  Bytes live = 0;
  for (const LoadDelta& d : deltas) {
    if (d.sign > 0) {
      live += d.bytes;
      if (live > peak.live) peak = {live, d.t};
    } else {
      live -= d.bytes;
    }
  }
  return peak;
}

void segmentsOf(const Buffer& b, std::vector<Segment>& out) {
  if (b.size == 0) return;
  TimeValue cursor = b.start;
  for (const Gap& g : b.gaps) {
    const TimeValue gs = std::max(g.start, cursor), ge = std::min(g.end, b.end);
    if (ge <= gs) continue;
    if (gs > cursor) out.push_back({cursor, gs, 0, b.size});
    if (g.window && g.window->second > g.window->first)
      out.push_back({gs, ge, g.window->first, std::min(g.window->second, b.size)});
    cursor = ge;
  }
  if (cursor < b.end) out.push_back({cursor, b.end, 0, b.size});
}

void groupSegments(const std::vector<const Buffer*>& members, std::vector<Segment>& out) {
  std::vector<Segment> segs;
  for (const Buffer* b : members) segmentsOf(*b, segs);
  std::sort(segs.begin(), segs.end(), [](const Segment& a, const Segment& b) {
    return a.start != b.start ? a.start < b.start : a.end < b.end;
  });
  for (const Segment& s : segs) {
    if (!out.empty() && s.start < out.back().end) {
      Segment& c = out.back();
      c.end = std::max(c.end, s.end);
      c.lo = std::min(c.lo, s.lo);
      c.hi = std::max(c.hi, s.hi);
    } else {
      out.push_back(s);
    }
  }
}

std::optional<Clearance> clearance(const Buffer& a, const Buffer& b) {
  if (a.size == 0 || b.size == 0 || !a.overlaps(b)) return std::nullopt;
  if (a.gaps.empty() && b.gaps.empty()) return Clearance{a.size, b.size};
  thread_local std::vector<Segment> sa, sb;
  sa.clear();
  sb.clear();
  segmentsOf(a, sa);
  segmentsOf(b, sb);
  std::optional<Clearance> c;
  for (std::size_t i = 0, j = 0; i < sa.size() && j < sb.size();) {
    const Segment &x = sa[i], &y = sb[j];
    if (x.start < y.end && y.start < x.end) {
      if (!c) c = Clearance{0, 0};
      c->above = std::max(c->above, x.hi > y.lo ? x.hi - y.lo : 0);
      c->below = std::max(c->below, y.hi > x.lo ? y.hi - x.lo : 0);
    }
    if (x.end <= y.end) ++i; else ++j;
  }
  return c;
}

namespace {

// True when merging would copy every buffer unchanged: no group, ids in
// place, alignments and lifetimes already as the merged problem keeps
// them, no gaps to normalize.
bool alreadyMerged(const PoolProblem& problem, const std::vector<BufferId>& root) {
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (root[i] != static_cast<BufferId>(i) || b.id != static_cast<BufferId>(i) ||
        b.inplace_base != kNone || b.alignment < 1 || b.end <= b.start || !b.gaps.empty())
      return false;
  }
  return true;
}

}  // namespace

MergedProblem mergeInplace(const PoolProblem& problem) {
  const auto n = static_cast<BufferId>(problem.buffers.size());
  MergedProblem out;

  // A group: the buffers whose chains end at one root.
  const std::vector<BufferId> root = detail::inplaceRoots(problem);
  for (BufferId i = 0; i < n; ++i) out.merged_any |= root[i] != i;

  // Groups numbered by their first member, so the merged order follows the
  // original insertion order; members listed flat, group by group.
  out.group_of.assign(n, kNone);
  std::vector<BufferId> group_of_root(n, kNone);
  BufferId groups = 0;
  for (BufferId i = 0; i < n; ++i) {
    const BufferId r = root[i];
    if (group_of_root[r] == kNone) group_of_root[r] = groups++;
    out.group_of[i] = group_of_root[r];
  }
  out.member_begin.assign(static_cast<std::size_t>(groups) + 1, 0);
  for (BufferId i = 0; i < n; ++i) ++out.member_begin[static_cast<std::size_t>(out.group_of[i]) + 1];
  for (BufferId g = 0; g < groups; ++g) out.member_begin[g + 1] += out.member_begin[g];
  out.member_ids.resize(n);
  {
    std::vector<std::int32_t> next(out.member_begin.begin(), out.member_begin.end() - 1);
    for (BufferId i = 0; i < n; ++i) out.member_ids[static_cast<std::size_t>(next[out.group_of[i]]++)] = i;
  }
  if (alreadyMerged(problem, root)) {
    out.source = &problem;
    return out;
  }

  out.own.mem_id = problem.mem_id;
  out.own.reserved = problem.reserved;
  out.own.extra_padding = problem.extra_padding;
  out.own.capacity = problem.capacity;
  out.own.buffers.resize(static_cast<std::size_t>(groups));
  PoolProblem normalized;  // members with normalized gaps (groups only)
  for (BufferId g = 0; g < groups; ++g) {
    Buffer& m = out.own.buffers[static_cast<std::size_t>(g)];
    const std::span<const BufferId> members = out.members(g);
    const Buffer& first = problem.buffers[members.front()];
    m = first;
    m.id = static_cast<BufferId>(g);
    m.inplace_base = kNone;
    m.alignment = std::max<Bytes>(1, first.alignment);
    if (m.end <= m.start) m.end = m.start + 1;  // an empty lifetime still needs a home
    if (members.size() == 1) {
      normalizeGaps(problem, m);
      continue;
    }
    m.gaps.clear();
    m.hint.reset();
    m.size = 0;
    m.nbytes = 0;
    normalized.buffers.clear();
    normalized.buffers.reserve(members.size());
    for (BufferId i : members) {
      Buffer b = problem.buffers[i];
      if (b.end <= b.start) b.end = b.start + 1;
      normalizeGaps(problem, b);
      for (const Gap& gap : b.gaps)
        if (gap.window && gap.window->first > 0) out.exact = false;
      m.start = std::min(m.start, b.start);
      m.end = std::max(m.end, b.end);
      m.size = std::max(m.size, b.size);
      m.nbytes = std::max(m.nbytes, b.nbytes);
      const auto a = lcm(m.alignment, std::max<Bytes>(1, b.alignment));
      if (!a || *a > kMaxBytes)
        throw PlanError(fmt::format("pool {}: buffer '{}' shares storage with '{}': their "
                                    "alignments have no common multiple below {}",
                                    problem.mem_id, b.name, first.name, kMaxBytes));
      m.alignment = *a;
      if (!m.hint && b.hint) m.hint = b.hint;
      if (b.fixed_offset) {
        if (m.fixed_offset && *m.fixed_offset != *b.fixed_offset)
          throw PlanError(fmt::format(
              "pool {}: buffer {} ('{}') shares storage with '{}' but is pinned at {} "
              "instead of {}",
              problem.mem_id, i, b.name, first.name, *b.fixed_offset, *m.fixed_offset));
        m.fixed_offset = b.fixed_offset;
      }
      normalized.buffers.push_back(std::move(b));
    }
    if (m.size > 0) {
      std::vector<const Buffer*> ptrs;
      for (const Buffer& b : normalized.buffers) ptrs.push_back(&b);
      groupGaps(ptrs, m);
    }
  }
  return out;
}

std::vector<Offset> expandOffsets(const MergedProblem& merged,
                                  const std::vector<Offset>& merged_offsets) {
  std::vector<Offset> out(merged.group_of.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = merged_offsets[merged.group_of[i]];
  return out;
}

std::vector<Offset> mergedOffsets(const MergedProblem& merged, const std::vector<Offset>& offsets) {
  std::vector<Offset> out(merged.size());
  for (std::size_t g = 0; g < out.size(); ++g)
    out[g] = offsets.at(merged.members(static_cast<BufferId>(g)).front());
  return out;
}

Bytes placementHeight(const PoolProblem& problem, const std::vector<Offset>& offsets) {
  Bytes h = problem.reserved;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i)
    if (problem.buffers[i].size > 0) h = std::max(h, offsets[i] + problem.buffers[i].size);
  return h;
}

Bytes poolSize(const PoolProblem& problem, const std::vector<Offset>& offsets) {
  Bytes h = placementHeight(problem, offsets);
  if (!problem.buffers.empty()) h += problem.extra_padding;
  return h;
}

std::string checkPlacement(const PoolProblem& problem, const std::vector<Offset>& offsets) {
  const std::size_t n = problem.buffers.size();
  if (offsets.size() != n)
    return fmt::format("{} offsets for {} buffers", offsets.size(), n);
  MergedProblem merged;
  try {
    merged = mergeInplace(problem);
  } catch (const std::exception& e) {
    return e.what();
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    const Offset o = offsets[i];
    const Bytes align = std::max<Bytes>(1, b.alignment);
    if (o % align != 0)
      return fmt::format("buffer {} ('{}') at {} is not aligned to {}", i, b.name, o, align);
    if (o < problem.reserved)
      return fmt::format("buffer {} ('{}') at {} is inside the reserved prefix ({} bytes)", i,
                         b.name, o, problem.reserved);
    if (o > kMaxBytes || b.size > kMaxBytes - o)
      return fmt::format("buffer {} ('{}') at {} overflows", i, b.name, o);
    if (b.fixed_offset && *b.fixed_offset != o)
      return fmt::format("buffer {} ('{}') at {} is pinned at {}", i, b.name, o, *b.fixed_offset);
    const BufferId first = merged.members(merged.group_of[i]).front();
    if (offsets[first] != o)
      return fmt::format("buffer {} ('{}') at {} but its in-place base '{}' is at {}", i, b.name,
                         o, problem.buffers[first].name, offsets[first]);
  }
  // Sweep over the groups' segments: ends before starts at the same time
  // (half-open); the live byte ranges, ordered by their start, must stay
  // disjoint, so checking the two neighbours of each insertion suffices.
  struct Event {
    TimeValue t;
    bool start;
    BufferId g;
    Offset lo, hi;  // absolute bytes
  };
  std::vector<Event> events;
  events.reserve(2 * merged.pool().buffers.size());
  std::vector<Segment> segs;
  for (const Buffer& b : merged.pool().buffers) {
    segs.clear();
    segmentsOf(b, segs);
    const Offset o = offsets[merged.members(b.id).front()];
    for (const Segment& s : segs) {
      events.push_back({s.start, true, b.id, o + s.lo, o + s.hi});
      events.push_back({s.end, false, b.id, o + s.lo, o + s.hi});
    }
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.t != b.t) return a.t < b.t;
    if (a.start != b.start) return !a.start;
    return a.g < b.g;
  });
  std::map<Offset, std::pair<Offset, BufferId>> live;  // lo -> (hi, group)
  auto name = [&](BufferId g) { return problem.buffers[merged.members(g).front()].name; };
  for (const Event& e : events) {
    if (!e.start) {
      live.erase(e.lo);
      continue;
    }
    auto next = live.lower_bound(e.lo);
    if (next != live.end() && next->first < e.hi)
      return fmt::format("buffers '{}' and '{}' overlap in time and bytes (bytes {} and {})",
                         name(e.g), name(next->second.second), e.lo, next->first);
    if (next != live.begin()) {
      auto prev = std::prev(next);
      if (prev->second.first > e.lo)
        return fmt::format("buffers '{}' and '{}' overlap in time and bytes (bytes {} and {})",
                           name(e.g), name(prev->second.second), e.lo, prev->first);
    }
    live.emplace(e.lo, std::pair(e.hi, e.g));
  }
  return {};
}

void checkPins(const PoolProblem& merged) {
  PoolProblem pins;
  pins.mem_id = merged.mem_id;
  pins.reserved = merged.reserved;
  std::vector<Offset> offsets;
  for (const Buffer& b : merged.buffers) {
    if (!b.fixed_offset) continue;
    if (*b.fixed_offset > kMaxBytes || b.size > kMaxBytes - *b.fixed_offset)
      throw PlanError(fmt::format("pool {}: buffer '{}' pinned at {} overflows", merged.mem_id,
                                  b.name, *b.fixed_offset));
    pins.buffers.push_back(b);
    pins.buffers.back().id = static_cast<BufferId>(offsets.size());
    offsets.push_back(*b.fixed_offset);
  }
  if (pins.buffers.empty()) return;
  const std::string err = checkPlacement(pins, offsets);
  if (!err.empty())
    throw PlanError(fmt::format("pool {}: pinned buffers cannot be honoured: {}", merged.mem_id, err));
}

PoolSolution makeSolution(const PoolProblem& problem, std::vector<Offset> offsets,
                          std::string algorithm, Bytes lower_bound, std::uint64_t work) {
  PoolSolution s;
  s.size = poolSize(problem, offsets);
  s.offsets = std::move(offsets);
  s.mem_obj_ids.assign(problem.buffers.size(), 0);
  s.algorithm = std::move(algorithm);
  s.lower_bound = lower_bound;
  s.proven_optimal = s.size <= lower_bound;
  s.work = work;
  return s;
}

PoolSolution solveOffsets(const PoolProblem& problem, const PlaceFn& place) {
  const MergedProblem merged = mergeInplace(problem);
  checkPins(merged.pool());
  Bounds bounds;
  bounds.pool_bound = lowerBound(problem);
  bounds.padding = problem.buffers.empty() ? 0 : problem.extra_padding;
  bounds.target = bounds.pool_bound - bounds.padding;
  if (merged.merged_any)
    bounds.target = std::max(bounds.target, lowerBound(merged.pool()) - bounds.padding);
  bounds.exact = merged.exact;
  Placement p = place(merged, bounds);
  moveToHints(merged.pool(), p.offsets);
  const Bytes height = placementHeight(merged.pool(), p.offsets);
  // What is proven about the pool: the bound, raised by the algorithm's
  // own proof (never above the plan) when the merged problem is the
  // original one.
  Bytes proven = bounds.pool_bound;
  if (merged.exact) {
    proven = std::max(proven, bounds.target + bounds.padding);
    if (p.proven_height > 0) proven = std::max(proven, p.proven_height + bounds.padding);
    if (p.proven_optimal) proven = std::max(proven, height + bounds.padding);
  }
  PoolSolution s = makeSolution(problem, expandOffsets(merged, p.offsets), std::move(p.label),
                                std::min(proven, height + bounds.padding), p.work);
  return s;
}

std::size_t moveToHints(const PoolProblem& merged, std::vector<Offset>& offsets) {
  std::vector<BufferId> hinted;
  for (const Buffer& b : merged.buffers)
    if (b.hint && !b.fixed_offset && offsets[b.id] != *b.hint) hinted.push_back(b.id);
  if (hinted.empty()) return 0;
  const Bytes height = placementHeight(merged, offsets);
  heur::Placer placer(merged);
  std::vector<BufferId> all(merged.buffers.size());
  std::iota(all.begin(), all.end(), 0);
  placer.markAll(all, offsets);
  std::size_t moved = 0;
  for (BufferId id : hinted) {
    const Buffer& b = merged.buffers[id];
    const Offset h = *b.hint;
    if (h % b.alignment != 0 || h < merged.reserved || h > height || b.size > height - h) continue;
    placer.unmark(id);
    if (placer.fits(id, h)) {
      offsets[id] = h;
      ++moved;
    }
    placer.mark(id, offsets[id]);
  }
  return moved;
}

}  // namespace memplan::pool

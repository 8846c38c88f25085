#include "support/placement_check.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace memplan::test {
namespace {

// Bytes [lo, hi) over steps [t0, t1); `who` names it in messages.
struct Rect {
  TimeValue t0 = 0, t1 = 0;
  Offset lo = 0, hi = 0;
  BufferId who = 0;
};

// The pieces one buffer holds, bytes counted from its own offset.
void piecesOf(const Buffer& b, BufferId id, std::vector<Rect>& out) {
  if (b.size == 0) return;
  const TimeValue end = b.end > b.start ? b.end : b.start + 1;
  std::vector<Gap> gaps = b.gaps;
  std::sort(gaps.begin(), gaps.end(),
            [](const Gap& x, const Gap& y) { return x.start < y.start; });
  TimeValue cursor = b.start;
  for (const Gap& g : gaps) {
    const TimeValue gs = std::max(g.start, cursor), ge = std::min(g.end, end);
    if (ge <= gs) continue;
    if (gs > cursor) out.push_back({cursor, gs, 0, b.size, id});
    if (g.window) {
      const Bytes hi = std::min(g.window->second, b.size);
      if (hi > g.window->first) out.push_back({gs, ge, g.window->first, hi, id});
    }
    cursor = ge;
  }
  if (cursor < end) out.push_back({cursor, end, 0, b.size, id});
}

// The rectangles of an in-place group: at each step the hull of its live
// members' pieces (disjoint in time by construction).
void groupRects(std::vector<Rect>& pieces, std::vector<Rect>& out) {
  if (pieces.size() <= 1) {
    out.insert(out.end(), pieces.begin(), pieces.end());
    return;
  }
  struct Event {
    TimeValue t;
    bool start;
    std::size_t i;
  };
  std::vector<Event> events;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    events.push_back({pieces[i].t0, true, i});
    events.push_back({pieces[i].t1, false, i});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.t, a.start, a.i) < std::tie(b.t, b.start, b.i);
  });
  std::multiset<Offset> los;
  std::multiset<std::pair<Offset, BufferId>> his;
  for (std::size_t e = 0; e < events.size();) {
    const TimeValue t = events[e].t;
    for (; e < events.size() && events[e].t == t; ++e) {
      const Rect& p = pieces[events[e].i];
      if (events[e].start) {
        los.insert(p.lo);
        his.insert({p.hi, p.who});
      } else {
        los.erase(los.find(p.lo));
        his.erase(his.find({p.hi, p.who}));
      }
    }
    if (los.empty() || e == events.size()) continue;
    const TimeValue next = events[e].t;
    const Offset lo = *los.begin();
    const auto [hi, who] = *his.rbegin();
    if (!out.empty() && out.back().t1 == t && out.back().lo == lo && out.back().hi == hi &&
        out.back().who == who)
      out.back().t1 = next;  // same bytes as the step before: one rectangle
    else
      out.push_back({t, next, lo, hi, who});
  }
}

}  // namespace

std::string checkPoolPlacement(const PoolProblem& problem, const std::vector<Offset>& offsets) {
  const auto n = static_cast<BufferId>(problem.buffers.size());
  if (offsets.size() != problem.buffers.size())
    return fmt::format("{} offsets for {} buffers", offsets.size(), n);
  const auto name = [&](BufferId i) { return fmt::format("'{}'", problem.buffers[i].name); };

  // Each buffer on its own.
  std::vector<BufferId> parent(problem.buffers.size());
  std::iota(parent.begin(), parent.end(), 0);
  const auto root = [&](BufferId x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (BufferId i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    const Offset o = offsets[i];
    if (o % std::max<Bytes>(1, b.alignment) != 0)
      return fmt::format("{} at {} is not aligned to {}", name(i), o, b.alignment);
    if (o > kMaxBytes || b.size > kMaxBytes)
      return fmt::format("{} at {} with {} bytes is out of range", name(i), o, b.size);
    if (b.size > 0 && o < problem.reserved)
      return fmt::format("{} at {} lies in the reserved prefix of {} bytes", name(i), o,
                         problem.reserved);
    if (b.fixed_offset && *b.fixed_offset != o)
      return fmt::format("{} at {} is pinned at {}", name(i), o, *b.fixed_offset);
    if (b.inplace_base != kNone) {
      if (b.inplace_base < 0 || b.inplace_base >= n)
        return fmt::format("{}: inplace_base {} out of range", name(i), b.inplace_base);
      if (offsets[b.inplace_base] != o)
        return fmt::format("{} at {} but its in-place base {} at {}", name(i), o,
                           name(b.inplace_base), offsets[b.inplace_base]);
      parent[root(i)] = root(b.inplace_base);
    }
  }

  // Rectangles per group, in absolute bytes.
  std::map<BufferId, std::vector<Rect>> groups;
  for (BufferId i = 0; i < n; ++i) piecesOf(problem.buffers[i], i, groups[root(i)]);
  std::vector<Rect> rects;
  for (auto& entry : groups) {
    for (Rect& p : entry.second) {
      p.lo += offsets[p.who];
      p.hi += offsets[p.who];
    }
    groupRects(entry.second, rects);
  }

  // Sweep over time: the live rectangles' byte ranges must stay disjoint;
  // ends before starts at one step (half-open), so a new range can only
  // meet its neighbours by offset.
  struct Event {
    TimeValue t;
    bool start;
    std::size_t r;
  };
  std::vector<Event> events;
  events.reserve(2 * rects.size());
  for (std::size_t r = 0; r < rects.size(); ++r) {
    if (rects[r].hi <= rects[r].lo || rects[r].t1 <= rects[r].t0) continue;
    events.push_back({rects[r].t0, true, r});
    events.push_back({rects[r].t1, false, r});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.t, a.start, a.r) < std::tie(b.t, b.start, b.r);
  });
  std::map<Offset, std::size_t> live;  // lo -> rectangle
  const auto clash = [&](std::size_t a, std::size_t b, TimeValue t) {
    const Offset lo = std::max(rects[a].lo, rects[b].lo), hi = std::min(rects[a].hi, rects[b].hi);
    return fmt::format("{} and {} share bytes [{}, {}) at step {}", name(rects[a].who),
                       name(rects[b].who), lo, hi, t);
  };
  for (const Event& e : events) {
    const Rect& r = rects[e.r];
    if (!e.start) {
      live.erase(r.lo);
      continue;
    }
    auto next = live.lower_bound(r.lo);
    if (next != live.end() && rects[next->second].lo < r.hi) return clash(next->second, e.r, e.t);
    if (next != live.begin() && rects[std::prev(next)->second].hi > r.lo)
      return clash(std::prev(next)->second, e.r, e.t);
    live.emplace(r.lo, e.r);
  }
  return "";
}

Bytes placementBytes(const PoolProblem& problem, const std::vector<Offset>& offsets) {
  Bytes top = problem.reserved;
  for (std::size_t i = 0; i < problem.buffers.size() && i < offsets.size(); ++i)
    if (problem.buffers[i].size > 0) top = std::max(top, offsets[i] + problem.buffers[i].size);
  return problem.buffers.empty() ? top : top + problem.extra_padding;
}

}  // namespace memplan::test

// Builds the exact search's fixed layout: see exact_layout.h.
#include "algorithms/exact_layout.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "algorithms/pool_util.h"

namespace memplan::exact {
namespace {

// The merged buffers that hold bytes become items; the others get their
// offset here. Returns each item's segments.
std::vector<std::vector<pool::Segment>> collectItems(const PoolProblem& merged, SearchLayout& out) {
  const std::size_t n = merged.buffers.size();
  out.bytesless_offsets.assign(n, 0);
  std::vector<std::vector<pool::Segment>> segments;
  std::vector<TimeValue> times;
  for (std::size_t b = 0; b < n; ++b) {
    const Buffer& buf = merged.buffers[b];
    std::vector<pool::Segment> s;
    pool::segmentsOf(buf, s);
    if (s.empty()) {  // holds no bytes: anywhere allowed
      out.bytesless_offsets[b] =
          buf.fixed_offset ? *buf.fixed_offset : alignUpSat(merged.reserved, buf.alignment);
      continue;
    }
    Item item;
    item.buffer = b;
    item.size = buf.size;
    item.alignment = std::max<Bytes>(1, buf.alignment);
    item.pin = buf.fixed_offset ? *buf.fixed_offset : kUnplaced;
    item.start = buf.start;
    item.end = buf.end;
    out.items.push_back(item);
    for (const pool::Segment& x : s) {
      times.push_back(x.start);
      times.push_back(x.end);
    }
    segments.push_back(std::move(s));
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  out.event_times = std::move(times);
  out.num_sections = out.event_times.empty() ? 0 : static_cast<SectionIdx>(out.event_times.size() - 1);
  return segments;
}

SectionIdx sectionAt(const SearchLayout& layout, TimeValue t) {
  const std::vector<TimeValue>& times = layout.event_times;
  return static_cast<SectionIdx>(std::lower_bound(times.begin(), times.end(), t) - times.begin());
}

// Each item's segments in sections, and its hull.
void buildSpans(const std::vector<std::vector<pool::Segment>>& segments, SearchLayout& out) {
  for (std::size_t i = 0; i < out.items.size(); ++i) {
    Item& item = out.items[i];
    item.spans.begin = static_cast<std::int32_t>(out.spans.size());
    for (const pool::Segment& x : segments[i]) {
      out.spans.push_back({sectionAt(out, x.start), sectionAt(out, x.end), x.lo, x.hi});
      if (x.lo > 0) out.complete = false;
    }
    item.spans.end = static_cast<std::int32_t>(out.spans.size());
    item.first_section = out.spans[item.spans.begin].first_section;
    item.end_section = out.spans[item.spans.end - 1].end_section;
  }
}

// Sections' item lists (flattened, section by section), their initial
// bytes, and each item's slots: its n-th section membership (in span
// order) -> its position in that section's list, and back.
void buildSections(SearchLayout& out) {
  std::vector<std::int32_t> count(out.num_sections + 1, 0);
  out.section_bytes.assign(out.num_sections, 0);
  for (const Item& item : out.items)
    for (std::int32_t k = item.spans.begin; k < item.spans.end; ++k)
      for (SectionIdx s = out.spans[k].first_section; s < out.spans[k].end_section; ++s) {
        ++count[s + 1];
        out.section_bytes[s] += out.spans[k].window_hi - out.spans[k].window_lo;
      }
  for (SectionIdx s = 0; s < out.num_sections; ++s) count[s + 1] += count[s];
  out.section_begin = count;
  out.section_items.resize(count[out.num_sections]);
  std::vector<std::int32_t> fill(count.begin(), count.end() - 1);
  out.slot_at_position.resize(out.section_items.size());
  for (ItemIdx i = 0; i < static_cast<ItemIdx>(out.items.size()); ++i) {
    Item& item = out.items[i];
    item.slots.begin = static_cast<std::int32_t>(out.slot_position.size());
    for (std::int32_t k = item.spans.begin; k < item.spans.end; ++k)
      for (SectionIdx s = out.spans[k].first_section; s < out.spans[k].end_section; ++s) {
        out.slot_at_position[fill[s]] = static_cast<std::int32_t>(out.slot_position.size());
        out.slot_position.push_back(fill[s]);
        out.section_items[fill[s]++] = i;
      }
    item.slots.end = static_cast<std::int32_t>(out.slot_position.size());
  }
}

// Calls f(a, i) for every pair of items whose hulls share a section, a
// placed before i in the sweep.
template <typename F>
void forEachHullPair(const SearchLayout& out, F&& f) {
  const ItemIdx m = static_cast<ItemIdx>(out.items.size());
  std::vector<ItemIdx> by_start(m);
  std::iota(by_start.begin(), by_start.end(), 0);
  std::sort(by_start.begin(), by_start.end(), [&](ItemIdx a, ItemIdx b) {
    return out.items[a].first_section != out.items[b].first_section
               ? out.items[a].first_section < out.items[b].first_section
               : a < b;
  });
  std::vector<ItemIdx> active;
  for (ItemIdx i : by_start) {
    std::erase_if(active, [&](ItemIdx a) { return out.items[a].end_section <= out.items[i].first_section; });
    for (ItemIdx a : active) f(a, i);
    active.push_back(i);
  }
}

// Pairs sharing time (a sweep over hulls) with their clearances, and the
// pinned items each unpinned one must step over. The neighbour lists are
// laid out flat from a first sweep's counts: on a window of thousands of
// items live at once they are the layout's largest part, and lists grown
// one by one, then copied, held up to three times their size.
void buildNeighbours(const PoolProblem& merged, const ExactParams& params, SearchLayout& out) {
  const ItemIdx m = static_cast<ItemIdx>(out.items.size());
  auto pinned = [&](ItemIdx i) { return merged.buffers[out.items[i].buffer].fixed_offset.has_value(); };
  // Slots per item, for every pair of hulls sharing a section: [begin, end)
  // after the first sweep; `end` then counts the slots filled.
  std::vector<std::int32_t> nb(m + 1, 0), ob(m + 1, 0);
  forEachHullPair(out, [&](ItemIdx a, ItemIdx i) {
    ++nb[a + 1];
    ++nb[i + 1];
    if (pinned(a) != pinned(i)) ++ob[(pinned(a) ? i : a) + 1];
  });
  for (ItemIdx i = 0; i < m; ++i) {
    nb[i + 1] += nb[i];
    ob[i + 1] += ob[i];
  }
  std::vector<Neighbour> neighbours(static_cast<std::size_t>(nb[m]));
  std::vector<PinObstacle> obstacles(static_cast<std::size_t>(ob[m]));
  std::vector<std::int32_t> nend(nb.begin(), nb.end() - 1), oend(ob.begin(), ob.end() - 1);
  forEachHullPair(out, [&](ItemIdx a, ItemIdx i) {
    const Buffer& ba = merged.buffers[out.items[a].buffer];
    const Buffer& bi = merged.buffers[out.items[i].buffer];
    const auto c = pool::clearance(ba, bi);
    if (!c) return;
    neighbours[static_cast<std::size_t>(nend[a]++)] = {i, c->above};
    neighbours[static_cast<std::size_t>(nend[i]++)] = {a, c->below};
    const bool pa = ba.fixed_offset.has_value(), pi = bi.fixed_offset.has_value();
    if (pa && pi) {
      const Offset xa = *ba.fixed_offset, xi = *bi.fixed_offset;
      if (!(xi >= xa + c->above || xi + c->below <= xa)) out.pins_collide = true;
    } else if (pa || pi) {
      // The unpinned one steps over the pinned one.
      const ItemIdx u = pa ? i : a;
      const Offset x = pa ? *ba.fixed_offset : *bi.fixed_offset;
      const Bytes above = pa ? c->above : c->below;  // u above the pin
      const Bytes below = pa ? c->below : c->above;  // u below the pin
      const Offset s = out.items[u].size;
      obstacles[static_cast<std::size_t>(oend[u]++)] = {x + s - std::min<Offset>(below, x + s), x + above};
    }
  });
  // Pairs whose gaps keep them apart left slots empty: close up.
  std::size_t nk = 0, ok = 0;
  for (ItemIdx i = 0; i < m; ++i) {
    Item& item = out.items[i];
    item.neighbours.begin = static_cast<std::int32_t>(nk);
    for (std::int32_t k = nb[i]; k < nend[i]; ++k) neighbours[nk++] = neighbours[static_cast<std::size_t>(k)];
    item.neighbours.end = static_cast<std::int32_t>(nk);
    item.obstacles.begin = static_cast<std::int32_t>(ok);
    if (params.pin_obstacles)
      for (std::int32_t k = ob[i]; k < oend[i]; ++k) obstacles[ok++] = obstacles[static_cast<std::size_t>(k)];
    item.obstacles.end = static_cast<std::int32_t>(ok);
    std::stable_sort(obstacles.begin() + item.obstacles.begin, obstacles.begin() + item.obstacles.end,
                     [](const PinObstacle& a, const PinObstacle& b) { return a.lo < b.lo; });
  }
  neighbours.resize(nk);
  neighbours.shrink_to_fit();
  obstacles.resize(ok);
  obstacles.shrink_to_fit();
  out.neighbours = std::move(neighbours);
  out.obstacles = std::move(obstacles);
}

// Identical unpinned items, chained in index order (symmetry breaking).
void markIdenticalItems(SearchLayout& out) {
  std::map<std::vector<Bytes>, ItemIdx> last;
  for (ItemIdx i = 0; i < static_cast<ItemIdx>(out.items.size()); ++i) {
    Item& item = out.items[i];
    if (item.pin != kUnplaced) continue;
    std::vector<Bytes> key = {item.size, item.alignment};
    for (std::int32_t k = item.spans.begin; k < item.spans.end; ++k) {
      key.push_back(static_cast<Bytes>(out.spans[k].first_section));
      key.push_back(static_cast<Bytes>(out.spans[k].end_section));
      key.push_back(out.spans[k].window_lo);
      key.push_back(out.spans[k].window_hi);
    }
    auto [it, fresh] = last.try_emplace(std::move(key), i);
    if (!fresh) {
      item.identical_before = it->second;
      it->second = i;
    }
  }
}

}  // namespace

SearchLayout buildSearchLayout(const PoolProblem& merged, const ExactParams& params) {
  SearchLayout out;
  const std::vector<std::vector<pool::Segment>> segments = collectItems(merged, out);
  buildSpans(segments, out);
  buildSections(out);
  buildNeighbours(merged, params, out);
  // Boundaries: items crossing the one between sections s and s + 1.
  out.spanning_at_start.assign(std::max<SectionIdx>(0, out.num_sections - 1), 0);
  for (const Item& item : out.items)
    for (SectionIdx s = item.first_section; s + 1 < item.end_section; ++s) ++out.spanning_at_start[s];
  if (params.symmetry_breaking) markIdenticalItems(out);
  return out;
}

}  // namespace memplan::exact

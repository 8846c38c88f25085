// Pinned tensors: checks, and planning around pins that overlap on purpose
// (see plan/pinned.h).
//
// Overlapping pins, step by step:
//  1. Per graph, the planned pinned specs of each pool become rectangles
//     (closed lifetime x bytes at the pin); in-place members at one offset
//     count as one rectangle.
//  2. Rectangles that share bytes while alive together are grouped
//     (union-find; each new rectangle is compared with the live ones).
//  3. A group is taken out of the problem (its specs unplanned) and replaced
//     by obstacles: the steps between the group's lifetime ends cut it into
//     slices, each slice's byte ranges are merged, and a range that runs on
//     unchanged over consecutive slices stays one obstacle. Obstacles are
//     disjoint, pinned, alignment 1: any pin-honouring algorithm plans the
//     other tensors around exactly the bytes the group holds at each step.
//  4. After planning, obstacles are dropped and the group's specs get their
//     pins back.
// The walker (walk.h) plans methods, bodies and shared state as planModel
// does; this file supplies the step for one graph.
#include "plan/pinned.h"

#include <algorithm>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "partition/partition.h"
#include "plan/walk.h"

namespace memplan {
namespace {

struct Pin {
  std::vector<SpecId> specs;     // the in-place members it stands for
  MemId pool = 1;
  Offset begin = 0, end = 0;     // bytes
  TimeValue first = 0, last = 0; // closed lifetime
};

std::string show(const GraphSpecs& specs, const Pin& p) {
  return fmt::format("'{}' (bytes [{}, {}), steps [{}, {}])", specs.specs[p.specs.front()].name,
                     p.begin, p.end, p.first, p.last);
}

// Step 1, with the alignment check.
std::vector<Pin> pinsOf(const Model& m, const GraphSpecs& specs) {
  std::map<std::pair<SpecId, Offset>, std::size_t> by_root;  // (chain root, pin) -> pin
  std::vector<Pin> pins;
  const std::vector<SpecId> roots = partition::prepareSpecs(specs).root;  // kNone: shared
  for (const Spec& s : specs.specs) {
    if (!s.planned || !s.offset) continue;
    const Bytes align = std::max<Bytes>(s.alignment, 1);
    if (*s.offset % align != 0)
      throw InputError(fmt::format(
          "{}: tensor '{}' is pinned at offset {}, not a multiple of its alignment {} (plan with "
          "a smaller --alignment, or --ignore-offline-plan for a TFLite Micro offline plan)",
          m.name, s.name, *s.offset, align));
    const auto size = alignUp(s.nbytes, align);
    if (!size || *s.offset > kMaxBytes || *size > kMaxBytes - *s.offset)
      throw InputError(fmt::format("{}: tensor '{}' pinned at offset {} overflows", m.name, s.name,
                                   *s.offset));
    if (*size == 0) continue;
    const SpecId root = roots[s.id] != kNone ? roots[s.id] : s.id;
    const auto key = std::pair(root, *s.offset);
    auto it = by_root.find(key);
    if (it == by_root.end()) {
      it = by_root.emplace(key, pins.size()).first;
      Pin p;
      p.pool = specs.specs[root].mem_id.value_or(1);
      p.begin = *s.offset;
      p.end = *s.offset + *size;
      p.first = s.first;
      p.last = s.last;
      pins.push_back(p);
    }
    Pin& p = pins[it->second];
    p.specs.push_back(s.id);
    p.end = std::max(p.end, *s.offset + *size);
    p.first = std::min(p.first, s.first);
    p.last = std::max(p.last, s.last);
  }
  std::stable_sort(pins.begin(), pins.end(), [](const Pin& a, const Pin& b) {
    return std::tie(a.pool, a.first, a.begin) < std::tie(b.pool, b.first, b.begin);
  });
  return pins;
}

// The first two pins (sorted by pool, first step) sharing bytes while
// alive: a sweep keeping the live pins of the pool disjoint, O(n log n).
std::optional<std::pair<std::size_t, std::size_t>> firstOverlap(const std::vector<Pin>& pins) {
  std::map<Offset, std::size_t> live;
  std::multimap<TimeValue, Offset> expiry;
  MemId pool = kNone;
  for (std::size_t i = 0; i < pins.size(); ++i) {
    const Pin& p = pins[i];
    if (p.pool != pool) {
      live.clear();
      expiry.clear();
      pool = p.pool;
    }
    while (!expiry.empty() && expiry.begin()->first < p.first) {
      live.erase(expiry.begin()->second);
      expiry.erase(expiry.begin());
    }
    auto next = live.lower_bound(p.end);
    if (next != live.begin() && pins[std::prev(next)->second].end > p.begin)
      return std::pair(std::prev(next)->second, i);
    live.emplace(p.begin, i);
    expiry.emplace(p.last, p.begin);
  }
  return std::nullopt;
}

// Step 2: groups of two or more pins that overlap, transitively.
std::vector<std::vector<std::size_t>> overlapGroups(const std::vector<Pin>& pins) {
  std::vector<std::size_t> parent(pins.size());
  std::iota(parent.begin(), parent.end(), 0);
  const auto find = [&](std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::vector<std::size_t> live;
  for (std::size_t i = 0; i < pins.size(); ++i) {
    const Pin& p = pins[i];
    std::erase_if(live, [&](std::size_t j) { return pins[j].pool != p.pool || pins[j].last < p.first; });
    for (std::size_t j : live)
      if (pins[j].begin < p.end && p.begin < pins[j].end) parent[find(j)] = find(i);
    live.push_back(i);
  }
  std::map<std::size_t, std::vector<std::size_t>> by_root;
  for (std::size_t i = 0; i < pins.size(); ++i) by_root[find(i)].push_back(i);
  std::vector<std::vector<std::size_t>> groups;
  for (auto& [root, members] : by_root)
    if (members.size() > 1) groups.push_back(std::move(members));
  return groups;
}

struct Rect {
  Offset begin = 0, end = 0;
  TimeValue first = 0, last = 0;
};

// Step 3: the bytes a group holds at each step as disjoint rectangles.
std::vector<Rect> disjointCover(const std::vector<Pin>& pins, const std::vector<std::size_t>& group) {
  std::vector<TimeValue> cuts;
  for (std::size_t i : group) {
    cuts.push_back(pins[i].first);
    cuts.push_back(pins[i].last + 1);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<Rect> out;
  std::map<std::pair<Offset, Offset>, std::size_t> open;  // ranges of the previous slice
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    std::vector<std::pair<Offset, Offset>> ranges;
    for (std::size_t i : group)
      if (pins[i].first <= cuts[k] && cuts[k] <= pins[i].last) ranges.emplace_back(pins[i].begin, pins[i].end);
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<Offset, Offset>> merged;
    for (const auto& r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second)
        merged.back().second = std::max(merged.back().second, r.second);
      else
        merged.push_back(r);
    }
    std::map<std::pair<Offset, Offset>, std::size_t> next_open;
    for (const auto& r : merged) {
      auto it = open.find(r);
      if (it != open.end()) {
        out[it->second].last = cuts[k + 1] - 1;
        next_open.emplace(r, it->second);
      } else {
        next_open.emplace(r, out.size());
        out.push_back({r.first, r.second, cuts[k], cuts[k + 1] - 1});
      }
    }
    open = std::move(next_open);
  }
  return out;
}

// Steps 3 and 4 for one graph.
GraphPlan planAroundOverlaps(GraphSpecs specs, const std::vector<Pin>& pins,
                             const std::vector<std::vector<std::size_t>>& groups,
                             const PlanRequest& request, const std::vector<Bytes>& reserved) {
  const auto n = static_cast<SpecId>(specs.specs.size());
  GraphSpecs work = specs;
  std::vector<SpecId> held;  // specs that keep their pins
  std::map<MemId, std::ptrdiff_t> buffer_delta;
  for (const auto& group : groups) {
    const MemId pool = pins[group.front()].pool;
    std::size_t members = 0;
    for (std::size_t i : group)
      for (SpecId s : pins[i].specs) {
        work.specs[s].planned = false;
        held.push_back(s);
        ++members;
      }
    const Spec& first = specs.specs[pins[group.front()].specs.front()];
    const std::vector<Rect> cover = disjointCover(pins, group);
    for (const Rect& r : cover) {
      Spec o;
      o.id = static_cast<SpecId>(work.specs.size());
      o.name = fmt::format("pinned overlap of '{}' and {} more", first.name, group.size() - 1);
      o.nbytes = r.end - r.begin;
      o.alignment = 1;
      o.first = r.first;
      o.last = r.last;
      o.device = first.device;
      o.mem_id = pool;
      o.offset = r.begin;
      o.planned = true;
      work.specs.push_back(std::move(o));
    }
    buffer_delta[pool] += static_cast<std::ptrdiff_t>(members) - static_cast<std::ptrdiff_t>(cover.size());
  }
  GraphPlan plan = planSpecs(std::move(work), request, reserved);
  std::erase_if(plan.allocations, [&](const Allocation& a) { return a.spec >= n; });
  for (SpecId s : held) {
    const Spec& spec = specs.specs[s];
    Allocation a;
    a.spec = s;
    a.mem_id = spec.mem_id.value_or(1);
    a.offset = *spec.offset;
    a.size = *alignUp(spec.nbytes, std::max<Bytes>(spec.alignment, 1));  // checked in pinsOf
    plan.allocations.push_back(a);
  }
  std::sort(plan.allocations.begin(), plan.allocations.end(),
            [](const Allocation& a, const Allocation& b) { return a.spec < b.spec; });
  for (PoolInfo& p : plan.pools) {
    const auto it = buffer_delta.find(p.mem_id);
    if (it != buffer_delta.end())
      p.buffers = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(p.buffers) + it->second);
  }
  plan.specs = std::move(specs);
  return plan;
}

// Graphs owning at least one pinned tensor.
std::vector<bool> graphsWithPins(const Model& m) {
  std::vector<bool> out(m.graphs.size(), false);
  for (const Tensor& t : m.tensors)
    if (t.offset && t.graph >= 0 && static_cast<std::size_t>(t.graph) < out.size()) out[t.graph] = true;
  return out;
}

// The walker's step: a graph without overlapping pins is planned as
// planModel plans it; one with them, around their obstacles.
GraphPlan planGraphAroundPins(const Model& model, GraphId g, const PlanRequest& request,
                              const std::vector<Bytes>& reserved) {
  GraphSpecs specs = collectSpecs(model, g, request.options);
  const std::vector<Pin> pins = pinsOf(model, specs);
  const std::vector<std::vector<std::size_t>> groups = overlapGroups(pins);
  if (groups.empty()) return planSpecs(std::move(specs), request, reserved);
  if (request.options.per_device)
    throw InputError(fmt::format("{}: overlapping pinned tensors cannot be planned per device",
                                 model.name));
  return planAroundOverlaps(std::move(specs), pins, groups, request, reserved);
}

}  // namespace

void checkPins(const Model& model, const PlanOptions& options) {
  const std::vector<bool> pinned = graphsWithPins(model);
  const std::vector<PlanOptions> graph_options = graphsPlanOptions(model, options);
  for (GraphId g = 0; g < static_cast<GraphId>(model.graphs.size()); ++g) {
    if (!pinned[g]) continue;
    const GraphSpecs specs = collectSpecs(model, g, graph_options[g]);
    const std::vector<Pin> pins = pinsOf(model, specs);
    if (options.allow_pinned_overlap) continue;
    if (const auto pair = firstOverlap(pins))
      throw InputError(fmt::format(
          "{}: pinned tensors {} and {} share bytes while both alive (pass "
          "--allow-pinned-overlap if that is deliberate, as TFLite Micro offline plans may do)",
          model.name, show(specs, pins[pair->first]), show(specs, pins[pair->second])));
  }
}

Plan planModelWithPins(const Model& model, const PlanRequest& request) {
  validateModel(model);
  checkPins(model, request.options);
  if (!request.options.allow_pinned_overlap) return planModel(model, request);
  const walk::GraphStep step = [&](GraphId g, const PlanRequest& r, const std::vector<Bytes>& reserved) {
    return planGraphAroundPins(model, g, r, reserved);
  };
  return walk::planModelWith(model, request, step);
}

}  // namespace memplan

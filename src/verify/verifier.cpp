// The plan verifier (see memplan/verify.h).
//
// Overlap check, per pool, in O(n log n): sweep the steps in order; the
// allocations alive at a step form a set of byte ranges that must be
// disjoint, kept sorted by offset. A new range can only collide with the
// live range that starts last before its end, so one ordered-set lookup per
// insertion finds any collision. ShareWith members at one offset whose
// lifetimes overlap are merged into one range first; a third tensor in the
// in-place result's extra lifetime still collides with that range. A spec
// with gaps is checked piece by piece (pieces.h): in a gap it holds only its
// window, or nothing.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "memplan/verify.h"
#include "verify/pieces.h"

namespace memplan {
namespace {

struct Range {
  Offset begin = 0, end = 0;      // bytes [begin, end)
  TimeValue first = 0, last = 0;  // closed lifetime
  SpecId spec = kNone;            // representative (for messages)
};

std::string describe(const GraphSpecs& specs, const Range& r) {
  const Spec& s = specs.specs[r.spec];
  // A piece of a spec with gaps: its own steps.
  const TimeValue first = s.gaps.empty() ? s.first : r.first;
  const TimeValue last = s.gaps.empty() ? s.last : r.last;
  return fmt::format("'{}' (bytes [{}, {}), steps [{}, {}])", s.name, r.begin, r.end, first, last);
}

// The ranges a group of ShareWith members at one offset holds: at each step
// the bytes up to the largest live member's end, so a member that outlives
// a larger one keeps only its own bytes. O(k log k) for k members.
void groupRanges(std::vector<Range>& members, std::vector<Range>& out) {
  if (members.size() == 1) {
    out.push_back(members[0]);
    return;
  }
  struct Event {
    TimeValue t;
    bool start;
    std::size_t i;
  };
  std::vector<Event> events;
  events.reserve(2 * members.size());
  for (std::size_t i = 0; i < members.size(); ++i) {
    events.push_back({members[i].first, true, i});
    events.push_back({members[i].last + 1, false, i});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.t, a.start, a.i) < std::tie(b.t, b.start, b.i);
  });
  std::multiset<std::pair<Offset, SpecId>> ends;  // live members by end
  TimeValue since = 0;
  for (std::size_t e = 0; e < events.size();) {
    const TimeValue t = events[e].t;
    if (!ends.empty() && since < t) {
      const auto [end, spec] = *ends.rbegin();
      out.push_back({members[0].begin, end, since, t - 1, spec});
    }
    for (; e < events.size() && events[e].t == t; ++e) {
      const Range& m = members[events[e].i];
      if (events[e].start) ends.insert({m.end, m.spec});
      else ends.erase(ends.find({m.end, m.spec}));
    }
    since = t;
  }
}

bool executorchPool(const PoolInfo* info) {
  if (!info) return false;
  const AlgorithmInfo* algo = findAlgorithmInfo(info->algorithm);
  return algo && algo->executorch_exact;
}

// Everything but the sweep needs no lifetimes (`sweep` false: the structure
// checks that the replay shares).
VerifyResult checkGraph(const GraphPlan& plan, const PlanOptions& options,
                        std::size_t max_violations, bool sweep) {
  VerifyResult result;
  const GraphSpecs& specs = plan.specs;
  const auto report = [&](std::string message) {
    if (result.violations.size() < max_violations)
      result.violations.push_back({plan.graph, std::move(message)});
  };
  const auto num_specs = static_cast<SpecId>(specs.specs.size());
  std::vector<const Allocation*> alloc_of(specs.specs.size(), nullptr);
  for (const Allocation& a : plan.allocations) {
    if (a.spec < 0 || a.spec >= num_specs) {
      report(fmt::format("allocation for unknown spec {}", a.spec));
      continue;
    }
    if (alloc_of[a.spec]) report(fmt::format("'{}' is allocated twice", specs.specs[a.spec].name));
    alloc_of[a.spec] = &a;
  }
  result.checked_allocations = plan.allocations.size();

  // Planned exactly as the options say.
  for (const Spec& s : specs.specs) {
    const bool allocated = alloc_of[s.id] != nullptr;
    if (s.planned && !allocated) report(fmt::format("'{}' should be planned but has no allocation", s.name));
    if (!s.planned && allocated) {
      const char* why = s.is_constant          ? "a constant"
                        : s.is_mutable && !options.alloc_mutable_buffers ? "a mutable buffer (--no-plan-mutable-buffers)"
                        : s.is_input           ? "a graph input that is not planned"
                        : s.is_output          ? "a graph output that is not planned"
                                               : "not a planned tensor";
      report(fmt::format("'{}' is {} but has an allocation", s.name, why));
    }
  }

  std::map<MemId, const PoolInfo*> pool_info;
  for (const PoolInfo& p : plan.pools) pool_info[p.mem_id] = &p;

  // Bounds, capacities and alignment, then gather ranges per pool.
  std::map<MemId, std::vector<Range>> pools;
  std::vector<piece::Piece> pieces;
  for (const Allocation& a : plan.allocations) {
    if (a.spec < 0 || a.spec >= num_specs) continue;
    const Spec& s = specs.specs[a.spec];
    if (a.mem_id < 1 || static_cast<std::size_t>(a.mem_id) >= plan.bufsizes.size()) {
      report(fmt::format("'{}' is in pool {}, which does not exist ({} pools)", s.name, a.mem_id,
                         plan.bufsizes.empty() ? 0 : plan.bufsizes.size() - 1));
      continue;
    }
    // An in-place result lives in its base's pool, whatever its own preset
    // says (ExecuTorch ignores it too).
    if (s.mem_id && *s.mem_id != a.mem_id && s.inplace_base == kNone)
      report(fmt::format("'{}' is preset to pool {} but placed in pool {}", s.name, *s.mem_id, a.mem_id));
    if (s.offset && *s.offset != a.offset)
      report(fmt::format("'{}' is pinned at offset {} but placed at {}", s.name, *s.offset, a.offset));
    if (a.size < s.nbytes)
      report(fmt::format("'{}' needs {} bytes but is given {}", s.name, s.nbytes, a.size));
    // Per device, a tensor lives in a pool of its own device (state aside:
    // ExecuTorch keeps it on the CPU).
    if (options.per_device && !s.shared && static_cast<std::size_t>(a.mem_id) < plan.pool_devices.size() &&
        !(plan.pool_devices[a.mem_id] == s.device))
      report(fmt::format("'{}' is on {} but placed in pool {}, which is on {}", s.name, s.device.str(),
                         a.mem_id, plan.pool_devices[a.mem_id].str()));
    const Bytes pool_size = plan.bufsizes[a.mem_id];
    const PoolInfo* info = pool_info.count(a.mem_id) ? pool_info[a.mem_id] : nullptr;
    const Bytes reserved = info ? info->reserved : 0;
    // A zero-size tensor holds no bytes: where its pointer lies is moot.
    if (a.offset > kMaxBytes || a.size > kMaxBytes || (a.size > 0 && a.offset + a.size > pool_size))
      report(fmt::format("'{}' at bytes [{}, {}) lies outside pool {} of {} bytes", s.name, a.offset,
                         a.offset + a.size, a.mem_id, pool_size));
    else if (a.size > 0 && a.offset < reserved)
      report(fmt::format("'{}' at offset {} lies in pool {}'s reserved prefix of {} bytes", s.name,
                         a.offset, a.mem_id, reserved));
    for (const Gap& g : s.gaps)
      if (g.window && (g.window->first > g.window->second || g.window->second > s.nbytes))
        report(fmt::format("'{}': the window [{}, {}) of its gap [{}, {}) is not inside its {} bytes",
                           s.name, g.window->first, g.window->second, g.start, g.end, s.nbytes));
    if (s.alignment > 1 && a.size > 0 && a.offset % s.alignment != 0) {
      std::string message = fmt::format("'{}' at offset {} is not aligned to {} bytes", s.name,
                                        a.offset, s.alignment);
      // ExecuTorch itself places tensors after an unaligned reserved prefix.
      if (executorchPool(info))
        result.warnings.push_back(message + " (as ExecuTorch places it)");
      else
        report(std::move(message));
    }
    const auto& caps = options.capacities;
    const auto mid = static_cast<std::size_t>(a.mem_id);
    if (a.size > 0 && mid < caps.size() && caps[mid] && a.offset <= kMaxBytes &&
        a.size <= kMaxBytes && a.offset + a.size > *caps[mid])
      report(fmt::format("'{}' at bytes [{}, {}) exceeds pool {}'s capacity of {} bytes", s.name,
                         a.offset, a.offset + a.size, a.mem_id, *caps[mid]));
    if (a.size == 0 || a.offset > kMaxBytes || a.size > kMaxBytes) continue;
    if (s.gaps.empty()) {
      pools[a.mem_id].push_back({a.offset, a.offset + a.size, s.first, s.last, s.id});
      continue;
    }
    piece::piecesOf(s, a.size, pieces);
    for (const piece::Piece& p : pieces)
      pools[a.mem_id].push_back({a.offset + p.begin, a.offset + p.end, p.first, p.last, s.id});
  }
  if (!sweep) return result;

  // Merge ShareWith groups placed at one offset (union-find on inplace_base).
  std::vector<SpecId> parent(specs.specs.size());
  std::iota(parent.begin(), parent.end(), 0);
  const auto find = [&](SpecId x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  // Specs with gaps stay apart (their pieces are checked like any range).
  for (const Spec& s : specs.specs)
    if (s.inplace_base != kNone && s.gaps.empty() && specs.specs[s.inplace_base].gaps.empty() &&
        alloc_of[s.id] && alloc_of[s.inplace_base] &&
        alloc_of[s.id]->mem_id == alloc_of[s.inplace_base]->mem_id &&
        alloc_of[s.id]->offset == alloc_of[s.inplace_base]->offset)
      parent[find(s.id)] = find(s.inplace_base);

  for (auto& [pool_id, raw] : pools) {
    const auto mem_id = pool_id;  // lambdas may not capture a structured binding before C++20 in clang 14
    // Members of a group share bytes by design: where their lifetimes
    // overlap they become one range; apart in time they stay separate
    // (the bytes are free in between, like any dead tensor's).
    std::map<SpecId, std::vector<Range>> groups;
    std::vector<Range> ranges;
    ranges.reserve(raw.size());
    for (const Range& r : raw) {
      if (specs.specs[r.spec].gaps.empty()) groups[find(r.spec)].push_back(r);
      else ranges.push_back(r);  // pieces of a spec with gaps: never grouped
    }
    for (auto& [root, members] : groups) groupRanges(members, ranges);
    std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
      return std::tie(a.first, a.begin, a.spec) < std::tie(b.first, b.begin, b.spec);
    });
    const auto collide = [&](const Range& a, const Range& b) {
      report(fmt::format("pool {}: {} and {} are alive at the same time and share bytes", mem_id,
                         describe(specs, a), describe(specs, b)));
    };
    // Pinned tensors allowed to overlap each other: the others are checked
    // among themselves, then against the pinned ones (those may overlap, so
    // each free range is compared with every live pinned range: O(n log n +
    // free x live pinned)).
    std::vector<const Range*> free_ranges, pinned_ranges;
    for (const Range& r : ranges)
      (options.allow_pinned_overlap && specs.specs[r.spec].offset ? pinned_ranges : free_ranges)
          .push_back(&r);
    // Live ranges keyed by begin offset; expiry ordered by last step.
    std::map<Offset, const Range*> live;
    std::multimap<TimeValue, Offset> expiry;
    const auto expire = [&](TimeValue before) {
      while (!expiry.empty() && expiry.begin()->first < before) {
        live.erase(expiry.begin()->second);
        expiry.erase(expiry.begin());
      }
    };
    // The live range sharing bytes with r, if any (the live set is disjoint).
    const auto liveCollision = [&](const Range& r) -> const Range* {
      auto next = live.lower_bound(r.end);  // first live range starting at/after our end
      if (next == live.begin()) return nullptr;
      const Range* prev = std::prev(next)->second;
      return prev->end > r.begin ? prev : nullptr;
    };
    for (const Range* r : free_ranges) {
      expire(r->first);
      if (const Range* other = liveCollision(*r)) {
        collide(*other, *r);
        continue;  // keep the live set disjoint so later checks stay exact
      }
      live.emplace(r->begin, r);
      expiry.emplace(r->last, r->begin);
    }
    if (pinned_ranges.empty()) continue;
    live.clear();
    expiry.clear();
    std::vector<const Range*> live_pinned;
    std::size_t f = 0;
    for (const Range* p : pinned_ranges) {
      // Free ranges starting up to p's first step go in before it.
      for (; f < free_ranges.size() && free_ranges[f]->first <= p->first; ++f) {
        const Range& r = *free_ranges[f];
        expire(r.first);
        std::erase_if(live_pinned, [&](const Range* q) { return q->last < r.first; });
        for (const Range* q : live_pinned)
          if (q->begin < r.end && r.begin < q->end) collide(*q, r);
        if (!liveCollision(r)) {
          live.emplace(r.begin, &r);
          expiry.emplace(r.last, r.begin);
        }
      }
      expire(p->first);
      if (const Range* other = liveCollision(*p)) collide(*other, *p);
      std::erase_if(live_pinned, [&](const Range* q) { return q->last < p->first; });
      live_pinned.push_back(p);
    }
    for (; f < free_ranges.size(); ++f) {
      const Range& r = *free_ranges[f];
      std::erase_if(live_pinned, [&](const Range* q) { return q->last < r.first; });
      for (const Range* q : live_pinned)
        if (q->begin < r.end && r.begin < q->end) collide(*q, r);
    }
  }
  return result;
}

}  // namespace

VerifyResult verifyGraphPlan(const GraphPlan& plan, const PlanOptions& options,
                             std::size_t max_violations) {
  return checkGraph(plan, options, max_violations, true);
}

namespace {

// A control-flow body's arena is the reserved prefix of its parent's pools:
// each body pool must fit in that prefix.
void checkBodyFitsParent(const Plan& plan, const GraphPlan& body, VerifyResult& result,
                         std::size_t max_violations) {
  if (body.parent < 0 || body.parent >= static_cast<GraphId>(plan.graphs.size())) return;
  const GraphPlan& parent = plan.graphs[body.parent];
  for (std::size_t m = 1; m < body.bufsizes.size(); ++m) {
    if (body.bufsizes[m] == 0) continue;
    Bytes room = m < parent.bufsizes.size() ? parent.bufsizes[m] : 0;
    for (const PoolInfo& p : parent.pools)
      if (p.mem_id == static_cast<MemId>(m) && p.buffers > 0) room = std::min(room, p.reserved);
    if (body.bufsizes[m] > room && result.violations.size() < max_violations)
      result.violations.push_back(
          {body.graph, fmt::format("body graph {} needs {} bytes of pool {}, but its parent graph {} "
                                   "reserves {}",
                                   body.graph, body.bufsizes[m], m, body.parent, room)});
  }
}

std::string methodOfGraph(const Plan& plan, GraphId g) {
  for (const MethodPlan& m : plan.methods)
    if (m.graph == g) return fmt::format("method '{}'", m.name);
  return fmt::format("graph {}", g);
}

// State shared by the methods: one place for each fqn in every method, and
// bytes no other tensor of any graph touches (the methods run one after the
// other on the same arenas; the state must survive them all).
void checkSharedState(const Plan& plan, VerifyResult& result, std::size_t max_violations) {
  const auto report = [&](GraphId g, std::string message) {
    if (result.violations.size() < max_violations) result.violations.push_back({g, std::move(message)});
  };
  struct Seen {
    GraphId graph;
    const Allocation* alloc;
  };
  std::map<std::string, Seen> first;
  std::map<MemId, std::vector<std::pair<Offset, Offset>>> state_bytes;  // [begin, end) per pool
  for (const GraphPlan& g : plan.graphs)
    for (const Allocation& a : g.allocations) {
      if (a.spec < 0 || static_cast<std::size_t>(a.spec) >= g.specs.specs.size()) continue;
      const Spec& s = g.specs.specs[a.spec];
      if (!s.shared) continue;
      const auto [it, fresh] = first.emplace(s.fqn, Seen{g.graph, &a});
      const Allocation& b = *it->second.alloc;
      if (!fresh && (a.mem_id != b.mem_id || a.offset != b.offset || a.size != b.size))
        report(g.graph, fmt::format("state '{}' is at pool {} offset {} ({} bytes) in {} but at pool {} "
                                    "offset {} ({} bytes) in {}",
                                    s.fqn, b.mem_id, b.offset, b.size, methodOfGraph(plan, it->second.graph),
                                    a.mem_id, a.offset, a.size, methodOfGraph(plan, g.graph)));
      if (fresh && a.size > 0 && a.offset <= kMaxBytes && a.size <= kMaxBytes)
        state_bytes[a.mem_id].push_back({a.offset, a.offset + a.size});
    }
  if (state_bytes.empty()) return;
  for (auto& [m, ranges] : state_bytes) std::sort(ranges.begin(), ranges.end());
  for (const GraphPlan& g : plan.graphs)
    for (const Allocation& a : g.allocations) {
      if (a.spec < 0 || static_cast<std::size_t>(a.spec) >= g.specs.specs.size() || a.size == 0 ||
          a.offset > kMaxBytes || a.size > kMaxBytes)
        continue;
      const Spec& s = g.specs.specs[a.spec];
      const auto pool = state_bytes.find(a.mem_id);
      if (s.shared || pool == state_bytes.end()) continue;
      // State ranges are disjoint and sorted: only the last one starting
      // before this allocation's end can reach into it.
      const auto& ranges = pool->second;
      const auto it = std::upper_bound(ranges.begin(), ranges.end(),
                                       std::pair<Offset, Offset>{a.offset + a.size, 0});
      if (it == ranges.begin() || std::prev(it)->second <= a.offset) continue;
      const auto& r = *std::prev(it);
      report(g.graph, fmt::format("'{}' ({}) at bytes [{}, {}) of pool {} overlaps shared state "
                                  "[{}, {}), which every method keeps",
                                  s.name, methodOfGraph(plan, g.graph), a.offset, a.offset + a.size,
                                  a.mem_id, r.first, r.second));
    }
}

VerifyResult checkPlan(const Plan& plan, std::size_t max_violations, bool sweep) {
  VerifyResult total;
  for (const GraphPlan& g : plan.graphs) {
    if (g.bufsizes.empty()) continue;  // graph not reached from the main graph
    checkBodyFitsParent(plan, g, total, max_violations);
    VerifyResult r = checkGraph(g, plan.options, max_violations, sweep);
    total.checked_allocations += r.checked_allocations;
    for (auto& w : r.warnings) total.warnings.push_back(std::move(w));
    for (auto& v : r.violations)
      if (total.violations.size() < max_violations) total.violations.push_back(std::move(v));
  }
  checkSharedState(plan, total, max_violations);
  return total;
}

}  // namespace

VerifyResult verifyPlan(const Plan& plan, std::size_t max_violations) {
  return checkPlan(plan, max_violations, true);
}

VerifyResult checkPlanStructure(const Plan& plan, std::size_t max_violations) {
  return checkPlan(plan, max_violations, false);
}

VerifyResult checkGraphStructure(const GraphPlan& plan, const PlanOptions& options,
                                 std::size_t max_violations) {
  return checkGraph(plan, options, max_violations, false);
}

}  // namespace memplan

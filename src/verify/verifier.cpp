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
#include <cstdint>
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

// The allocations alive at the current step of a sweep, disjoint, keyed by
// begin offset; expiry ordered by last step.
class LiveSet {
 public:
  // Drops the ranges that ended before step `before`.
  void expire(TimeValue before) {
    while (!expiry_.empty() && expiry_.begin()->first < before) {
      live_.erase(expiry_.begin()->second);
      expiry_.erase(expiry_.begin());
    }
  }
  // The live range sharing bytes with r, if any (the live set is disjoint).
  const Range* collision(const Range& r) const {
    auto next = live_.lower_bound(r.end);  // first live range starting at/after our end
    if (next == live_.begin()) return nullptr;
    const Range* prev = std::prev(next)->second;
    return prev->end > r.begin ? prev : nullptr;
  }
  void add(const Range& r) {
    live_.emplace(r.begin, &r);
    expiry_.emplace(r.last, r.begin);
  }
  void clear() {
    live_.clear();
    expiry_.clear();
  }

 private:
  std::map<Offset, const Range*> live_;
  std::multimap<TimeValue, Offset> expiry_;
};

// One graph's plan checked (see the file comment); violations in the order
// the checks run, up to max_violations.
class GraphCheck {
 public:
  GraphCheck(const GraphPlan& plan, const PlanOptions& options, std::size_t max_violations)
      : plan_(plan), specs_(plan.specs), options_(options), max_violations_(max_violations) {}

  // Everything but the sweep needs no lifetimes (`sweep` false: the
  // structure checks that the replay shares).
  VerifyResult run(bool sweep) {
    indexAllocations();
    checkPlannedSet();
    for (const PoolInfo& p : plan_.pools) pool_info_[p.mem_id] = &p;
    // Bounds, capacities and alignment, then gather ranges per pool.
    std::map<MemId, std::vector<Range>> pools;
    for (const Allocation& a : plan_.allocations) checkAllocation(a, pools);
    if (!sweep) return std::move(result_);
    groupInPlace();
    for (auto& [mem_id, raw] : pools) sweepPool(mem_id, raw);
    return std::move(result_);
  }

 private:
  void report(std::string message) {
    if (result_.violations.size() < max_violations_)
      result_.violations.push_back({plan_.graph, std::move(message)});
  }

  SpecId numSpecs() const { return static_cast<SpecId>(specs_.specs.size()); }

  void indexAllocations() {
    alloc_of_.assign(specs_.specs.size(), nullptr);
    for (const Allocation& a : plan_.allocations) {
      if (a.spec < 0 || a.spec >= numSpecs()) {
        report(fmt::format("allocation for unknown spec {}", a.spec));
        continue;
      }
      if (alloc_of_[a.spec]) report(fmt::format("'{}' is allocated twice", specs_.specs[a.spec].name));
      alloc_of_[a.spec] = &a;
    }
    result_.checked_allocations = plan_.allocations.size();
  }

  // Planned exactly as the options say.
  void checkPlannedSet() {
    for (const Spec& s : specs_.specs) {
      const bool allocated = alloc_of_[s.id] != nullptr;
      if (s.planned && !allocated) report(fmt::format("'{}' should be planned but has no allocation", s.name));
      if (!s.planned && allocated) {
        const char* why = s.is_constant ? "a constant"
                          : s.is_mutable && !options_.alloc_mutable_buffers
                              ? "a mutable buffer (--no-plan-mutable-buffers)"
                          : s.is_input  ? "a graph input that is not planned"
                          : s.is_output ? "a graph output that is not planned"
                                        : "not a planned tensor";
        report(fmt::format("'{}' is {} but has an allocation", s.name, why));
      }
    }
  }

  // One allocation's pool, preset, pin, size, device, bounds, gap windows,
  // alignment and capacity; its ranges (one per piece) added to `pools`.
  void checkAllocation(const Allocation& a, std::map<MemId, std::vector<Range>>& pools) {
    if (a.spec < 0 || a.spec >= numSpecs()) return;
    const Spec& s = specs_.specs[a.spec];
    if (a.mem_id < 1 || static_cast<std::size_t>(a.mem_id) >= plan_.bufsizes.size()) {
      report(fmt::format("'{}' is in pool {}, which does not exist ({} pools)", s.name, a.mem_id,
                         plan_.bufsizes.empty() ? 0 : plan_.bufsizes.size() - 1));
      return;
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
    if (options_.per_device && !s.shared && static_cast<std::size_t>(a.mem_id) < plan_.pool_devices.size() &&
        !(plan_.pool_devices[a.mem_id] == s.device))
      report(fmt::format("'{}' is on {} but placed in pool {}, which is on {}", s.name, s.device.str(),
                         a.mem_id, plan_.pool_devices[a.mem_id].str()));
    const Bytes pool_size = plan_.bufsizes[a.mem_id];
    const PoolInfo* info = pool_info_.count(a.mem_id) ? pool_info_[a.mem_id] : nullptr;
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
        result_.warnings.push_back(message + " (as ExecuTorch places it)");
      else
        report(std::move(message));
    }
    const auto& caps = options_.capacities;
    const auto mid = static_cast<std::size_t>(a.mem_id);
    if (a.size > 0 && mid < caps.size() && caps[mid] && a.offset <= kMaxBytes &&
        a.size <= kMaxBytes && a.offset + a.size > *caps[mid])
      report(fmt::format("'{}' at bytes [{}, {}) exceeds pool {}'s capacity of {} bytes", s.name,
                         a.offset, a.offset + a.size, a.mem_id, *caps[mid]));
    if (a.size == 0 || a.offset > kMaxBytes || a.size > kMaxBytes) return;
    if (s.gaps.empty()) {
      pools[a.mem_id].push_back({a.offset, a.offset + a.size, s.first, s.last, s.id});
      return;
    }
    piece::piecesOf(s, a.size, pieces_);
    for (const piece::Piece& p : pieces_)
      pools[a.mem_id].push_back({a.offset + p.begin, a.offset + p.end, p.first, p.last, s.id});
  }

  // Merges ShareWith groups placed at one offset (union-find on
  // inplace_base). Specs with gaps stay apart (their pieces are checked
  // like any range).
  void groupInPlace() {
    group_parent_.resize(specs_.specs.size());
    std::iota(group_parent_.begin(), group_parent_.end(), 0);
    for (const Spec& s : specs_.specs)
      if (s.inplace_base != kNone && s.gaps.empty() && specs_.specs[s.inplace_base].gaps.empty() &&
          alloc_of_[s.id] && alloc_of_[s.inplace_base] &&
          alloc_of_[s.id]->mem_id == alloc_of_[s.inplace_base]->mem_id &&
          alloc_of_[s.id]->offset == alloc_of_[s.inplace_base]->offset)
        group_parent_[groupOf(s.id)] = groupOf(s.inplace_base);
  }
  SpecId groupOf(SpecId x) {
    while (group_parent_[x] != x) x = group_parent_[x] = group_parent_[group_parent_[x]];
    return x;
  }

  // A pool's ranges as the sweep sees them, by (first step, offset):
  // members of a group share bytes by design, so where their lifetimes
  // overlap they become one range; apart in time they stay separate (the
  // bytes are free in between, like any dead tensor's).
  std::vector<Range> sweepRanges(const std::vector<Range>& raw) {
    // Most ranges are their group's only member: they go straight in (a
    // list per spec cost a million allocations on a million-buffer plan).
    std::vector<std::uint32_t> members_of(specs_.specs.size(), 0);
    for (const Range& r : raw)
      if (specs_.specs[r.spec].gaps.empty()) ++members_of[groupOf(r.spec)];
    std::map<SpecId, std::vector<Range>> groups;
    std::vector<Range> ranges;
    ranges.reserve(raw.size());
    for (const Range& r : raw) {
      // Pieces of a spec with gaps are never grouped.
      if (specs_.specs[r.spec].gaps.empty() && members_of[groupOf(r.spec)] > 1)
        groups[groupOf(r.spec)].push_back(r);
      else
        ranges.push_back(r);
    }
    for (auto& [root, members] : groups) groupRanges(members, ranges);
    std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
      return std::tie(a.first, a.begin, a.spec) < std::tie(b.first, b.begin, b.spec);
    });
    return ranges;
  }

  void collide(MemId mem_id, const Range& a, const Range& b) {
    report(fmt::format("pool {}: {} and {} are alive at the same time and share bytes", mem_id,
                       describe(specs_, a), describe(specs_, b)));
  }

  // Pinned tensors allowed to overlap each other: the others are checked
  // among themselves, then against the pinned ones (those may overlap, so
  // each free range is compared with every live pinned range: O(n log n +
  // free x live pinned)).
  void sweepPool(MemId mem_id, const std::vector<Range>& raw) {
    const std::vector<Range> ranges = sweepRanges(raw);
    std::vector<const Range*> free_ranges, pinned_ranges;
    for (const Range& r : ranges)
      (options_.allow_pinned_overlap && specs_.specs[r.spec].offset ? pinned_ranges : free_ranges)
          .push_back(&r);
    LiveSet live;
    for (const Range* r : free_ranges) {
      live.expire(r->first);
      if (const Range* other = live.collision(*r)) {
        collide(mem_id, *other, *r);
        continue;  // keep the live set disjoint so later checks stay exact
      }
      live.add(*r);
    }
    if (pinned_ranges.empty()) return;
    live.clear();
    sweepPinned(mem_id, free_ranges, pinned_ranges, live);
  }

  // The free ranges against the pinned ones, and the pinned ones against
  // the free ones live when they start.
  void sweepPinned(MemId mem_id, const std::vector<const Range*>& free_ranges,
                   const std::vector<const Range*>& pinned_ranges, LiveSet& live) {
    std::vector<const Range*> live_pinned;
    const auto checkFree = [&](const Range& r) {
      std::erase_if(live_pinned, [&](const Range* q) { return q->last < r.first; });
      for (const Range* q : live_pinned)
        if (q->begin < r.end && r.begin < q->end) collide(mem_id, *q, r);
    };
    std::size_t f = 0;
    for (const Range* p : pinned_ranges) {
      // Free ranges starting up to p's first step go in before it.
      for (; f < free_ranges.size() && free_ranges[f]->first <= p->first; ++f) {
        const Range& r = *free_ranges[f];
        live.expire(r.first);
        checkFree(r);
        if (!live.collision(r)) live.add(r);
      }
      live.expire(p->first);
      if (const Range* other = live.collision(*p)) collide(mem_id, *other, *p);
      std::erase_if(live_pinned, [&](const Range* q) { return q->last < p->first; });
      live_pinned.push_back(p);
    }
    for (; f < free_ranges.size(); ++f) checkFree(*free_ranges[f]);
  }

  const GraphPlan& plan_;
  const GraphSpecs& specs_;
  const PlanOptions& options_;
  const std::size_t max_violations_;
  VerifyResult result_;
  std::vector<const Allocation*> alloc_of_;  // by spec
  std::map<MemId, const PoolInfo*> pool_info_;
  std::vector<SpecId> group_parent_;         // union-find over specs
  std::vector<piece::Piece> pieces_;         // scratch
};

VerifyResult checkGraph(const GraphPlan& plan, const PlanOptions& options,
                        std::size_t max_violations, bool sweep) {
  return GraphCheck(plan, options, max_violations).run(sweep);
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

// Pools planned by one algorithm, spilling over capacities (see
// partition.h).
//
// A pool larger than its capacity (PlanOptions::capacities, per mem_id)
// spills tensors to the next pool of spill_order and is planned again,
// until every pool fits. The step with the most live bytes is where tensors
// leave: the largest live ones first (ties: the earliest spec), enough to
// bring that step under the capacity, at least one. Specs with a preset
// mem_id or a pinned offset stay. With no next pool, CapacityError names the
// step and the tensors live there. Pools are cached by mem_id and planned
// again only when their members change.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "memplan/limits.h"
#include "partition/partition.h"

namespace memplan::partition {
namespace {

using limits::kMaxMemId;

std::string showBytes(Bytes b) { return formatBytes(b, true); }

// Plans the pools of one algorithm, spilling over capacities.
class Planner {
 public:
  Planner(const GraphSpecs& graph, const PreparedSpecs& p, const Algorithm& algo,
          const PlanRequest& request, const std::vector<Bytes>& reserved)
      : graph_(graph), p_(p), algo_(algo), request_(request), reserved_(reserved),
        info_(algo.info()), pool_of_(p.home) {
    // In-place groups move together; a pinned member pins its group.
    members_.assign(graph.specs.size(), {});
    pinned_.assign(graph.specs.size(), false);
    for (SpecId s : p.order) {
      members_[p.root[s]].push_back(s);
      if (graph.specs[s].offset) pinned_[p.root[s]] = true;
    }
  }

  PoolsResult run() {
    const auto& order = request_.options.spill_order;
    for (MemId m : order)
      if (m < 1 || m > kMaxMemId)
        throw InputError(fmt::format("spill order names pool {}, outside [1, {}]", m, kMaxMemId));
    // Every move sends a group one place further along spill_order, so
    // there are at most (specs x pools) moves; each round makes one or more.
    const std::size_t max_rounds = p_.order.size() * (order.size() + 1) + 1;
    for (std::size_t round = 0;; ++round) {
      spillByLiveBytes();
      PoolsResult at = assemble();
      MemId over = kNone;
      for (const auto& [m, run] : cache_) {
        const auto c = capacityOf(m);
        if (c && at.bufsizes[m] > *c) { over = m; break; }
      }
      if (over == kNone) {
        at.pools = std::move(cache_);  // done: the plans move out, not copied
        return at;
      }
      // The pool fits by live bytes but not as placed (fragmentation): move
      // at least one tensor, or explain why not.
      const auto [step, live] = peak(over);
      if (round >= max_rounds || !spill(over, step, live, /*at_least_one=*/true))
        fail(over, at.bufsizes[over], step, live);
    }
  }

 private:
  std::optional<Bytes> capacityOf(MemId m) const {
    const auto& caps = request_.options.capacities;
    if (m < 0 || static_cast<std::size_t>(m) >= caps.size()) return std::nullopt;
    return caps[m];
  }
  Bytes reservedOf(MemId m) const {
    return static_cast<std::size_t>(m) < reserved_.size() ? reserved_[m] : 0;
  }
  Bytes paddingOf() const {
    return info_.honours_extra_padding ? request_.extra_padding.value_or(0) : 0;
  }

  std::vector<MemId> usedPools() const {
    std::vector<MemId> used;
    for (SpecId s : p_.order) used.push_back(pool_of_[s]);
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());
    return used;
  }

  // The earliest step with the most live bytes in pool m, and those bytes.
  std::pair<TimeValue, Bytes> peak(MemId m) const {
    std::vector<std::pair<TimeValue, std::pair<int, SpecId>>> ev;  // ends before starts
    for (SpecId s : p_.order) {
      if (pool_of_[s] != m || p_.root[s] != s) continue;  // in-place: root's bytes
      ev.push_back({graph_.specs[s].first, {1, s}});
      ev.push_back({graph_.specs[s].last + 1, {0, s}});
    }
    std::sort(ev.begin(), ev.end());
    Bytes live = 0, best = 0;
    TimeValue at = ev.empty() ? 0 : ev.front().first;
    for (const auto& [t, e] : ev) {
      if (e.first == 1) {
        live = saturatingAdd(live, p_.size[e.second]);
        if (live > best) { best = live; at = t; }
      } else {
        live -= std::min(live, p_.size[e.second]);
      }
    }
    return {at, best};
  }

  // Roots of pool m alive at step t, largest first, ties by spec order.
  std::vector<SpecId> liveAt(MemId m, TimeValue t) const {
    std::vector<SpecId> out;
    for (SpecId s : p_.order)
      if (pool_of_[s] == m && p_.root[s] == s && graph_.specs[s].first <= t && t <= graph_.specs[s].last)
        out.push_back(s);
    std::stable_sort(out.begin(), out.end(),
                     [&](SpecId a, SpecId b) { return p_.size[a] > p_.size[b]; });
    return out;
  }

  // Moves the largest movable tensors live at `step` out of pool m until
  // the live bytes there fit its capacity (at least one if asked). False
  // when nothing could move.
  bool spill(MemId m, TimeValue step, Bytes live_bytes, bool at_least_one) {
    const auto& order = request_.options.spill_order;
    auto where = std::find(order.begin(), order.end(), m);
    if (where == order.end() || std::next(where) == order.end()) return false;
    const MemId target = *std::next(where);
    const Bytes cap = capacityOf(m).value_or(kMaxBytes);
    const Bytes room = cap - std::min(cap, saturatingAdd(reservedOf(m), paddingOf()));
    Bytes remaining = live_bytes;
    bool moved = false;
    for (SpecId s : liveAt(m, step)) {
      if (remaining <= room && (moved || !at_least_one)) break;
      if (graph_.specs[s].mem_id || pinned_[s]) continue;  // preset pool or pinned: stays
      for (SpecId q : members_[s]) pool_of_[q] = target;
      remaining -= std::min(remaining, p_.size[s]);
      moved = true;
    }
    if (moved) {
      cache_.erase(m);
      cache_.erase(target);
    }
    return moved;
  }

  // Before placing anything: no placement fits a pool whose live bytes at
  // some step exceed its capacity, so spill those first (cheap sweeps
  // instead of planning rounds).
  void spillByLiveBytes() {
    for (std::size_t guard = 0; guard <= p_.order.size(); ++guard) {
      bool moved = false;
      for (MemId m : usedPools()) {
        const auto cap = capacityOf(m);
        if (!cap) continue;
        const auto [step, live] = peak(m);
        if (saturatingAdd(saturatingAdd(reservedOf(m), paddingOf()), live) > *cap && spill(m, step, live, false)) {
          moved = true;
          break;
        }
      }
      if (!moved) return;
    }
  }

  [[noreturn]] void fail(MemId m, Bytes needed, TimeValue step, Bytes live_bytes) const {
    const auto& order = request_.options.spill_order;
    auto where = std::find(order.begin(), order.end(), m);
    const bool has_next = where != order.end() && std::next(where) != order.end();
    const std::vector<SpecId> live = liveAt(m, step);
    std::string names;
    for (std::size_t i = 0; i < live.size(); ++i) {
      if (i == 8) {
        names += fmt::format(", and {} more", live.size() - i);
        break;
      }
      names += fmt::format("{}{} ({})", i ? ", " : "", specName(graph_.specs[live[i]]),
                           showBytes(p_.size[live[i]]));
    }
    throw CapacityError(fmt::format(
        "pool {} needs {} > capacity {} at step {} ({} live, {}): {} live tensors: {}", m,
        showBytes(needed), showBytes(capacityOf(m).value_or(0)), step, showBytes(live_bytes),
        has_next ? "no live tensor can move (preset mem_id or pinned)" : "no pool to spill to",
        live.size(), names.empty() ? "none" : names));
  }

  const PoolRun& solved(MemId m) {
    auto it = cache_.find(m);
    if (it != cache_.end()) return it->second;
    PoolRun run;
    run.problem = buildPoolProblem(graph_, p_, m, pool_of_, request_.options, reserved_, paddingOf(),
                                   run.specs);
    for (Buffer& b : run.problem.buffers) {
      if (b.fixed_offset && !info_.honours_pins)
        throw InputError(fmt::format("{}: pinned offset {} cannot be honoured by algorithm '{}' "
                                     "(it places every tensor itself)",
                                     b.name, *b.fixed_offset, algo_.name()));
      if (!info_.honours_gaps) b.gaps.clear();   // holds all its bytes all its lifetime
      if (!info_.honours_hints) b.hint.reset();
    }
    run.solution = algo_.solve(run.problem, request_.params);
    if (run.solution.offsets.size() != run.problem.buffers.size())
      throw PlanError(fmt::format("algorithm '{}' returned {} offsets for {} buffers in pool {}",
                                  algo_.name(), run.solution.offsets.size(),
                                  run.problem.buffers.size(), m));
    if (run.solution.algorithm.empty()) run.solution.algorithm = std::string(algo_.name());
    return cache_.emplace(m, std::move(run)).first->second;
  }

  // Plans the pools that changed and lays out bufsizes.
  PoolsResult assemble() {
    const std::vector<MemId> used = usedPools();
    for (MemId m : used) solved(m);
    for (auto it = cache_.begin(); it != cache_.end();)  // pools emptied by spills
      it = std::binary_search(used.begin(), used.end(), it->first) ? std::next(it) : cache_.erase(it);
    PoolsResult at;  // pools: filled by run() once nothing spills
    std::map<MemId, Bytes> sizes;
    for (const auto& [m, run] : cache_) sizes[m] = run.solution.size;
    at.bufsizes = layoutBufsizes(info_.layout, sizes, reserved_);
    for (Bytes b : at.bufsizes) at.total = saturatingAdd(at.total, b);
    return at;
  }

  const GraphSpecs& graph_;
  const PreparedSpecs& p_;
  const Algorithm& algo_;
  const PlanRequest& request_;
  const std::vector<Bytes>& reserved_;
  const AlgorithmInfo& info_;
  std::vector<MemId> pool_of_;                 // by SpecId
  std::vector<std::vector<SpecId>> members_;   // by root: its in-place group
  std::vector<bool> pinned_;                   // by root: a member is pinned
  std::map<MemId, PoolRun> cache_;
};

}  // namespace

PoolsResult planPools(const GraphSpecs& graph, const PreparedSpecs& p, const Algorithm& algo,
                      const PlanRequest& request, const std::vector<Bytes>& reserved) {
  return Planner(graph, p, algo, request, reserved).run();
}

}  // namespace memplan::partition

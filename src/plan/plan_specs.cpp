// planSpecs: the bridge from planning specs to pools and back.
//
//  1. Take the planned specs in first-appearance order; size = nbytes
//     rounded up to the spec's alignment; lifetime [first, last] becomes the
//     half-open [first, last + 1).
//  2. In-place chains: a spec whose inplace_base is planned lives in its
//     chain root's pool (an unplanned base leaves it an ordinary spec).
//  3. Group by mem_id (default 1), one PoolProblem per mem_id, in spec
//     order; run the requested algorithm on each. "suite" runs greedy,
//     greedy_no_overlap and naive on the whole graph and keeps the smallest
//     sum(bufsizes) (first wins ties), as ExecuTorch's suite does.
//  4. bufsizes: the ExecuTorch layout for the ExecuTorch algorithms (greedy:
//     one entry per mem_id up to the largest used, unused ones 0, [0, 0]
//     when nothing is planned; naive: the reserved list extended), else
//     bufsizes[m] = max(reserved[m], pool size) up to
//     max(len(reserved) - 1, largest used mem_id, 1).
//  5. Capacities (PlanOptions::capacities, per mem_id): a pool larger than
//     its capacity spills tensors to the next pool of spill_order and is
//     planned again, until every pool fits. The step with the most live
//     bytes is where tensors leave: the largest live ones first (ties: the
//     earliest spec), enough to bring that step under the capacity, at
//     least one. Specs with a preset mem_id or a pinned offset stay. With
//     no next pool, PlanError names the step and the tensors live there.
#include <algorithm>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "memplan/limits.h"
#include "memplan/plan.h"

namespace memplan {

std::vector<SpecId> GraphSpecs::planned() const {
  std::vector<SpecId> out;
  for (SpecId i = 0; i < static_cast<SpecId>(specs.size()); ++i)
    if (specs[i].planned) out.push_back(i);
  return out;
}

const Allocation* GraphPlan::find(SpecId s) const {
  // Allocations are in spec order.
  auto it = std::lower_bound(allocations.begin(), allocations.end(), s,
                             [](const Allocation& a, SpecId id) { return a.spec < id; });
  if (it != allocations.end() && it->spec == s) return &*it;
  for (const Allocation& a : allocations)  // tolerate hand-built plans
    if (a.spec == s) return &a;
  return nullptr;
}

namespace {

using limits::kMaxMemId;

std::string showBytes(Bytes b) {
  constexpr Bytes kKiB = 1024, kMiB = kKiB * 1024;
  if (b >= kMiB && b % kMiB == 0) return fmt::format("{} MiB", b / kMiB);
  if (b >= kKiB && b % kKiB == 0) return fmt::format("{} KiB", b / kKiB);
  return fmt::format("{} B", b);
}

std::string specName(const Spec& s) {
  return s.name.empty() ? fmt::format("spec {}", s.id) : s.name;
}

// Everything about the planned specs that does not depend on the pools.
struct Prepared {
  std::vector<SpecId> order;          // planned specs, first-appearance order
  std::vector<Bytes> size;            // by SpecId: aligned size
  std::vector<SpecId> root;           // by SpecId: in-place chain root (or itself)
  std::vector<MemId> home;            // by SpecId: pool (the root's)
};

Prepared prepare(const GraphSpecs& graph) {
  Prepared p;
  const auto n = static_cast<SpecId>(graph.specs.size());
  p.order = graph.planned();
  p.size.assign(n, 0);
  p.root.assign(n, kNone);
  p.home.assign(n, 0);
  for (SpecId s : p.order) {
    const Spec& spec = graph.specs[s];
    if (spec.first > spec.last || spec.first < 0 ||
        spec.last >= std::numeric_limits<TimeValue>::max())
      throw InputError(fmt::format("{}: lifetime [{}, {}] is not a valid closed interval",
                                   specName(spec), spec.first, spec.last));
    if (spec.nbytes > kMaxBytes)
      throw InputError(fmt::format("{}: {} bytes exceeds the limit of {}", specName(spec),
                                   spec.nbytes, kMaxBytes));
    const Bytes align = std::max<Bytes>(spec.alignment, 1);
    if ((align & (align - 1)) != 0)
      throw InputError(fmt::format("{}: alignment {} is not a power of two", specName(spec), align));
    const auto size = alignUp(spec.nbytes, align);
    if (!size) throw InputError(fmt::format("{}: aligned size overflows", specName(spec)));
    p.size[s] = *size;
    if (spec.mem_id && (*spec.mem_id < 1 || *spec.mem_id > kMaxMemId))
      throw InputError(fmt::format("{}: mem_id {} out of range [1, {}] (0 holds constants)",
                                   specName(spec), *spec.mem_id, kMaxMemId));
  }
  // Roots: follow planned bases; an unplanned base ends the chain.
  for (SpecId s : p.order) {
    SpecId r = s;
    for (SpecId steps = 0;; ++steps) {
      const SpecId b = graph.specs[r].inplace_base;
      if (b == kNone || b < 0 || b >= n || !graph.specs[b].planned) break;
      if (p.root[b] != kNone) {  // known already: long chains stay O(n)
        r = p.root[b];
        break;
      }
      if (steps > n)
        throw InputError(fmt::format("{}: inplace_base chain forms a cycle",
                                     specName(graph.specs[s])));
      r = b;
    }
    p.root[s] = r;
  }
  for (SpecId s : p.order) p.home[s] = graph.specs[p.root[s]].mem_id.value_or(1);
  return p;
}

struct PoolRun {
  PoolProblem problem;
  std::vector<SpecId> specs;   // buffer index -> spec
  PoolSolution solution;
  Device device;
};

struct Attempt {
  std::map<MemId, PoolRun> pools;
  std::vector<Bytes> bufsizes;
  std::string algorithm;       // the algorithm that made it (suite: winner)
  Bytes total = 0;
};

PoolProblem buildProblem(const GraphSpecs& graph, const Prepared& p, MemId m,
                         const std::vector<MemId>& pool_of, const PlanRequest& request,
                         const std::vector<Bytes>& reserved, Bytes extra_padding,
                         std::vector<SpecId>& specs_out) {
  PoolProblem prob;
  prob.mem_id = m;
  prob.reserved = static_cast<std::size_t>(m) < reserved.size() ? reserved[m] : 0;
  prob.extra_padding = extra_padding;
  const auto& caps = request.options.capacities;
  if (static_cast<std::size_t>(m) < caps.size()) prob.capacity = caps[m];
  std::vector<BufferId> index(graph.specs.size(), kNone);
  for (SpecId s : p.order) {
    if (pool_of[s] != m) continue;
    const Spec& spec = graph.specs[s];
    Buffer b;
    b.id = static_cast<BufferId>(prob.buffers.size());
    b.name = specName(spec);
    b.start = spec.first;
    b.end = spec.last + 1;
    b.size = p.size[s];
    b.nbytes = spec.nbytes;
    b.alignment = std::max<Bytes>(spec.alignment, 1);
    b.fixed_offset = spec.offset;
    b.hint = spec.hint;
    b.gaps = spec.gaps;
    index[s] = b.id;
    prob.buffers.push_back(std::move(b));
    specs_out.push_back(s);
  }
  // Bases may come later in spec order: link once every index is known.
  for (Buffer& b : prob.buffers) {
    const SpecId s = specs_out[b.id];
    if (p.root[s] != s) b.inplace_base = index[graph.specs[s].inplace_base];
  }
  return prob;
}

// Bytes a + b, saturating at kMaxBytes (only compared, never placed).
Bytes satAdd(Bytes a, Bytes b) { return checkedAdd(a, b).value_or(kMaxBytes); }

// Plans the pools of one algorithm, spilling over capacities (step 5).
// Pools are cached by mem_id and planned again only when their members
// change.
class Planner {
 public:
  Planner(const GraphSpecs& graph, const Prepared& p, const Algorithm& algo,
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

  Attempt run() {
    const auto& order = request_.options.spill_order;
    for (MemId m : order)
      if (m < 1 || m > kMaxMemId)
        throw InputError(fmt::format("spill order names pool {}, outside [1, {}]", m, kMaxMemId));
    // Every move sends a group one place further along spill_order, so
    // there are at most (specs x pools) moves; each round makes one or more.
    const std::size_t max_rounds = p_.order.size() * (order.size() + 1) + 1;
    for (std::size_t round = 0;; ++round) {
      spillByLiveBytes();
      Attempt at = assemble();
      MemId over = kNone;
      for (const auto& [m, run] : cache_) {
        const auto c = capacityOf(m);
        if (c && at.bufsizes[m] > *c) { over = m; break; }
      }
      if (over == kNone) return at;
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
        live = satAdd(live, p_.size[e.second]);
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
    const Bytes room = cap - std::min(cap, satAdd(reservedOf(m), paddingOf()));
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
        if (satAdd(satAdd(reservedOf(m), paddingOf()), live) > *cap && spill(m, step, live, false)) {
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
    throw PlanError(fmt::format(
        "pool {} needs {} > capacity {} at step {} ({} live, {}): live tensors: {}", m,
        showBytes(needed), showBytes(capacityOf(m).value_or(0)), step, showBytes(live_bytes),
        has_next ? "no live tensor can move (preset mem_id or pinned)" : "no pool to spill to",
        names.empty() ? "none" : names));
  }

  const PoolRun& solved(MemId m) {
    auto it = cache_.find(m);
    if (it != cache_.end()) return it->second;
    PoolRun run;
    run.problem = buildProblem(graph_, p_, m, pool_of_, request_, reserved_, paddingOf(), run.specs);
    for (Buffer& b : run.problem.buffers) {
      if (b.fixed_offset && !info_.honours_pins)
        throw InputError(fmt::format("{}: pinned offset {} cannot be honoured by algorithm '{}' "
                                     "(it places every tensor itself)",
                                     b.name, *b.fixed_offset, algo_.name()));
      if (!info_.honours_gaps) b.gaps.clear();   // holds all its bytes all its lifetime
      if (!info_.honours_hints) b.hint.reset();
    }
    run.device = graph_.specs[run.specs.front()].device;
    run.solution = algo_.solve(run.problem, request_.params);
    if (run.solution.offsets.size() != run.problem.buffers.size())
      throw PlanError(fmt::format("algorithm '{}' returned {} offsets for {} buffers in pool {}",
                                  algo_.name(), run.solution.offsets.size(),
                                  run.problem.buffers.size(), m));
    if (run.solution.algorithm.empty()) run.solution.algorithm = std::string(algo_.name());
    return cache_.emplace(m, std::move(run)).first->second;
  }

  // Plans the pools that changed and lays out bufsizes (step 4).
  Attempt assemble() {
    const std::vector<MemId> used = usedPools();
    for (MemId m : used) solved(m);
    for (auto it = cache_.begin(); it != cache_.end();)  // pools emptied by spills
      it = std::binary_search(used.begin(), used.end(), it->first) ? std::next(it) : cache_.erase(it);
    Attempt at;
    at.algorithm = std::string(algo_.name());
    at.pools = cache_;
    const MemId max_used = used.empty() ? 0 : used.back();
    if (info_.layout == BufsizesLayout::ExecutorchGreedy) {
      at.bufsizes.assign(std::max<std::size_t>(2, static_cast<std::size_t>(max_used) + 1), 0);
      for (auto& [m, run] : at.pools) at.bufsizes[m] = run.solution.size;
    } else if (info_.layout == BufsizesLayout::ExecutorchNaive) {
      at.bufsizes = reserved_.empty() ? std::vector<Bytes>{0, 0} : reserved_;
      if (at.bufsizes.size() < static_cast<std::size_t>(max_used) + 1)
        at.bufsizes.resize(max_used + 1, 0);
      for (auto& [m, run] : at.pools) at.bufsizes[m] = run.solution.size;
    } else {
      const std::size_t len =
          std::max<std::size_t>({reserved_.size(), static_cast<std::size_t>(max_used) + 1, 2});
      at.bufsizes.assign(len, 0);
      for (std::size_t m = 1; m < reserved_.size(); ++m) at.bufsizes[m] = reserved_[m];
      for (auto& [m, run] : at.pools) at.bufsizes[m] = std::max(at.bufsizes[m], run.solution.size);
    }
    for (Bytes b : at.bufsizes) at.total = satAdd(at.total, b);
    return at;
  }

  const GraphSpecs& graph_;
  const Prepared& p_;
  const Algorithm& algo_;
  const PlanRequest& request_;
  const std::vector<Bytes>& reserved_;
  const AlgorithmInfo& info_;
  std::vector<MemId> pool_of_;                 // by SpecId
  std::vector<std::vector<SpecId>> members_;   // by root: its in-place group
  std::vector<bool> pinned_;                   // by root: a member is pinned
  std::map<MemId, PoolRun> cache_;
};

Attempt planWithCapacities(const GraphSpecs& graph, const Prepared& p, const Algorithm& algo,
                           const PlanRequest& request, const std::vector<Bytes>& reserved) {
  return Planner(graph, p, algo, request, reserved).run();
}

}  // namespace

void recordRequest(Plan& plan, const PlanRequest& request) {
  plan.algorithm = request.algorithm;
  plan.options = request.options;
  plan.extra_padding = request.extra_padding.value_or(0);
  plan.effort = request.params.effort;
  plan.time_limit_seconds = request.params.time_limit_seconds;
  plan.seed = request.params.seed;
}

GraphPlan planSpecs(GraphSpecs specs, const PlanRequest& request,
                    const std::vector<Bytes>& reserved) {
  const Prepared p = prepare(specs);

  const auto requested = makeAlgorithm(request.algorithm.empty() ? "auto" : request.algorithm);
  if (!requested) {
    std::string known;
    for (const std::string& n : algorithmNames()) known += (known.empty() ? "" : ", ") + n;
    throw InputError(fmt::format("unknown algorithm '{}' (known: {})", request.algorithm, known));
  }
  Attempt best;
  if (!requested->info().whole_graph_candidates.empty()) {
    // Whole-graph comparison, first wins ties. A candidate that cannot meet
    // the capacities drops out; if all do, the first one's error stands.
    std::optional<PlanError> first_error;
    bool have = false;
    for (std::string_view name : requested->info().whole_graph_candidates) {
      const auto algo = makeAlgorithm(name);
      if (!algo) throw InputError(fmt::format("algorithm '{}' is not built in", name));
      try {
        Attempt at = planWithCapacities(specs, p, *algo, request, reserved);
        if (!have || at.total < best.total) {
          best = std::move(at);
          have = true;
        }
      } catch (const PlanError& e) {
        if (!first_error) first_error = e;
      }
    }
    if (!have) throw *first_error;
  } else {
    best = planWithCapacities(specs, p, *requested, request, reserved);
  }

  GraphPlan plan;
  plan.graph = specs.graph;
  plan.bufsizes = best.bufsizes;
  plan.pool_devices.assign(plan.bufsizes.size(), Device{});
  // Allocations in spec order.
  std::vector<std::pair<SpecId, Allocation>> allocs;
  for (auto& [m, run] : best.pools) {
    plan.pool_devices[m] = run.device;
    PoolInfo info;
    info.mem_id = m;
    info.device = run.device;
    info.size = plan.bufsizes[m];
    info.lower_bound = lowerBound(run.problem);
    info.reserved = run.problem.reserved;
    info.naive_size = run.problem.reserved;
    // No reuse at all, with the same prefix and padding as the plan.
    for (const Buffer& b : run.problem.buffers)
      if (b.inplace_base == kNone) info.naive_size = satAdd(info.naive_size, b.size);
    info.naive_size = satAdd(info.naive_size, run.problem.extra_padding);
    info.buffers = run.problem.buffers.size();
    info.algorithm = run.solution.algorithm;
    info.proven_optimal = run.solution.proven_optimal || info.size == info.lower_bound;
    info.work = run.solution.work;
    plan.pools.push_back(std::move(info));
    for (std::size_t i = 0; i < run.specs.size(); ++i) {
      Allocation a;
      a.spec = run.specs[i];
      a.mem_id = m;
      a.mem_obj_id = run.solution.mem_obj_ids.size() > i ? run.solution.mem_obj_ids[i] : 0;
      a.offset = run.solution.offsets[i];
      a.size = run.problem.buffers[i].size;
      allocs.emplace_back(a.spec, a);
    }
  }
  std::sort(allocs.begin(), allocs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  plan.allocations.reserve(allocs.size());
  for (auto& [s, a] : allocs) plan.allocations.push_back(a);
  plan.specs = std::move(specs);
  return plan;
}

}  // namespace memplan

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

constexpr MemId kMaxMemId = 4096;  // bufsizes has one entry per mem_id

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
                         const std::vector<Bytes>& reserved, bool naive,
                         std::vector<SpecId>& specs_out) {
  PoolProblem prob;
  prob.mem_id = m;
  prob.reserved = static_cast<std::size_t>(m) < reserved.size() ? reserved[m] : 0;
  prob.extra_padding = naive ? 0 : request.extra_padding;  // naive ignores it
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

Attempt runAlgorithm(const GraphSpecs& graph, const Prepared& p, const Algorithm& algo,
                     const std::vector<MemId>& pool_of, const PlanRequest& request,
                     const std::vector<Bytes>& reserved) {
  const bool exact = algo.executorchExact();
  const bool naive = algo.name() == "naive";
  Attempt at;
  at.algorithm = std::string(algo.name());
  std::vector<MemId> used;
  for (SpecId s : p.order)
    if (std::find(used.begin(), used.end(), pool_of[s]) == used.end()) used.push_back(pool_of[s]);
  std::sort(used.begin(), used.end());
  for (MemId m : used) {
    PoolRun run;
    run.problem = buildProblem(graph, p, m, pool_of, request, reserved, naive, run.specs);
    if (exact)
      for (const Buffer& b : run.problem.buffers)
        if (b.fixed_offset)
          throw InputError(fmt::format("{}: pinned offset {} cannot be honoured by algorithm '{}' "
                                       "(ExecuTorch's algorithms place freely)",
                                       b.name, *b.fixed_offset, algo.name()));
    run.device = graph.specs[run.specs.front()].device;
    run.solution = algo.solve(run.problem, request.params);
    if (run.solution.offsets.size() != run.problem.buffers.size())
      throw PlanError(fmt::format("algorithm '{}' returned {} offsets for {} buffers in pool {}",
                                  algo.name(), run.solution.offsets.size(),
                                  run.problem.buffers.size(), m));
    if (run.solution.algorithm.empty()) run.solution.algorithm = at.algorithm;
    at.pools.emplace(m, std::move(run));
  }

  // bufsizes (see the header comment, step 4).
  const MemId max_used = used.empty() ? 0 : used.back();
  if (exact && !naive) {
    at.bufsizes.assign(std::max<std::size_t>(2, static_cast<std::size_t>(max_used) + 1), 0);
    for (auto& [m, run] : at.pools) at.bufsizes[m] = run.solution.size;
  } else if (exact) {
    at.bufsizes = reserved.empty() ? std::vector<Bytes>{0, 0} : reserved;
    if (at.bufsizes.size() < static_cast<std::size_t>(max_used) + 1) at.bufsizes.resize(max_used + 1, 0);
    for (auto& [m, run] : at.pools) at.bufsizes[m] = run.solution.size;
  } else {
    const std::size_t len = std::max<std::size_t>(
        {reserved.size(), static_cast<std::size_t>(max_used) + 1, 2});
    at.bufsizes.assign(len, 0);
    for (std::size_t m = 1; m < reserved.size(); ++m) at.bufsizes[m] = reserved[m];
    for (auto& [m, run] : at.pools) at.bufsizes[m] = std::max(at.bufsizes[m], run.solution.size);
  }
  for (Bytes b : at.bufsizes) {
    const auto t = checkedAdd(at.total, b);
    at.total = t ? *t : kMaxBytes;
  }
  return at;
}

// Capacity of pool m, if limited.
std::optional<Bytes> capacityOf(const PlanRequest& request, MemId m) {
  const auto& caps = request.options.capacities;
  if (m < 0 || static_cast<std::size_t>(m) >= caps.size()) return std::nullopt;
  return caps[m];
}

// The earliest step with the most live bytes in `run`, and those bytes.
std::pair<TimeValue, Bytes> peakStep(const PoolRun& run) {
  const auto& bufs = run.problem.buffers;
  std::vector<std::pair<TimeValue, std::pair<int, BufferId>>> ev;
  ev.reserve(bufs.size() * 2);
  for (const Buffer& b : bufs) {
    if (b.inplace_base != kNone) continue;  // shares its root's bytes
    ev.push_back({b.start, {1, b.id}});
    ev.push_back({b.end, {0, b.id}});       // ends sort before starts
  }
  std::sort(ev.begin(), ev.end());
  Bytes live = 0, best = 0;
  TimeValue at = bufs.empty() ? 0 : bufs.front().start;
  for (const auto& [t, e] : ev) {
    if (e.first == 1) {
      live += bufs[e.second].size;
      if (live > best) { best = live; at = t; }
    } else {
      live -= bufs[e.second].size;
    }
  }
  return {at, best};
}

// Specs of `run` (roots only) alive at step t, largest first, ties by spec.
std::vector<SpecId> liveAt(const PoolRun& run, TimeValue t) {
  std::vector<BufferId> ids;
  for (const Buffer& b : run.problem.buffers)
    if (b.inplace_base == kNone && b.start <= t && t < b.end) ids.push_back(b.id);
  std::stable_sort(ids.begin(), ids.end(), [&](BufferId a, BufferId b) {
    return run.problem.buffers[a].size > run.problem.buffers[b].size;
  });
  std::vector<SpecId> out;
  for (BufferId i : ids) out.push_back(run.specs[i]);
  return out;
}

// Plans with `algo`, spilling over capacities. Throws PlanError when a pool
// cannot be brought under its capacity.
Attempt planWithCapacities(const GraphSpecs& graph, const Prepared& p, const Algorithm& algo,
                           const PlanRequest& request, const std::vector<Bytes>& reserved) {
  std::vector<MemId> pool_of = p.home;
  const auto& order = request.options.spill_order;
  // Every move sends a group one place further along spill_order, so the
  // loop ends after at most (specs x pools) rounds.
  const std::size_t max_rounds = p.order.size() * (order.size() + 1) + 1;
  for (std::size_t round = 0;; ++round) {
    Attempt at = runAlgorithm(graph, p, algo, pool_of, request, reserved);
    const PoolRun* over = nullptr;
    Bytes cap = 0;
    for (const auto& [m, run] : at.pools) {
      const auto c = capacityOf(request, m);
      if (c && at.bufsizes[m] > *c) { over = &run; cap = *c; break; }
    }
    if (!over) return at;
    const MemId m = over->problem.mem_id;
    const auto [step, live_bytes] = peakStep(*over);
    const std::vector<SpecId> live = liveAt(*over, step);

    auto where = std::find(order.begin(), order.end(), m);
    const bool has_next = where != order.end() && std::next(where) != order.end();
    std::vector<SpecId> moving;
    if (has_next && round < max_rounds) {
      // Bytes the pool can hold for tensors at that step.
      const Bytes room = cap - std::min(cap, over->problem.reserved + over->problem.extra_padding);
      Bytes remaining = live_bytes;
      for (SpecId s : live) {
        const Spec& spec = graph.specs[s];
        if (spec.mem_id || spec.offset) continue;  // preset pool or pinned: stays
        bool pinned_member = false;                 // a pinned member pins the group
        for (SpecId q : p.order)
          if (p.root[q] == s && pool_of[q] == m && graph.specs[q].offset) pinned_member = true;
        if (pinned_member) continue;
        moving.push_back(s);
        remaining -= std::min(remaining, p.size[s]);
        if (remaining <= room) break;
      }
    }
    if (moving.empty()) {
      std::string names;
      std::size_t shown = 0;
      for (SpecId s : live) {
        if (shown == 8) { names += fmt::format(", and {} more", live.size() - shown); break; }
        names += fmt::format("{}{} ({})", shown ? ", " : "", specName(graph.specs[s]),
                             showBytes(p.size[s]));
        ++shown;
      }
      const std::string why = !has_next ? "no pool to spill to"
                                        : "no live tensor can move (preset mem_id or pinned)";
      throw PlanError(fmt::format(
          "pool {} needs {} > capacity {} at step {} ({} live, {}): live tensors: {}", m,
          showBytes(at.bufsizes[m]), showBytes(cap), step, showBytes(live_bytes), why,
          names.empty() ? "none" : names));
    }
    const MemId target = *std::next(where);
    if (target < 1 || target > kMaxMemId)
      throw InputError(fmt::format("spill order names pool {}, outside [1, {}]", target, kMaxMemId));
    for (SpecId s : moving)
      for (SpecId q : p.order)
        if (p.root[q] == s) pool_of[q] = target;
  }
}

}  // namespace

GraphPlan planSpecs(GraphSpecs specs, const PlanRequest& request,
                    const std::vector<Bytes>& reserved) {
  const Prepared p = prepare(specs);

  Attempt best;
  if (request.algorithm == "suite") {
    // Whole-graph comparison, first wins ties. A candidate that cannot meet
    // the capacities drops out; if all do, the first one's error stands.
    std::optional<PlanError> first_error;
    bool have = false;
    for (const char* name : {"greedy", "greedy_no_overlap", "naive"}) {
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
    const auto algo = makeAlgorithm(request.algorithm);
    if (!algo) {
      std::string known;
      for (const std::string& n : algorithmNames()) known += (known.empty() ? "" : ", ") + n;
      throw InputError(fmt::format("unknown algorithm '{}' (known: {})", request.algorithm, known));
    }
    best = planWithCapacities(specs, p, *algo, request, reserved);
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
    for (const Buffer& b : run.problem.buffers)
      if (b.inplace_base == kNone) info.naive_size = checkedAdd(info.naive_size, b.size).value_or(kMaxBytes);
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

// Planning an ExecuTorch program again (see memplan/pte.h).
//
// Per method (each an entry graph of the walker, walk.h; a program has no
// bodies and pins its shared state):
//  1. Specs from the method's graph; every tensor keeps its memory id (a
//     preset pool); state shared with another method is pinned at its
//     offset. An algorithm that places every tensor itself (ExecuTorch's)
//     gets the pinned tensors as a reserved prefix of their pool instead,
//     then they are put back at their offsets.
//  2. Each pool is compared with the file's: unless the algorithm is
//     ExecuTorch-exact, a pool memplan cannot make smaller keeps the file's
//     placement, when that placement is safe under memplan's lifetimes and
//     aligned as the plan says (what `verify` of the written plan checks).
//  3. Buffer sizes: one per memory id of the file's list; pools memplan
//     does not plan keep their size; planned tensors no instruction uses go
//     to offset 0 (when their file offset does not fit), so a pool holds at
//     least the largest of them.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "memplan/pte.h"
#include "plan/walk.h"

namespace memplan {
namespace {

// Which pools of the file's placement may be kept: each pool's specs and
// allocations, on their own, through the verifier (O(n log n) in all), with
// the specs' own alignment -- the planning alignment or more. The written
// plan records that alignment and `verify`/`replay` of the plan file check
// it, so a placement that is only safe byte for byte (a file planned at
// alignment 1, offsets such as 4) would pass here and fail there; it is
// planned again instead. (Recording alignment 1 in the plan would keep it,
// but would also relax every other pool's check and the report's lower
// bounds, which are computed at the planning alignment.)
std::set<MemId> keepablePools(const GraphPlan& original, const GraphSpecs& specs) {
  std::map<MemId, std::vector<const Allocation*>> by_pool;
  for (const Allocation& a : original.allocations) by_pool[a.mem_id].push_back(&a);
  PlanOptions options;
  options.alignment = 1;  // each spec carries its alignment
  std::set<MemId> keep;
  for (const auto& [m, list] : by_pool) {
    GraphPlan one;
    one.graph = original.graph;
    one.bufsizes = original.bufsizes;
    for (const Allocation* a : list) {
      Spec s = original.specs.specs[static_cast<std::size_t>(a->spec)];
      s.alignment = specs.specs[static_cast<std::size_t>(a->spec)].alignment;
      s.id = static_cast<SpecId>(one.specs.specs.size());
      s.inplace_base = kNone;
      one.allocations.push_back({s.id, a->mem_id, a->mem_obj_id, a->offset, a->size});
      one.specs.specs.push_back(std::move(s));
    }
    for (const PoolInfo& pool : original.pools)
      if (pool.mem_id == m) one.pools.push_back(pool);
    if (verifyGraphPlan(one, options, 1).ok()) keep.insert(m);
  }
  return keep;
}

// The lower bound a kept pool of the file is reported with. `lower_bound`
// was computed with sizes rounded up to the alignment, but the file gives
// its last tensor only its own bytes, so an aligned file placement may end
// below it; then the bound of the exact bytes (`exact_bound`, the live bytes
// at the peak) is the one that holds, never a bound the arena is below.
Bytes keptPoolBound(Bytes lower_bound, Bytes exact_bound, Bytes file_size) {
  return file_size < lower_bound ? std::min(exact_bound, file_size) : lower_bound;
}

// Tensors of method `g`: stored method by method.
std::pair<std::size_t, std::size_t> methodTensors(const PteProgram& p, GraphId g) {
  const auto by = [](const PteTensor& t, GraphId m) { return t.method < m; };
  const auto lo = std::lower_bound(p.tensors.begin(), p.tensors.end(), g, by);
  const auto hi = std::lower_bound(lo, p.tensors.end(), g + 1, by);
  return {static_cast<std::size_t>(lo - p.tensors.begin()), static_cast<std::size_t>(hi - p.tensors.begin())};
}

// Pinned state planned as pins, or (for algorithms that do not honour
// pins) as a reserved prefix the pinned tensors are put back into.
GraphPlan planWithPins(const GraphSpecs& specs, const PlanRequest& request, const AlgorithmInfo& info,
                       std::size_t nbuf) {
  GraphSpecs to_plan = specs;
  std::vector<Bytes> reserved;
  std::vector<SpecId> pinned;
  if (!info.honours_pins) {
    for (Spec& s : to_plan.specs) {
      if (!s.planned || !s.offset) continue;
      const auto m = static_cast<std::size_t>(*s.mem_id);
      if (reserved.size() <= m) reserved.resize(m + 1, 0);
      const Bytes end = checkedAdd(*s.offset, alignUp(s.nbytes, s.alignment).value_or(kMaxBytes))
                            .value_or(kMaxBytes);
      reserved[m] = std::max(reserved[m], end);
      pinned.push_back(s.id);
      s.planned = false;
    }
  }
  GraphPlan gp = planSpecs(std::move(to_plan), request, reserved);
  gp.parent = kNone;
  if (!pinned.empty()) {
    gp.specs = specs;
    for (SpecId s : pinned) {
      const Spec& spec = specs.specs[static_cast<std::size_t>(s)];
      gp.allocations.push_back({s, *spec.mem_id, 0, *spec.offset,
                                alignUp(spec.nbytes, spec.alignment).value_or(kMaxBytes)});
    }
    std::sort(gp.allocations.begin(), gp.allocations.end(),
              [](const Allocation& a, const Allocation& b) { return a.spec < b.spec; });
    for (PoolInfo& pool : gp.pools) pool.reserved = 0;  // the prefix held the pinned tensors
  }
  if (gp.bufsizes.size() < std::max(reserved.size(), nbuf))
    gp.bufsizes.resize(std::max(reserved.size(), nbuf), 0);
  for (std::size_t m = 1; m < reserved.size(); ++m) gp.bufsizes[m] = std::max(gp.bufsizes[m], reserved[m]);
  return gp;
}

// Pools with planned tensors, and what the plan says about them (a pool of
// pinned tensors alone is its prefix). Returns each pool's specs.
std::map<MemId, std::vector<SpecId>> completePools(GraphPlan& gp, const PlanRequest& request) {
  std::map<MemId, std::vector<SpecId>> members;
  for (const Allocation& a : gp.allocations) members[a.mem_id].push_back(a.spec);
  for (const auto& [m, list] : members) {
    auto it = std::find_if(gp.pools.begin(), gp.pools.end(), [m = m](const PoolInfo& pi) { return pi.mem_id == m; });
    if (it == gp.pools.end()) {  // only pinned tensors: the prefix is the pool
      PoolInfo pi;
      pi.mem_id = m;
      pi.size = gp.bufsizes[static_cast<std::size_t>(m)];
      pi.lower_bound = pi.size;
      pi.naive_size = pi.size;
      pi.buffers = list.size();
      pi.algorithm = gp.pools.empty() ? request.algorithm : gp.pools.front().algorithm;
      pi.proven_optimal = true;
      gp.pools.push_back(pi);
    }
  }
  std::sort(gp.pools.begin(), gp.pools.end(), [](const PoolInfo& a, const PoolInfo& b) { return a.mem_id < b.mem_id; });
  return members;
}

// Keeps the file's placement of each pool where memplan does not do better.
void keepFilePlacement(GraphPlan& gp, const PteMethod& method, const GraphPlan& original,
                       const GraphPlan& exact) {
  const std::set<MemId> keep = keepablePools(original, gp.specs);
  std::map<MemId, std::vector<Allocation*>> by_pool;
  for (Allocation& a : gp.allocations) by_pool[a.mem_id].push_back(&a);
  for (PoolInfo& pool : gp.pools) {
    const auto m = static_cast<std::size_t>(pool.mem_id);
    const Bytes file_size = method.buffer_sizes[m];
    if (gp.bufsizes[m] < file_size || !keep.count(pool.mem_id)) continue;
    for (Allocation* ap : by_pool[pool.mem_id]) {
      Allocation& a = *ap;
      const Allocation* o = original.find(a.spec);
      a.offset = o->offset;
      a.size = o->size;
      a.mem_obj_id = 0;
    }
    Bytes exact_bound = 0;
    for (const PoolInfo& e : exact.pools)
      if (e.mem_id == pool.mem_id) exact_bound = e.lower_bound;
    gp.bufsizes[m] = file_size;
    pool.size = file_size;
    pool.algorithm = "original";
    pool.lower_bound = keptPoolBound(pool.lower_bound, exact_bound, file_size);
    pool.proven_optimal = file_size <= pool.lower_bound;
  }
}

// The sizes of the file's list for pools memplan leaves alone, grown
// for tensors no instruction uses that would not fit.
void fileSizes(GraphPlan& gp, const PteProgram& p, GraphId g,
               const std::map<MemId, std::vector<SpecId>>& members, std::size_t nbuf) {
  const PteMethod& method = p.methods[static_cast<std::size_t>(g)];
  for (std::size_t m = 1; m < nbuf; ++m)
    if (!members.count(static_cast<MemId>(m))) gp.bufsizes[m] = method.buffer_sizes[m];
  const auto [first_tensor, end_tensor] = methodTensors(p, g);
  for (std::size_t t = first_tensor; t < end_tensor; ++t) {
    const PteTensor& x = p.tensors[t];
    if (!x.allocation || x.used) continue;
    const auto m = static_cast<std::size_t>(x.allocation->mem_id);
    if (m >= nbuf) continue;  // reported by verifyPte
    const Bytes n = p.model.tensors[t].nbytes;
    const Bytes size = gp.bufsizes[m];
    if (x.allocation->offset <= size && n <= size - x.allocation->offset) continue;  // stays
    gp.bufsizes[m] = std::max(gp.bufsizes[m], n);
  }
  gp.bufsizes.resize(std::max<std::size_t>(nbuf, 1));
  gp.bufsizes[0] = 0;
  for (PoolInfo& pool : gp.pools) pool.size = gp.bufsizes[static_cast<std::size_t>(pool.mem_id)];
  gp.pool_devices.assign(gp.bufsizes.size(), Device{});
}

GraphPlan planMethod(const PteProgram& p, GraphId g, const PlanRequest& request,
                     const AlgorithmInfo& info, const GraphPlan& original, const GraphPlan& exact) {
  const PteMethod& method = p.methods[static_cast<std::size_t>(g)];
  const GraphSpecs specs = collectSpecs(p.model, g, request.options);
  const std::size_t nbuf = method.buffer_sizes.size();
  for (const Spec& s : specs.specs)
    if (s.planned && (!s.mem_id || static_cast<std::size_t>(*s.mem_id) >= nbuf))
      throw InputError(fmt::format("{}: {}: '{}' is in memory id {}, but non_const_buffer_sizes has "
                                   "{} entries: the file's plan is broken, memplan cannot keep it",
                                   p.source, methodLabel(p, g), s.name, s.mem_id.value_or(0), nbuf));
  GraphPlan gp = planWithPins(specs, request, info, nbuf);
  gp.graph = g;
  const std::map<MemId, std::vector<SpecId>> members = completePools(gp, request);
  if (!info.executorch_exact) keepFilePlacement(gp, method, original, exact);
  fileSizes(gp, p, g, members, nbuf);
  return gp;
}

}  // namespace

Bytes pteDefaultExtraPadding(const PteProgram& p) {
  for (const PteMethod& m : p.methods)
    for (const std::string& id : m.delegates)
      if (id == "XnnpackBackend") return 64;
  return 0;
}

Plan planPte(const PteProgram& p, const PlanRequest& request) {
  const AlgorithmInfo* info = findAlgorithmInfo(request.algorithm.empty() ? "auto" : request.algorithm);
  if (!info) throw InputError(fmt::format("unknown algorithm '{}'", request.algorithm));
  const PlanOptions& o = request.options;
  // Which tensors a .pte plans, and in which pools, the file fixes.
  const std::pair<std::string_view, bool> fixed[] = {
      {"alloc_graph_input", !o.alloc_graph_input},
      {"alloc_graph_output", !o.alloc_graph_output},
      {"alloc_mutable_buffers", !o.alloc_mutable_buffers},
      {"per_device", o.per_device},
      {"spill_order", !o.spill_order.empty()},
      // ExecuTorch's share_mutable_buffers moves state to memory id 2; a
      // program's state already has its memory ids and offsets, which every
      // method sharing it keeps (pinned below).
      {"share_mutable_buffers", o.share_mutable_buffers},
  };
  for (const auto& [field, set] : fixed)
    if (set)
      throw InputError(fmt::format("PlanRequest.options.{}: does not apply to {}: a .pte keeps which "
                                   "tensors it plans and their memory ids",
                                   field, p.source));
  PlanRequest r = request;
  if (r.algorithm.empty()) r.algorithm = "auto";
  r.options.alignment = planningAlignment(o);
  const Plan original = embeddedPlan(p, r.options.alignment);
  const Plan exact = embeddedPlan(p, 1);  // lower bounds of the exact bytes
  // Every method is an entry graph; shared state keeps its offsets (pins).
  walk::Walk methods;
  methods.place_shared_state = false;
  for (GraphId g = 0; g < static_cast<GraphId>(p.methods.size()); ++g)
    methods.entries.push_back({p.methods[static_cast<std::size_t>(g)].name, g});
  const walk::GraphStep step = [&](GraphId g, const PlanRequest& req, const std::vector<Bytes>&) {
    const auto m = static_cast<std::size_t>(g);
    return planMethod(p, g, req, *info, original.graphs[m], exact.graphs[m]);
  };
  return walk::planWalk(p.model, r, methods, step);
}

}  // namespace memplan

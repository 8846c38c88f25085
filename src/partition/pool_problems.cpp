// Planned specs -> pool problems (see partition.h).
//
//  1. Take the planned specs in first-appearance order (shared state has
//     its own pool and is left out); size = nbytes rounded up to the spec's
//     alignment; lifetime [first, last] becomes the half-open [first, last + 1).
//  2. In-place chains: a spec whose inplace_base is planned lives in its
//     chain root's pool (an unplanned or shared base leaves it an ordinary
//     spec).
//  3. One PoolProblem per mem_id (preset, else 1), in spec order.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "memplan/limits.h"
#include "partition/partition.h"

namespace memplan::partition {

std::string specName(const Spec& s) {
  return s.name.empty() ? fmt::format("spec {}", s.id) : s.name;
}

PreparedSpecs prepareSpecs(const GraphSpecs& graph) {
  PreparedSpecs p;
  const auto n = static_cast<SpecId>(graph.specs.size());
  for (SpecId s = 0; s < n; ++s)
    if (graph.specs[s].planned && !graph.specs[s].shared) p.order.push_back(s);
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
    // Any alignment works (offsets are multiples of it).
    const Bytes align = std::max<Bytes>(spec.alignment, 1);
    if (align > limits::kMaxAlignment)
      throw InputError(fmt::format("{}: alignment {} is above the limit of 2^30", specName(spec), align));
    const auto size = alignUp(spec.nbytes, align);
    if (!size) throw InputError(fmt::format("{}: aligned size overflows", specName(spec)));
    p.size[s] = *size;
    if (spec.mem_id && (*spec.mem_id < 1 || *spec.mem_id > limits::kMaxMemId))
      throw InputError(fmt::format("{}: mem_id {} out of range [1, {}] (0 holds constants)",
                                   specName(spec), *spec.mem_id, limits::kMaxMemId));
  }
  // Roots: follow planned bases; an unplanned (or shared) base ends the chain.
  const auto inChain = [&](SpecId b) {
    return b >= 0 && b < n && graph.specs[b].planned && !graph.specs[b].shared;
  };
  for (SpecId s : p.order) {
    SpecId r = s;
    for (SpecId steps = 0;; ++steps) {
      const SpecId b = graph.specs[r].inplace_base;
      if (!inChain(b)) break;
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

PoolProblem buildPoolProblem(const GraphSpecs& graph, const PreparedSpecs& p, MemId m,
                             const std::vector<MemId>& pool_of, const PlanOptions& options,
                             const std::vector<Bytes>& reserved, Bytes extra_padding,
                             std::vector<SpecId>& specs_out) {
  PoolProblem prob;
  prob.mem_id = m;
  prob.reserved = static_cast<std::size_t>(m) < reserved.size() ? reserved[m] : 0;
  prob.extra_padding = extra_padding;
  if (static_cast<std::size_t>(m) < options.capacities.size()) prob.capacity = options.capacities[m];
  std::vector<BufferId> index(graph.specs.size(), kNone);
  const auto count = static_cast<std::size_t>(
      std::count_if(p.order.begin(), p.order.end(), [&](SpecId s) { return pool_of[s] == m; }));
  prob.buffers.reserve(count);
  specs_out.reserve(specs_out.size() + count);
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

}  // namespace memplan::partition

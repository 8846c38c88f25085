// planSpecs: one graph's specs through the partition stage and the
// algorithms, back to a GraphPlan.
//
//  1. With options.per_device, one partition per device present (CPU:0
//     first); each is planned on its own and their pools are appended in
//     order (partition/devices.cpp). Only the CPU:0 partition holds the
//     bodies' reservation (the first partition, when there is no CPU:0).
//  2. A partition: pool problems (partition/pool_problems.cpp) solved by the
//     requested algorithm, spilling over capacities
//     (partition/capacity_spill.cpp); an algorithm that selects over whole
//     graphs ("suite") runs each candidate and keeps the smallest
//     sum(bufsizes), first winning ties, as ExecuTorch's suite does.
//  3. The winner's placements become allocations (spec order) and pool
//     facts (lower bound, naive size, who won).
#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "memplan/plan.h"
#include "partition/partition.h"

namespace memplan {
namespace {

GraphPlan planPartition(const GraphSpecs& specs, const PlanRequest& request,
                        const std::vector<Bytes>& reserved) {
  const partition::PreparedSpecs p = partition::prepareSpecs(specs);

  const auto requested = makeAlgorithm(request.algorithm.empty() ? "auto" : request.algorithm);
  if (!requested) {
    std::string known;
    for (const std::string& n : algorithmNames()) known += (known.empty() ? "" : ", ") + n;
    throw InputError(fmt::format("unknown algorithm '{}' (known: {})", request.algorithm, known));
  }
  partition::PoolsResult best;
  if (!requested->info().whole_graph_candidates.empty()) {
    // A candidate that cannot meet the capacities drops out; if all do, the
    // first one's error stands.
    std::exception_ptr first_error;  // keeps the error's type (CapacityError)
    bool have = false;
    for (std::string_view name : requested->info().whole_graph_candidates) {
      const auto algo = makeAlgorithm(name);
      if (!algo) throw InputError(fmt::format("algorithm '{}' is not built in", name));
      try {
        partition::PoolsResult at = partition::planPools(specs, p, *algo, request, reserved);
        if (!have || at.total < best.total) {
          best = std::move(at);
          have = true;
        }
      } catch (const PlanError&) {
        if (!first_error) first_error = std::current_exception();
      }
    }
    if (!have) std::rethrow_exception(first_error);
  } else {
    best = partition::planPools(specs, p, *requested, request, reserved);
  }

  GraphPlan plan;
  plan.graph = specs.graph;
  plan.bufsizes = best.bufsizes;
  plan.pool_devices.assign(plan.bufsizes.size(), Device{});
  std::vector<std::pair<SpecId, Allocation>> allocs;
  for (auto& [m, run] : best.pools) {
    PoolInfo info;
    info.mem_id = m;
    info.size = plan.bufsizes[m];
    info.lower_bound = lowerBound(run.problem);
    info.reserved = run.problem.reserved;
    info.naive_size = run.problem.reserved;
    // No reuse at all, with the same prefix and padding as the plan.
    for (const Buffer& b : run.problem.buffers)
      if (b.inplace_base == kNone) info.naive_size = saturatingAdd(info.naive_size, b.size);
    info.naive_size = saturatingAdd(info.naive_size, run.problem.extra_padding);
    info.buffers = run.problem.buffers.size();
    info.algorithm = run.solution.algorithm;
    info.proven_optimal = run.solution.proven_optimal || info.size == info.lower_bound;
    info.work = run.solution.work;
    info.stages = run.solution.stages;
    info.stopped = run.solution.stopped;
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
  return plan;
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
  GraphPlan plan;
  if (!request.options.per_device) {
    plan = planPartition(specs, request, reserved);
  } else {
    const std::vector<Device> devices = partition::devicePartitions(specs);
    GraphSpecs part = specs;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      for (std::size_t s = 0; s < specs.specs.size(); ++s)
        part.specs[s].planned = specs.specs[s].planned && specs.specs[s].device == devices[i];
      const bool holds_bodies = i == 0;  // CPU:0 when present (it sorts first)
      partition::appendPartition(
          plan, planPartition(part, request, holds_bodies ? reserved : std::vector<Bytes>{}), devices[i]);
    }
    partition::finishPartitions(plan);
  }
  plan.graph = specs.graph;
  plan.specs = std::move(specs);
  return plan;
}

}  // namespace memplan

// Planning a whole model: control-flow bodies first, then each graph,
// partitioned by device when asked (see memplan/plan.h).
//
// 1. Bodies of a graph's control-flow nodes are planned first, recursively:
//    cond/while/call bodies with their inputs unplanned (they are the
//    parent's tensors), map/scan bodies with their inputs planned, outputs
//    always planned. The element-wise max of the bodies' bufsizes is
//    reserved as a prefix of each of the parent's pools.
// 2. The graph's own specs are planned by planSpecs, either all together
//    (pools by preset mem_id, default 1) or, with per_device, one partition
//    per device: CPU:0 first, then (type, index); each partition's pools are
//    appended after the previous ones, so CPU+CUDA gives [0, cpu, cuda].
//    Only the CPU partition holds the bodies' reservation.
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "memplan/plan.h"

namespace memplan {
namespace {

class ModelPlanner {
 public:
  ModelPlanner(const Model& model, const PlanRequest& request, Plan& plan)
      : model_(model), request_(request), plan_(plan) {}

  std::vector<Bytes> planGraph(GraphId g, int depth) {
    if (depth > 64) throw InputError(fmt::format("{}: control flow nested deeper than 64", model_.name));
    const Graph& graph = model_.graphs[g];
    std::vector<Bytes> reserved;
    for (const Node& node : graph.nodes) {
      for (GraphId s : node.subgraphs) {
        const std::vector<Bytes> sizes = planGraph(s, depth + 1);
        if (reserved.size() < sizes.size()) reserved.resize(sizes.size(), 0);
        for (std::size_t i = 0; i < sizes.size(); ++i) reserved[i] = std::max(reserved[i], sizes[i]);
      }
    }
    const PlanOptions options = graphPlanOptions(model_, g, request_.options);
    GraphSpecs specs = collectSpecs(model_, g, options);
    PlanRequest request = request_;
    request.options = options;
    GraphPlan result = options.per_device ? planPerDevice(std::move(specs), request, reserved)
                                          : planSpecs(std::move(specs), request, reserved);
    result.graph = g;
    result.parent = graph.parent;
    // ExecuTorch's greedy sizes only the pools it uses, dropping the bodies'
    // reservation in the others; a pool must always hold its bodies' arena.
    if (result.bufsizes.size() < reserved.size()) result.bufsizes.resize(reserved.size(), 0);
    for (std::size_t m = 1; m < reserved.size(); ++m)
      result.bufsizes[m] = std::max(result.bufsizes[m], reserved[m]);
    if (result.pool_devices.size() != result.bufsizes.size())
      result.pool_devices.assign(result.bufsizes.size(), Device{});
    plan_.graphs[g] = std::move(result);
    return plan_.graphs[g].bufsizes;
  }

 private:
  GraphPlan planPerDevice(GraphSpecs specs, const PlanRequest& request,
                          const std::vector<Bytes>& reserved) {
    std::vector<Device> devices;
    for (const Spec& s : specs.specs) {
      if (!s.planned) continue;
      if (!s.device.isCpu0() && s.mem_id)
        throw InputError(fmt::format(
            "{}: tensor '{}' on {} has a preset mem_id {}; preset pools cannot be combined "
            "with per-device planning of non-CPU tensors",
            model_.name, s.name, s.device.str(), *s.mem_id));
      if (std::find(devices.begin(), devices.end(), s.device) == devices.end())
        devices.push_back(s.device);
    }
    std::sort(devices.begin(), devices.end());
    if (devices.empty() || !devices.front().isCpu0()) devices.insert(devices.begin(), Device{});

    GraphPlan merged;
    merged.bufsizes = {0};
    merged.pool_devices = {Device{}};
    for (const Device& device : devices) {
      GraphSpecs part = specs;
      for (Spec& s : part.specs) s.planned = s.planned && s.device == device;
      const bool cpu = device.isCpu0();
      GraphPlan p = planSpecs(std::move(part), request, cpu ? reserved : std::vector<Bytes>{});
      const MemId shift = static_cast<MemId>(merged.bufsizes.size()) - 1;
      // The CPU partition keeps its full pool list; others contribute only
      // the pools they use.
      std::size_t last = p.bufsizes.size();
      if (!cpu)
        while (last > 1 && p.bufsizes[last - 1] == 0 &&
               std::none_of(p.allocations.begin(), p.allocations.end(),
                            [&](const Allocation& a) { return a.mem_id == MemId(last - 1); }))
          --last;
      for (std::size_t m = 1; m < last; ++m) {
        merged.bufsizes.push_back(p.bufsizes[m]);
        merged.pool_devices.push_back(device);
      }
      for (Allocation a : p.allocations) {
        a.mem_id += shift;
        merged.allocations.push_back(a);
      }
      for (PoolInfo info : p.pools) {
        info.mem_id += shift;
        info.device = device;
        merged.pools.push_back(info);
      }
    }
    if (merged.bufsizes.size() < 2) {
      merged.bufsizes.push_back(0);
      merged.pool_devices.push_back(Device{});
    }
    std::sort(merged.allocations.begin(), merged.allocations.end(),
              [](const Allocation& a, const Allocation& b) { return a.spec < b.spec; });
    merged.specs = std::move(specs);
    return merged;
  }

  const Model& model_;
  const PlanRequest& request_;
  Plan& plan_;
};

}  // namespace

Plan planModel(const Model& model, const PlanRequest& asked) {
  const auto started = std::chrono::steady_clock::now();
  validateModel(model);
  PlanRequest request = asked;
  if (request.algorithm.empty()) request.algorithm = "auto";
  request.options.alignment = planningAlignment(request.options);
  if (!request.extra_padding) request.extra_padding = 0;
  Plan plan;
  recordRequest(plan, request);
  plan.graphs.resize(model.graphs.size());
  for (GraphId g = 0; g < static_cast<GraphId>(model.graphs.size()); ++g) plan.graphs[g].graph = g;
  ModelPlanner(model, request, plan).planGraph(0, 0);
  plan.planning_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return plan;
}

}  // namespace memplan

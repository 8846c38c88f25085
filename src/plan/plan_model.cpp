// Planning a whole model: the one walker over methods and bodies (walk.h),
// the state the methods share, and planModel's step (see memplan/plan.h).
//
// 1. Methods in order (a model without methods is one). Bodies of a graph's
//    control-flow nodes are planned first, recursively: cond/while/call
//    bodies with their inputs unplanned (they are the parent's tensors),
//    map/scan bodies with their inputs planned, outputs always planned. A
//    body run by several nodes is planned once (bodies form a DAG; its plan
//    does not depend on the caller). The element-wise max of the bodies'
//    bufsizes is reserved as a prefix of each of the caller's pools.
// 2. The graph's own specs go through the planner's step; planModel's is
//    planSpecs: all together (pools by preset mem_id, default 1, all on
//    CPU:0 whatever the tensors' devices, as ExecuTorch does) or, with
//    per_device, one partition per device.
// 3. Shared state (sharesState): after each method, ExecuTorch's checks when
//    asked for its share_mutable_buffers; after all methods, one placement
//    per fqn (partition/shared_state.cpp) appended to every method's pools:
//    ExecuTorch's pool 2, or (memplan) the pool after the largest method's
//    own pools, so the state pool has one mem_id in every method.
#include <algorithm>
#include <chrono>
#include <unordered_map>

#include <fmt/format.h>

#include "memplan/plan.h"
#include "partition/partition.h"
#include "plan/walk.h"
#include "memplan/limits.h"

namespace memplan {
namespace {

constexpr std::string_view kShareField = "PlanRequest.options.share_mutable_buffers";

// ExecuTorch's checks on one method before it shares state
// (memory_planning_pass.py: _check_default_mem_ids, then the state's own).
void checkExecutorchSharing(const GraphPlan& g, const Method& method) {
  for (const Spec& s : g.specs.specs) {
    const Allocation* a = s.planned && !s.shared ? g.find(s.id) : nullptr;
    const std::optional<MemId> mem_id = a ? std::optional<MemId>(a->mem_id) : s.mem_id;
    if (mem_id && *mem_id != 1)
      throw InputError(fmt::format(
          "{}: {}: '{}' is in pool {}; ExecuTorch shares mutable buffers only when every other "
          "tensor is in pool 1 (\"Cannot share mutable buffers if all other tensors are not on "
          "the default mem_id of 1\")",
          kShareField, methodLabel(method.name), s.name, *mem_id));
  }
  for (const Spec& s : g.specs.specs)
    if (s.shared && (s.mem_id || s.offset))
      throw InputError(fmt::format(
          "{}: {}: state '{}' (tensor '{}') has a preset {}; ExecuTorch refuses to share it "
          "(\"Cannot share mutable buffers if they already have a mem_id or mem_offset assigned\")",
          kShareField, methodLabel(method.name), s.fqn, s.name,
          s.mem_id ? fmt::format("pool (mem_id {})", *s.mem_id) : fmt::format("offset {}", *s.offset)));
}

std::string listText(const std::vector<Bytes>& v) {
  std::string s;
  for (Bytes b : v) s += (s.empty() ? "" : ", ") + std::to_string(b);
  return "[" + s + "]";
}

// Places the shared state once and appends its pools to every method.
void placeSharedState(Plan& plan, const std::vector<Method>& methods, const PlanRequest& request) {
  const bool exact = request.options.share_mutable_buffers;
  std::vector<partition::MethodSpecs> specs;
  for (const Method& m : methods)
    specs.push_back({m.name, &plan.graphs[m.graph].specs, request.options.per_device});
  const partition::StateLayout layout =
      exact ? partition::placeStateExecutorch(specs, planningAlignment(request.options))
            : partition::placeStateMemplan(specs);
  std::size_t base = 2;  // first state pool: ExecuTorch's mem_id 2
  for (const Method& m : methods) {
    const GraphPlan& g = plan.graphs[m.graph];
    if (exact && g.bufsizes.size() != 2)
      throw InputError(fmt::format(
          "{}: {} has pools {}; ExecuTorch shares mutable state only with the default pools "
          "[0, activations] (\"Cannot share mutable state if not using default memory ids\")",
          kShareField, methodLabel(m.name), listText(g.bufsizes)));
    base = std::max(base, g.bufsizes.size());
  }
  if (layout.pool_sizes.empty()) return;  // memplan: no state, no pool
  std::unordered_map<std::string_view, const partition::StatePlacement*> slot_of;
  for (const partition::StatePlacement& s : layout.slots) slot_of.emplace(s.fqn, &s);
  for (const Method& m : methods) {
    GraphPlan& g = plan.graphs[m.graph];
    g.bufsizes.resize(base, 0);
    g.pool_devices.resize(base, Device{});
    std::vector<std::size_t> count(layout.pool_sizes.size(), 0);
    for (const Spec& s : g.specs.specs) {
      if (!s.shared || !s.planned) continue;
      const partition::StatePlacement& slot = *slot_of.at(s.fqn);
      g.allocations.push_back({s.id, static_cast<MemId>(base + slot.pool), 0, slot.offset, slot.size});
      ++count[slot.pool];
    }
    for (std::size_t i = 0; i < layout.pool_sizes.size(); ++i) {
      const auto mem_id = static_cast<MemId>(base + i);
      g.bufsizes.push_back(layout.pool_sizes[i]);
      g.pool_devices.push_back(layout.pool_devices[i]);
      if (layout.pool_sizes[i] == 0 && count[i] == 0) continue;
      PoolInfo info;
      info.mem_id = mem_id;
      info.device = layout.pool_devices[i];
      info.size = layout.pool_sizes[i];
      for (const partition::StatePlacement& s : layout.slots)
        if (s.pool == i) info.lower_bound += s.size;  // all state is alive at once
      info.naive_size = info.lower_bound;
      info.buffers = count[i];
      info.algorithm = exact ? "share_mutable_buffers" : "shared_state";
      info.proven_optimal = info.size == info.lower_bound;
      info.state = true;
      g.pools.push_back(std::move(info));
    }
    std::stable_sort(g.allocations.begin(), g.allocations.end(),
                     [](const Allocation& a, const Allocation& b) { return a.spec < b.spec; });
  }
}

// Bodies before callers, each once; reservations; options per graph.
class Walker {
 public:
  Walker(const Model& model, const PlanRequest& request, const walk::GraphStep& step, Plan& plan)
      : model_(model), request_(request), step_(step), plan_(plan),
        options_(graphsPlanOptions(model, request.options)), done_(model.graphs.size(), 0) {}

  const std::vector<Bytes>& planGraph(GraphId g, std::size_t depth) {
    if (depth > limits::kMaxControlFlowDepth)
      throw InputError(fmt::format("{}: control flow nested deeper than {}", model_.name,
                                   limits::kMaxControlFlowDepth));
    if (done_[g]) return plan_.graphs[g].bufsizes;
    const Graph& graph = model_.graphs[g];
    std::vector<Bytes> reserved;
    for (const Node& node : graph.nodes) {
      for (GraphId s : node.subgraphs) {
        const std::vector<Bytes>& sizes = planGraph(s, depth + 1);
        if (reserved.size() < sizes.size()) reserved.resize(sizes.size(), 0);
        for (std::size_t i = 0; i < sizes.size(); ++i) reserved[i] = std::max(reserved[i], sizes[i]);
      }
    }
    PlanRequest request = request_;
    request.options = options_[g];
    GraphPlan result = step_(g, request, reserved);
    result.graph = g;
    result.parent = graph.parent;
    // ExecuTorch's greedy sizes only the pools it uses, dropping the bodies'
    // reservation in the others; a pool must always hold its bodies' arena.
    if (result.bufsizes.size() < reserved.size()) result.bufsizes.resize(reserved.size(), 0);
    for (std::size_t m = 1; m < reserved.size(); ++m)
      result.bufsizes[m] = std::max(result.bufsizes[m], reserved[m]);
    result.pool_devices.resize(result.bufsizes.size(), Device{});
    plan_.graphs[g] = std::move(result);
    done_[g] = 1;
    return plan_.graphs[g].bufsizes;
  }

 private:
  const Model& model_;
  const PlanRequest& request_;
  const walk::GraphStep& step_;
  Plan& plan_;
  const std::vector<PlanOptions> options_;  // by graph
  std::vector<char> done_;                  // by graph: planned
};

}  // namespace

namespace walk {

Plan planWalk(const Model& model, const PlanRequest& request, const Walk& walk, const GraphStep& step) {
  const auto started = std::chrono::steady_clock::now();
  Plan plan;
  recordRequest(plan, request);
  plan.graphs.resize(model.graphs.size());
  for (GraphId g = 0; g < static_cast<GraphId>(model.graphs.size()); ++g) plan.graphs[g].graph = g;
  for (const Method& m : model.methods) plan.methods.push_back({m.name, m.graph});

  const bool state = walk.place_shared_state && sharesState(model, request.options);
  Walker walker(model, request, step, plan);
  for (const Method& m : walk.entries) {
    walker.planGraph(m.graph, 0);
    if (state && request.options.share_mutable_buffers) checkExecutorchSharing(plan.graphs[m.graph], m);
  }
  if (state) placeSharedState(plan, walk.entries, request);
  plan.planning_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return plan;
}

Plan planModelWith(const Model& model, const PlanRequest& asked, const GraphStep& step) {
  validateModel(model);
  PlanRequest request = asked;
  if (request.algorithm.empty()) request.algorithm = "auto";
  request.options.alignment = planningAlignment(request.options);
  if (!request.extra_padding) request.extra_padding = 0;
  if (request.options.share_mutable_buffers && !request.options.alloc_mutable_buffers)
    throw InputError(fmt::format("{}: cannot leave mutable buffers unplanned "
                                 "(options.alloc_mutable_buffers false; ExecuTorch: "
                                 "share_mutable_buffers is only meaningful when "
                                 "alloc_mutable_buffers is True)",
                                 kShareField));
  return planWalk(model, request, {model.entryPoints(), true}, step);
}

}  // namespace walk

Plan planModel(const Model& model, const PlanRequest& request) {
  const walk::GraphStep step = [&](GraphId g, const PlanRequest& r, const std::vector<Bytes>& reserved) {
    return planSpecs(collectSpecs(model, g, r.options), r, reserved);
  };
  return walk::planModelWith(model, request, step);
}

}  // namespace memplan

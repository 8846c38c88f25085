// TensorFlow Lite Micro's view of a model and memplan's plan as TFLM's
// offline plan (see plan/tflm_analysis.h).
//
// TFLM's time line (AllocationInfoBuilder::MarkAllocationLifetimes), per
// subgraph invocation, starting with subgraph 0 at scope 0:
//  1. the subgraph's inputs, then its outputs, are created at the current
//     scope (created = first and last use set to it);
//  2. per operator: the scope advances; its outputs are created; each
//     control-flow body it runs (then/else, cond/body, init) advances the
//     scope and is marked recursively; then its inputs and outputs are used
//     at the current scope (last use set to it);
//  3. the subgraph's outputs are used at the final scope.
// A body run by several operators is marked at every run; the last run's
// marks stand, as in TFLM.
#include "plan/tflm_analysis.h"

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace memplan {
namespace {

constexpr Bytes kTflmBufferAlignment = 16;  // MicroArenaBufferAlignment()
// Bodies are marked at every run: bound the work a hostile nesting could
// ask for (TFLM itself would take as long).
constexpr std::uint64_t kMaxMarkedNodes = std::uint64_t{1} << 26;

class Timeline {
 public:
  explicit Timeline(const Model& m)
      : m_(m), first_(m.tensors.size(), -1), last_(m.tensors.size(), -1) {}

  void mark(GraphId g, int depth) {
    if (depth > 64) throw InputError(fmt::format("{}: control flow nested deeper than 64", m_.name));
    const Graph& graph = m_.graphs.at(static_cast<std::size_t>(g));
    for (TensorId t : graph.inputs) created(t);
    for (TensorId t : graph.outputs) created(t);
    for (const Node& node : graph.nodes) {
      if (++marked_ > kMaxMarkedNodes)
        throw InputError(fmt::format("{}: control flow runs more than {} operators in one "
                                     "invocation of the main graph",
                                     m_.name, kMaxMarkedNodes));
      ++scope_;
      for (TensorId t : node.outputs) created(t);
      for (GraphId s : node.subgraphs) {
        ++scope_;
        mark(s, depth + 1);
      }
      for (TensorId t : node.inputs) used(t);
      for (TensorId t : node.outputs) used(t);
    }
    for (TensorId t : graph.outputs) used(t);
  }
  TimeValue first(TensorId t) const { return first_[t]; }
  TimeValue last(TensorId t) const { return last_[t]; }

 private:
  void created(TensorId t) { first_[t] = last_[t] = scope_; }
  void used(TensorId t) { last_[t] = scope_; }

  const Model& m_;
  std::vector<TimeValue> first_, last_;
  TimeValue scope_ = 0;
  std::uint64_t marked_ = 0;
};

bool tflmAllocates(const Tensor& t) {
  return (t.kind == TensorKind::Activation || t.kind == TensorKind::TrainableConstant) &&
         !t.dynamic_unbound && t.nbytes > 0;
}

}  // namespace

TflmBuffers tflmBuffers(const Model& model) {
  validateModel(model);
  Timeline timeline(model);
  timeline.mark(0, 0);
  TflmBuffers out;
  for (TensorId t = 0; t < static_cast<TensorId>(model.tensors.size()); ++t) {
    const Tensor& x = model.tensors[t];
    if (!tflmAllocates(x) || timeline.first(t) < 0) continue;
    const auto size = alignUp(x.nbytes, kTflmBufferAlignment);
    if (!size) throw InputError(fmt::format("{}: tensor '{}' is too large", model.name, x.name));
    Buffer b;
    b.id = static_cast<BufferId>(out.problem.buffers.size());
    b.name = x.name;
    b.start = timeline.first(t);
    b.end = timeline.last(t) + 1;
    b.size = *size;
    b.nbytes = x.nbytes;
    b.alignment = 1;
    b.fixed_offset = x.offset;
    out.problem.buffers.push_back(std::move(b));
    out.tensors.push_back(t);
  }
  return out;
}

Bytes tflmArenaBytes(const Model& model) {
  const TflmBuffers buffers = tflmBuffers(model);
  return makeAlgorithm("tflm_greedy")->solve(buffers.problem, AlgorithmParams{}).size;
}

TflmArenaEstimate tflmArenaEstimate(const Model& model, Bytes head) {
  const auto align = [](Bytes b) { return alignUp(b, kTflmBufferAlignment).value_or(kMaxBytes); };
  const auto add = [](Bytes a, Bytes b) { return checkedAdd(a, b).value_or(kMaxBytes); };
  TflmArenaEstimate e;
  e.head = align(head);
  const Bytes tensors = model.tensors.size();
  e.eval_tensors = 24 * tensors;
  e.tables = 1024 + 8 * tensors;
  Bytes ops = 0, channels = 0;
  for (const Graph& g : model.graphs)
    for (const Node& n : g.nodes) {
      ++ops;
      if (n.outputs.empty()) continue;
      const Tensor& out = model.tensors[static_cast<std::size_t>(n.outputs[0])];
      const bool quantized = out.dtype == DType::Int8 || out.dtype == DType::UInt8 || out.dtype == DType::Int16;
      // Convolutions allocate per-channel multipliers and shifts whatever
      // the type; fully connected layers only when quantized.
      const bool per_channel = n.op == "CONV_2D" || n.op == "DEPTHWISE_CONV_2D" || n.op == "TRANSPOSE_CONV" ||
                               (n.op == "FULLY_CONNECTED" && quantized);
      if (per_channel) {
        const auto& shape = out.shape;
        if (!shape.empty() && shape.back() > 0) channels = add(channels, static_cast<Bytes>(shape.back()));
      }
    }
  e.nodes = 64 * ops;
  e.kernel_data = add(128 * ops, 8 * std::min<Bytes>(channels, kMaxBytes / 8));
  if (!model.graphs.empty()) e.io_tensors = 64 * (model.graphs[0].inputs.size() + model.graphs[0].outputs.size());
  Bytes total = e.head;
  for (Bytes part : {e.eval_tensors, e.nodes, e.io_tensors, e.kernel_data, e.tables}) total = add(total, part);
  e.total = align(total);
  return e;
}

std::vector<std::int32_t> tfliteOfflineOffsets(const Model& model, const Plan& plan,
                                               const TfliteTensorIndex& index) {
  if (index.index.size() != model.tensors.size())
    throw InputError(fmt::format("{}: {} tensors imported but {} numbered by TFLite Micro",
                                 model.name, model.tensors.size(), index.index.size()));
  std::vector<std::int32_t> offsets(index.total, -1);
  for (const GraphPlan& g : plan.graphs)
    for (const Allocation& a : g.allocations) {
      if (a.spec < 0 || static_cast<std::size_t>(a.spec) >= g.specs.specs.size()) continue;
      const Spec& s = g.specs.specs[a.spec];
      if (a.mem_id != 1)
        throw InputError(fmt::format(
            "{}: tensor '{}' is in pool {}; TensorFlow Lite Micro has one arena (plan without "
            "--per-device or preset pools)",
            model.name, s.name, a.mem_id));
      if (a.offset > static_cast<Offset>(std::numeric_limits<std::int32_t>::max()))
        throw InputError(fmt::format("{}: tensor '{}' at offset {} does not fit TFLite Micro's "
                                     "int32 offsets",
                                     model.name, s.name, a.offset));
      for (TensorId t : s.members) {
        if (t < 0 || static_cast<std::size_t>(t) >= model.tensors.size()) continue;
        if (!tflmAllocates(model.tensors[t])) continue;  // TFLM would ignore it
        offsets[static_cast<std::size_t>(index.index[t])] = static_cast<std::int32_t>(a.offset);
      }
    }
  return offsets;
}

Plan pinnedPlan(const Model& model, const PlanOptions& options) {
  validateModel(model);
  Plan plan;
  plan.algorithm = "pinned";
  plan.options = options;
  plan.graphs.resize(model.graphs.size());
  for (GraphId g = 0; g < static_cast<GraphId>(model.graphs.size()); ++g) {
    GraphPlan& gp = plan.graphs[g];
    gp.graph = g;
    gp.parent = kNone;  // pins are absolute: no reserved-prefix layout to check
    gp.specs = collectSpecs(model, g, graphPlanOptions(model, g, options));
    std::map<MemId, PoolInfo> pools;
    // The same tensors unpinned: the bound any plan of them meets, so the
    // report can say whether the carried plan is optimal.
    std::map<MemId, PoolProblem> problems;
    for (Spec& s : gp.specs.specs) {
      if (!s.planned) continue;
      if (!s.offset) {
        s.planned = false;  // left to the runtime
        continue;
      }
      const auto size = alignUp(s.nbytes, std::max<Bytes>(s.alignment, 1));
      const auto end = size ? checkedAdd(*s.offset, *size) : std::nullopt;
      if (!end) throw InputError(fmt::format("{}: tensor '{}' pinned at {} overflows", model.name, s.name, *s.offset));
      const MemId m = s.mem_id.value_or(1);
      gp.allocations.push_back({s.id, m, 0, *s.offset, *size});
      PoolInfo& p = pools[m];
      p.mem_id = m;
      p.size = std::max(p.size, *end);
      p.naive_size += *size;
      ++p.buffers;
      p.algorithm = "pinned";
      Buffer b;
      b.id = static_cast<BufferId>(problems[m].buffers.size());
      b.start = s.first;
      b.end = s.last + 1;
      b.size = *size;
      b.nbytes = s.nbytes;
      b.gaps = s.gaps;
      problems[m].mem_id = m;
      problems[m].buffers.push_back(std::move(b));
    }
    MemId top = 1;
    for (const auto& [m, p] : pools) top = std::max(top, m);
    gp.bufsizes.assign(static_cast<std::size_t>(top) + 1, 0);
    gp.pool_devices.assign(gp.bufsizes.size(), Device{});
    for (auto& [m, p] : pools) {
      p.lower_bound = std::min(p.size, lowerBound(problems[m]));
      p.proven_optimal = p.size <= p.lower_bound;
      gp.bufsizes[m] = p.size;
      gp.pools.push_back(p);
    }
  }
  return plan;
}

std::vector<std::string> tflmPinConflicts(const Model& model, std::size_t max) {
  const TflmBuffers buffers = tflmBuffers(model);
  std::vector<const Buffer*> pinned;
  for (const Buffer& b : buffers.problem.buffers)
    if (b.fixed_offset) pinned.push_back(&b);
  std::stable_sort(pinned.begin(), pinned.end(),
                   [](const Buffer* a, const Buffer* b) { return a->start < b->start; });
  std::vector<std::string> out;
  std::vector<const Buffer*> live;  // pins may overlap each other: compare with each live one
  const auto show = [](const Buffer& b) {
    return fmt::format("'{}' (bytes [{}, {}), TFLite Micro scopes [{}, {}])", b.name,
                       *b.fixed_offset, *b.fixed_offset + b.nbytes, b.start, b.end - 1);
  };
  for (const Buffer* b : pinned) {
    std::erase_if(live, [&](const Buffer* o) { return o->end <= b->start; });
    for (const Buffer* o : live)
      if (*o->fixed_offset < *b->fixed_offset + b->nbytes &&
          *b->fixed_offset < *o->fixed_offset + o->nbytes) {
        if (out.size() == max) return out;
        out.push_back(fmt::format("{} and {} share bytes while both alive", show(*o), show(*b)));
      }
    live.push_back(b);
  }
  return out;
}

}  // namespace memplan

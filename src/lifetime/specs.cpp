// Lifetimes and planning specs of one graph (see memplan/specs.h).
#include <algorithm>
#include <deque>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "memplan/specs.h"
#include "ir/body_walk.h"
#include "ir/storage_root.h"

namespace memplan {
namespace {

// Tensors owned by `g` that body `root`, or any body it runs, uses: each
// once, in the order walkBodiesOnce (ir/body_walk.h) first meets them.
class BodyReads {
 public:
  BodyReads(const Model& m, GraphId g)
      : m_(m), g_(g), memo_(m.graphs.size(), -1), seen_graph_(m.graphs.size(), 0) {}

  const std::vector<TensorId>& of(GraphId root) {
    if (memo_[root] >= 0) return lists_[static_cast<std::size_t>(memo_[root])];
    memo_[root] = static_cast<std::int32_t>(lists_.size());
    std::vector<TensorId>& out = lists_.emplace_back();
    std::vector<GraphId> visited;
    walkBodiesOnce(
        m_, root, seen_graph_, [&](GraphId x) { visited.push_back(x); },
        [&](const std::vector<TensorId>& list) {
          for (TensorId t : list) {
            if (m_.tensors[t].graph != g_ || !seen_tensor_.insert(t).second) continue;
            out.push_back(t);
          }
        },
        [](GraphId) {});
    for (GraphId x : visited) seen_graph_[x] = 0;
    seen_tensor_.clear();
    return out;
  }

 private:
  const Model& m_;
  const GraphId g_;
  std::vector<std::int32_t> memo_;             // by graph: index into lists_
  std::deque<std::vector<TensorId>> lists_;  // stable: references are returned
  std::vector<char> seen_graph_;
  std::unordered_set<TensorId> seen_tensor_;  // not one flag per model tensor: one BodyReads a graph
};

// Gaps of tensors (node windows) become the specs' gaps in steps, clipped
// to the lifetime; a gap holding a step where the tensor (or a view or
// in-place result of it: one storage) is used is an error. Only the tensor
// owning a storage has gaps (validateModel): its spec's representative.
void addGaps(const Model& m, const Graph& graph, GraphSpecs& result,
             std::vector<std::pair<SpecId, TimeValue>>& uses) {
  std::sort(uses.begin(), uses.end());
  auto use = uses.begin();
  for (Spec& spec : result.specs) {
    const Tensor& t = m.tensors[spec.tensor];
    if (t.gaps.empty()) continue;
    while (use != uses.end() && use->first < spec.id) ++use;
    for (const Gap& g : t.gaps) {
      Gap step = g;
      step.start = std::max(nodeTime(graph, static_cast<NodeId>(g.start)), spec.first);
      step.end = std::min(nodeTime(graph, static_cast<NodeId>(g.end)), spec.last + 1);
      if (step.start >= step.end) continue;
      auto u = std::lower_bound(use, uses.end(), std::pair<SpecId, TimeValue>{spec.id, step.start});
      if (u != uses.end() && u->first == spec.id && u->second < step.end) {
        const auto inputs = static_cast<TimeValue>(graph.inputs.size());
        const TimeValue n = u->second - inputs;
        const std::string at =
            n < 0 ? fmt::format("as graph input {}", u->second)
            : n < static_cast<TimeValue>(graph.nodes.size())
                ? fmt::format("by node {} '{}'", n, graph.nodes[static_cast<std::size_t>(n)].name)
                : std::string("as a graph output");
        throw InputError(fmt::format("{}: tensor '{}' is used {} inside its gap (nodes [{}, {}))",
                                     m.name, t.name, at, g.start, g.end));
      }
      spec.gaps.push_back(step);
    }
  }
}

}  // namespace

namespace {

// collectSpecs' state: the graph's specs as they are found.
class SpecCollector {
 public:
  SpecCollector(const Model& m, GraphId g, const PlanOptions& options)
      : m(m), g(g), graph(m.graphs.at(g)), options(options), rootOf(m) {
    result.graph = g;
    inputs = graph.inputs;
    outputs = graph.outputs;
    std::sort(inputs.begin(), inputs.end());
    std::sort(outputs.begin(), outputs.end());
  }

  GraphSpecs run() {
    collectLifetimes();
    // ShareWith results reuse their base's allocation: record it (the base's
    // spec is created here if the base never appeared on its own).
    for (SpecId s = 0; s < static_cast<SpecId>(result.specs.size()); ++s) {
      const Tensor& root = m.tensors[result.specs[s].tensor];
      if (root.alias == AliasKind::ShareWith) {
        const SpecId base = specFound(rootOf(root.alias_of));
        if (base == kNone)
          throw InputError(fmt::format("{}: tensor '{}' shares the allocation of '{}', which is not "
                                       "used in the same graph",
                                       m.name, root.name, m.tensors[root.alias_of].name));
        result.specs[s].inplace_base = base;
      }
    }

    // State shared across methods lives in an entry graph (validateModel).
    state = sharesState(m, options) && graph.parent == kNone;
    for (Spec& spec : result.specs) describe(spec);
    result.tensor_spec = TensorSpecMap({spec_of.begin(), spec_of.end()});
    addGaps(m, graph, result, gapped_uses);
    // Reuse of an unplanned base's allocation is impossible: plan on its own.
    for (Spec& spec : result.specs)
      if (spec.inplace_base != kNone && !result.specs[spec.inplace_base].planned)
        spec.inplace_base = kNone;
    return std::move(result);
  }

 private:
  SpecId specFound(TensorId t) const {
    const auto it = spec_of.find(t);
    return it == spec_of.end() ? kNone : it->second;
  }
  static bool among(const std::vector<TensorId>& sorted, TensorId t) {
    return std::binary_search(sorted.begin(), sorted.end(), t);
  }

  // Spec of a tensor of this graph, created on first appearance.
  SpecId specOf(TensorId t) {
    if (m.tensors[t].graph != g) return kNone;  // outer-scope tensor
    if (const SpecId known = specFound(t); known != kNone) return known;
    const TensorId root = rootOf(t);
    SpecId s = specFound(root);
    if (s == kNone && m.tensors[root].graph == g) {
      s = static_cast<SpecId>(result.specs.size());
      Spec spec;
      spec.id = s;
      spec.tensor = root;
      spec.first = std::numeric_limits<TimeValue>::max();
      spec.last = std::numeric_limits<TimeValue>::min();
      spec.name = m.tensors[root].name;
      result.specs.push_back(std::move(spec));
      spec_of[root] = s;
      result.specs[s].members.push_back(root);
    }
    if (s == kNone) return kNone;  // view of an outer tensor: not ours
    if (t != root) {
      spec_of[t] = s;
      result.specs[s].members.push_back(t);
    }
    return s;
  }

  // A use of t at step i stretches its spec's lifetime.
  void touch(TensorId t, TimeValue i) {
    const SpecId s = specOf(t);
    if (s == kNone) return;
    Spec& spec = result.specs[s];
    spec.first = std::min(spec.first, i);
    spec.last = std::max(spec.last, i);
    if (!m.tensors[spec.tensor].gaps.empty()) gapped_uses.emplace_back(s, i);
  }

  void collectLifetimes() {
    const auto num_inputs = static_cast<TimeValue>(graph.inputs.size());
    result.steps = num_inputs + static_cast<TimeValue>(graph.nodes.size()) + 1;
    for (TimeValue i = 0; i < num_inputs; ++i) touch(graph.inputs[i], i);
    std::optional<BodyReads> body_reads;  // made at the first control-flow node
    for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes.size()); ++n) {
      const Node& node = graph.nodes[n];
      const TimeValue i = nodeTime(graph, n);
      for (TensorId t : node.outputs) touch(t, i);
      for (TensorId t : node.inputs) touch(t, i);
      // A control-flow node keeps alive everything its bodies read from here.
      for (GraphId s : node.subgraphs) {
        if (!body_reads) body_reads.emplace(m, g);
        for (TensorId t : body_reads->of(s)) touch(t, i);
      }
    }
    for (TensorId t : graph.outputs) touch(t, result.steps - 1);
  }

  // Whether some tensor of the model is a mutable buffer named `fqn`.
  bool mutableSomewhere(const std::string& fqn) {
    if (mutable_fqns.empty())
      for (const Tensor& x : m.tensors)
        if (x.kind == TensorKind::MutableBuffer) mutable_fqns.insert(x.fqn.empty() ? x.name : x.fqn);
    return mutable_fqns.count(fqn) > 0;
  }

  // A spec's size, alignment, presets and kind from its members, and
  // whether it is planned.
  void describe(Spec& spec) {
    const TimeValue last_step = result.steps - 1;
    const Tensor& root = m.tensors[spec.tensor];
    spec.device = root.device;
    spec.alignment = planningAlignment(options);
    spec.nbytes = 0;
    for (TensorId t : spec.members) {
      const Tensor& x = m.tensors[t];
      spec.nbytes = std::max(spec.nbytes, x.nbytes);
      if (x.alignment) spec.alignment = std::max(spec.alignment, x.alignment);
      if (x.mem_id) {
        if (spec.mem_id && *spec.mem_id != *x.mem_id)
          throw InputError(fmt::format("{}: tensor '{}' is preset to mem_id {} but shares storage "
                                       "with '{}' preset to mem_id {}",
                                       m.name, x.name, *x.mem_id, root.name, *spec.mem_id));
        spec.mem_id = x.mem_id;
      }
      if (x.offset) spec.offset = x.offset;
      spec.is_input |= among(inputs, t);
      spec.is_output |= among(outputs, t);
      spec.is_mutable |= x.kind == TensorKind::MutableBuffer;
      spec.dynamic_unbound |= x.dynamic_unbound;
      if (spec.fqn.empty()) spec.fqn = x.fqn;
    }
    spec.is_constant = root.kind == TensorKind::Constant;
    if (state && spec.is_mutable) {
      if (spec.fqn.empty()) spec.fqn = root.name;
      spec.shared = true;
    } else if (state && spec.is_constant && !spec.fqn.empty() && mutableSomewhere(spec.fqn)) {
      // Read here, mutated by another method: the same state (is_mutable
      // stays false: this method does not write it).
      spec.is_constant = false;
      spec.shared = true;
    }
    if (spec.is_input) spec.first = 0;
    if (spec.is_mutable || spec.shared) {
      spec.first = 0;
      spec.last = last_step;
    }
    bool plan = !spec.is_constant && !spec.dynamic_unbound;
    // Mutable buffers are placeholders but not user inputs: only
    // alloc_mutable_buffers decides for them.
    if (spec.is_input && !spec.is_mutable && !options.alloc_graph_input) plan = false;
    if (spec.is_output && !options.alloc_graph_output) plan = false;
    if ((spec.is_mutable || spec.shared) && !options.alloc_mutable_buffers) plan = false;
    spec.planned = plan;
  }

  const Model& m;
  const GraphId g;
  const Graph& graph;
  const PlanOptions& options;
  GraphSpecs result;
  // Tables here hold this graph's tensors only, never one entry per tensor
  // of the model: collectSpecs runs once per graph.
  std::unordered_map<TensorId, SpecId> spec_of;
  std::vector<TensorId> inputs, outputs;  // sorted
  StorageRoots rootOf;
  // Uses of tensors with gaps (a gap may hold none of them).
  std::vector<std::pair<SpecId, TimeValue>> gapped_uses;
  bool state = false;  // the graph keeps state shared across methods
  std::unordered_set<std::string_view> mutable_fqns;  // filled on first need
};

}  // namespace

GraphSpecs collectSpecs(const Model& m, GraphId g, const PlanOptions& options) {
  return SpecCollector(m, g, options).run();
}

namespace {

// What a body plans, given the kind of node that runs it.
PlanOptions bodyOptions(const PlanOptions& root, NodeKind runner) {
  PlanOptions o = root;
  o.alloc_graph_input = runner == NodeKind::Map || runner == NodeKind::Scan;
  o.alloc_graph_output = true;
  return o;
}

}  // namespace

PlanOptions graphPlanOptions(const Model& model, GraphId g, const PlanOptions& root) {
  const Graph& graph = model.graphs.at(g);
  if (graph.parent == kNone) return root;
  // The node that runs the body decides (the last one, when several share it).
  NodeKind kind = NodeKind::Call;
  for (const Node& n : model.graphs.at(graph.parent).nodes)
    if (std::find(n.subgraphs.begin(), n.subgraphs.end(), g) != n.subgraphs.end()) kind = n.kind;
  return bodyOptions(root, kind);
}

std::vector<PlanOptions> graphsPlanOptions(const Model& model, const PlanOptions& root) {
  // The runner of each body: the last node of its parent that names it.
  std::vector<NodeKind> runner(model.graphs.size(), NodeKind::Call);
  for (GraphId p = 0; p < static_cast<GraphId>(model.graphs.size()); ++p)
    for (const Node& n : model.graphs[p].nodes)
      for (GraphId s : n.subgraphs)
        if (s >= 0 && static_cast<std::size_t>(s) < model.graphs.size() && model.graphs[s].parent == p)
          runner[s] = n.kind;
  std::vector<PlanOptions> out;
  out.reserve(model.graphs.size());
  for (GraphId g = 0; g < static_cast<GraphId>(model.graphs.size()); ++g)
    out.push_back(model.graphs[g].parent == kNone ? root : bodyOptions(root, runner[g]));
  return out;
}

}  // namespace memplan

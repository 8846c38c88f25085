// Lifetimes and planning specs of one graph (see memplan/specs.h).
#include <algorithm>

#include <fmt/format.h>

#include "memplan/specs.h"

namespace memplan {
namespace {

// The tensor whose storage `t` uses: follows View and InPlace aliases.
TensorId storageRoot(const Model& m, TensorId t) {
  while (m.tensors[t].alias == AliasKind::View || m.tensors[t].alias == AliasKind::InPlace)
    t = m.tensors[t].alias_of;
  return t;
}

// Tensors owned outside `g` that `g` or any body nested in it reads.
void collectOuterReads(const Model& m, GraphId g, GraphId body_root, std::vector<TensorId>& out,
                       std::vector<char>& visiting) {
  if (visiting[g]) return;  // validateModel rejects recursion; stay safe anyway
  visiting[g] = 1;
  const auto outside = [&](TensorId t) {
    for (GraphId a = m.tensors[t].graph; a != kNone; a = m.graphs[a].parent)
      if (a == body_root) return false;
    return true;
  };
  const Graph& graph = m.graphs[g];
  for (const Node& node : graph.nodes) {
    for (TensorId t : node.inputs)
      if (outside(t)) out.push_back(t);
    for (TensorId t : node.outputs)
      if (outside(t)) out.push_back(t);
    for (GraphId s : node.subgraphs) collectOuterReads(m, s, body_root, out, visiting);
  }
  for (TensorId t : graph.outputs)
    if (outside(t)) out.push_back(t);
  visiting[g] = 0;
}

}  // namespace

GraphSpecs collectSpecs(const Model& m, GraphId g, const PlanOptions& options) {
  const Graph& graph = m.graphs.at(g);
  GraphSpecs result;
  result.graph = g;
  result.tensor_spec.assign(m.tensors.size(), kNone);
  const auto num_inputs = static_cast<TimeValue>(graph.inputs.size());
  result.steps = num_inputs + static_cast<TimeValue>(graph.nodes.size()) + 1;
  const TimeValue last_step = result.steps - 1;

  std::vector<char> is_input(m.tensors.size(), 0), is_output(m.tensors.size(), 0);
  for (TensorId t : graph.inputs) is_input[t] = 1;
  for (TensorId t : graph.outputs) is_output[t] = 1;

  // Spec of a tensor of this graph, created on first appearance.
  const auto specOf = [&](TensorId t) -> SpecId {
    if (m.tensors[t].graph != g) return kNone;  // outer-scope tensor
    if (result.tensor_spec[t] != kNone) return result.tensor_spec[t];
    const TensorId root = storageRoot(m, t);
    SpecId s = result.tensor_spec[root];
    if (s == kNone && m.tensors[root].graph == g) {
      s = static_cast<SpecId>(result.specs.size());
      Spec spec;
      spec.id = s;
      spec.tensor = root;
      spec.first = std::numeric_limits<TimeValue>::max();
      spec.last = std::numeric_limits<TimeValue>::min();
      spec.name = m.tensors[root].name;
      result.specs.push_back(std::move(spec));
      result.tensor_spec[root] = s;
      result.specs[s].members.push_back(root);
    }
    if (s == kNone) return kNone;  // view of an outer tensor: not ours
    if (t != root) {
      result.tensor_spec[t] = s;
      result.specs[s].members.push_back(t);
    }
    return s;
  };
  const auto touch = [&](TensorId t, TimeValue i) {
    const SpecId s = specOf(t);
    if (s == kNone) return;
    Spec& spec = result.specs[s];
    spec.first = std::min(spec.first, i);
    spec.last = std::max(spec.last, i);
  };

  for (TimeValue i = 0; i < num_inputs; ++i) touch(graph.inputs[i], i);
  std::vector<TensorId> outer;
  std::vector<char> visiting(m.graphs.size(), 0);
  for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes.size()); ++n) {
    const Node& node = graph.nodes[n];
    const TimeValue i = nodeTime(graph, n);
    for (TensorId t : node.outputs) touch(t, i);
    for (TensorId t : node.inputs) touch(t, i);
    // A control-flow node keeps alive everything its bodies read from here.
    for (GraphId s : node.subgraphs) {
      outer.clear();
      collectOuterReads(m, s, s, outer, visiting);
      for (TensorId t : outer) touch(t, i);
    }
  }
  for (TensorId t : graph.outputs) touch(t, last_step);

  // ShareWith results reuse their base's allocation: record it (the base's
  // spec is created here if the base never appeared on its own).
  for (SpecId s = 0; s < static_cast<SpecId>(result.specs.size()); ++s) {
    const Tensor& root = m.tensors[result.specs[s].tensor];
    if (root.alias == AliasKind::ShareWith) {
      const SpecId base = result.tensor_spec[storageRoot(m, root.alias_of)];
      if (base == kNone)
        throw InputError(fmt::format("{}: tensor '{}' shares the allocation of '{}', which is not "
                                     "used in the same graph",
                                     m.name, root.name, m.tensors[root.alias_of].name));
      result.specs[s].inplace_base = base;
    }
  }

  for (Spec& spec : result.specs) {
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
      spec.is_input |= is_input[t] != 0;
      spec.is_output |= is_output[t] != 0;
      spec.is_mutable |= x.kind == TensorKind::MutableBuffer;
      spec.dynamic_unbound |= x.dynamic_unbound;
    }
    spec.is_constant = root.kind == TensorKind::Constant;
    if (spec.is_input) spec.first = 0;
    if (spec.is_mutable) {
      spec.first = 0;
      spec.last = last_step;
    }
    bool plan = !spec.is_constant && !spec.dynamic_unbound;
    // Mutable buffers are placeholders but not user inputs: only
    // alloc_mutable_buffers decides for them.
    if (spec.is_input && !spec.is_mutable && !options.alloc_graph_input) plan = false;
    if (spec.is_output && !options.alloc_graph_output) plan = false;
    if (spec.is_mutable && !options.alloc_mutable_buffers) plan = false;
    spec.planned = plan;
  }
  // Reuse of an unplanned base's allocation is impossible: plan on its own.
  for (Spec& spec : result.specs)
    if (spec.inplace_base != kNone && !result.specs[spec.inplace_base].planned)
      spec.inplace_base = kNone;
  return result;
}

PlanOptions graphPlanOptions(const Model& model, GraphId g, const PlanOptions& root) {
  PlanOptions o = root;
  const Graph& graph = model.graphs.at(g);
  if (graph.parent == kNone) return o;
  // The node that runs the body decides (the last one, when several share it).
  NodeKind kind = NodeKind::Call;
  for (const Node& n : model.graphs.at(graph.parent).nodes)
    if (std::find(n.subgraphs.begin(), n.subgraphs.end(), g) != n.subgraphs.end()) kind = n.kind;
  o.alloc_graph_input = kind == NodeKind::Map || kind == NodeKind::Scan;
  o.alloc_graph_output = true;
  return o;
}

}  // namespace memplan

// The order search's model of one graph (see order_problem.h).
#include "order/order_problem.h"

#include <algorithm>
#include <utility>

#include "ir/body_walk.h"
#include "order/order_search.h"

namespace memplan::order {
namespace {

// Tensors of graph `g` that node `node`'s bodies (and theirs) read: what
// collectSpecs makes a control-flow node touch.
std::vector<TensorId> bodyReads(const Model& m, GraphId g, const Node& node) {
  std::vector<TensorId> out;
  std::vector<char> walked(m.graphs.size(), 0);
  for (GraphId s : node.subgraphs)
    walkBodiesOnce(
        m, s, walked, [](GraphId) {},
        [&](const std::vector<TensorId>& list) {
          for (TensorId t : list)
            if (t >= 0 && static_cast<std::size_t>(t) < m.tensors.size() && m.tensors[t].graph == g)
              out.push_back(t);
        },
        [](GraphId) {});
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Why a spec's users must keep their relative order: its storage is
// written in place, or holds state or a resource handle.
bool orderedStorage(const Model& m, const Spec& spec) {
  if (spec.is_mutable || spec.shared || spec.inplace_base != kNone) return true;
  for (TensorId t : spec.members) {
    const Tensor& x = m.tensors[t];
    if (x.alias == AliasKind::InPlace || x.alias == AliasKind::ShareWith) return true;
    if (x.dtype == DType::Resource || x.dtype == DType::Variant) return true;
  }
  return false;
}

std::string fixedReason(const Model& m, const GraphSpecs& specs) {
  for (const Spec& spec : specs.specs)
    for (TensorId t : spec.members) {
      if (!m.tensors[t].gaps.empty())
        return "tensor '" + m.tensors[t].name + "' has gaps (node windows of this order)";
      // State lives at every step: its pin holds in any order.
      if (m.tensors[t].offset && !spec.is_mutable) return "tensor '" + m.tensors[t].name + "' is pinned";
    }
  return {};
}

// Edges between nodes, always from the earlier to the later in the given
// order (so the given order is one of the orders allowed).
class EdgeSet {
 public:
  explicit EdgeSet(std::int32_t n) : preds_(static_cast<std::size_t>(n)) {}
  void add(NodeId a, NodeId b) {
    if (a == b) return;
    if (a > b) std::swap(a, b);
    preds_[b].push_back(a);
  }
  // Each node's users (ascending) as a chain.
  void chain(const std::vector<NodeId>& nodes) {
    for (std::size_t i = 1; i < nodes.size(); ++i) add(nodes[i - 1], nodes[i]);
  }
  void finish(OrderProblem& p) {
    p.succs.assign(preds_.size(), {});
    for (NodeId b = 0; b < static_cast<NodeId>(preds_.size()); ++b) {
      auto& list = preds_[b];
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
      for (NodeId a : list) p.succs[a].push_back(b);
    }
    p.preds = std::move(preds_);
  }

 private:
  std::vector<std::vector<NodeId>> preds_;
};

// Each node's specs (inputs, outputs, body reads), and its read tensors.
struct NodeUses {
  std::vector<std::vector<SpecId>> specs;
  std::vector<std::vector<TensorId>> reads;
};

NodeUses nodeUses(const Model& m, GraphId g, const GraphSpecs& gs) {
  const Graph& graph = m.graphs[g];
  NodeUses u;
  u.specs.resize(graph.nodes.size());
  u.reads.resize(graph.nodes.size());
  for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
    const Node& node = graph.nodes[v];
    auto& reads = u.reads[v];
    reads = node.inputs;
    if (!node.subgraphs.empty()) {
      const auto body = bodyReads(m, g, node);
      reads.insert(reads.end(), body.begin(), body.end());
    }
    auto& specs = u.specs[v];
    for (const std::vector<TensorId>* list : {&std::as_const(reads), &node.outputs})
      for (TensorId t : *list)
        if (gs.tensor_spec[t] != kNone) specs.push_back(gs.tensor_spec[t]);
    std::sort(specs.begin(), specs.end());
    specs.erase(std::unique(specs.begin(), specs.end()), specs.end());
  }
  return u;
}

void addDependencies(const Model& m, GraphId g, const GraphSpecs& gs, const NodeUses& u,
                     const std::vector<std::pair<NodeId, NodeId>>* extra, OrderProblem& p) {
  const Graph& graph = m.graphs[g];
  EdgeSet edges(p.n);
  std::vector<NodeId> producer(m.tensors.size(), kNone);
  std::vector<std::vector<NodeId>> spec_users(gs.specs.size());
  std::vector<NodeId> effects;  // nodes with effects the graph does not show
  for (NodeId v = 0; v < p.n; ++v) {
    const Node& node = graph.nodes[v];
    for (TensorId t : node.outputs) {
      if (producer[t] != kNone) edges.add(producer[t], v);  // written twice: keep the order
      producer[t] = v;
    }
    for (SpecId s : u.specs[v]) spec_users[s].push_back(v);
    if (node.outputs.empty() || !node.subgraphs.empty() || node.kind != NodeKind::Op)
      effects.push_back(v);
  }
  for (NodeId v = 0; v < p.n; ++v)
    for (TensorId t : u.reads[v])
      if (producer[t] != kNone) edges.add(producer[t], v);
  for (const Spec& spec : gs.specs) {
    if (!orderedStorage(m, spec)) continue;
    std::vector<NodeId> nodes = spec_users[spec.id];
    if (spec.inplace_base != kNone) {  // the pair shares bytes: one chain
      const auto& base = spec_users[spec.inplace_base];
      nodes.insert(nodes.end(), base.begin(), base.end());
      std::sort(nodes.begin(), nodes.end());
    }
    edges.chain(nodes);
  }
  edges.chain(effects);
  if (extra)
    for (const auto& [a, b] : *extra)
      if (a >= 0 && b >= 0 && a < p.n && b < p.n) edges.add(a, b);
  edges.finish(p);
}

}  // namespace

OrderProblem buildOrderProblem(const Model& m, GraphId g, const PlanOptions& options,
                               const OrderConstraints* constraints) {
  const Graph& graph = m.graphs.at(g);
  const GraphSpecs gs = collectSpecs(m, g, options);
  OrderProblem p;
  p.n = static_cast<std::int32_t>(graph.nodes.size());
  p.fixed = fixedReason(m, gs);
  const auto gi = static_cast<std::size_t>(g);
  if (p.fixed.empty() && constraints && gi < constraints->fixed.size()) p.fixed = constraints->fixed[gi];
  const NodeUses u = nodeUses(m, g, gs);
  addDependencies(m, g, gs, u,
                  constraints && gi < constraints->edges.size() ? &constraints->edges[gi] : nullptr, p);

  const TimeValue first_node = nodeTime(graph, 0);
  const TimeValue last_node = nodeTime(graph, p.n - 1);
  std::vector<Item> item_of(gs.specs.size(), kNone);
  for (const Spec& spec : gs.specs) {
    if (!spec.planned || spec.shared) continue;
    const Bytes size = alignUp(spec.nbytes, std::max<Bytes>(spec.alignment, 1)).value_or(kMaxBytes);
    if (size == 0) continue;
    // Inputs and state hold bytes from step 0, outputs and state to the
    // last step, whichever node runs first or last.
    const bool open_start = spec.is_input || spec.is_mutable || spec.first < first_node;
    const bool open_end = spec.is_output || spec.is_mutable || spec.last > last_node;
    if (open_start && open_end) {  // live at every step, whatever the order
      p.always = saturatingAdd(p.always, size);
      continue;
    }
    item_of[spec.id] = static_cast<Item>(p.bytes.size());
    p.bytes.push_back(size);
    p.open_start.push_back(open_start);
    p.open_end.push_back(open_end);
  }
  p.users.assign(p.bytes.size(), {});
  p.touches.assign(static_cast<std::size_t>(p.n), {});
  for (NodeId v = 0; v < p.n; ++v)
    for (SpecId s : u.specs[v])
      if (item_of[s] != kNone) {
        p.touches[v].push_back(item_of[s]);
        p.users[item_of[s]].push_back(v);
      }
  return p;
}

OrderProblem reversed(const OrderProblem& p) {
  OrderProblem r = p;
  std::swap(r.preds, r.succs);
  std::swap(r.open_start, r.open_end);
  return r;
}


OrderKey evaluate(const OrderProblem& p, const std::vector<NodeId>& order, std::uint64_t& work) {
  OrderSweep s(p);
  OrderKey key;
  for (NodeId v : order) {
    const Bytes c = s.cost(v);
    key.peak = std::max(key.peak, c);
    key.area = saturatingAdd(key.area, c);
    s.run(v);
    work += p.touches[v].size() + 1;
  }
  return key;
}

std::vector<Bytes> stepCosts(const OrderProblem& p, const std::vector<NodeId>& order) {
  OrderSweep s(p);
  std::vector<Bytes> out;
  out.reserve(order.size());
  for (NodeId v : order) {
    out.push_back(s.cost(v));
    s.run(v);
  }
  return out;
}

bool isTopological(const OrderProblem& p, const std::vector<NodeId>& order) {
  if (order.size() != static_cast<std::size_t>(p.n)) return false;
  std::vector<Pos> pos(static_cast<std::size_t>(p.n), -1);
  for (Pos i = 0; i < p.n; ++i) {
    const NodeId v = order[static_cast<std::size_t>(i)];
    if (v < 0 || v >= p.n || pos[v] >= 0) return false;
    pos[v] = i;
  }
  for (NodeId v = 0; v < p.n; ++v)
    for (NodeId u : p.preds[v])
      if (pos[u] > pos[v]) return false;
  return true;
}

Bytes singleStepBound(const OrderProblem& p) {
  Bytes best = 0;
  for (NodeId v = 0; v < p.n; ++v) {
    Bytes c = p.always;
    for (Item i : p.touches[v]) c = saturatingAdd(c, p.bytes[i]);
    best = std::max(best, c);
  }
  return best;
}

}  // namespace memplan::order

#include "support/random_graph.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace memplan::test {

ModelBuilder::ModelBuilder(std::string name) {
  model_.name = std::move(name);
  model_.graphs.emplace_back();
  model_.graphs[0].name = "main";
}

TensorId ModelBuilder::tensor(const std::string& name, Bytes nbytes, GraphId graph) {
  Tensor t;
  t.name = name;
  t.dtype = DType::UInt8;
  t.shape = {static_cast<std::int64_t>(nbytes)};
  t.nbytes = nbytes;
  t.graph = graph;
  model_.tensors.push_back(std::move(t));
  return static_cast<TensorId>(model_.tensors.size() - 1);
}

TensorId ModelBuilder::alias(const std::string& name, AliasKind kind, TensorId base, Bytes nbytes) {
  const Tensor& b = model_.tensors[base];
  const TensorId t = tensor(name, nbytes ? nbytes : b.nbytes, b.graph);
  Tensor& x = model_.tensors[t];
  const Tensor& base_tensor = model_.tensors[base];  // `b` may have moved
  x.device = base_tensor.device;
  x.alias = kind;
  x.alias_of = base;
  if (kind == AliasKind::ShareWith) x.mem_id = base_tensor.mem_id;
  return t;
}

GraphId ModelBuilder::subgraph(GraphId parent, const std::string& name) {
  Graph g;
  g.parent = parent;
  g.parent_node = static_cast<NodeId>(model_.graphs[parent].nodes.size());  // the next node
  g.name = name.empty() ? fmt::format("body{}", model_.graphs.size()) : name;
  model_.graphs.push_back(std::move(g));
  return static_cast<GraphId>(model_.graphs.size() - 1);
}

NodeId ModelBuilder::node(GraphId graph, const std::string& name, std::vector<TensorId> inputs,
                          std::vector<TensorId> outputs, NodeKind kind,
                          std::vector<GraphId> subgraphs) {
  Node n;
  n.name = name;
  n.op = kind == NodeKind::Op ? "op" : std::string(nodeKindName(kind));
  n.kind = kind;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.subgraphs = std::move(subgraphs);
  auto& nodes = model_.graphs[graph].nodes;
  for (GraphId s : n.subgraphs) model_.graphs[s].parent_node = static_cast<NodeId>(nodes.size());
  nodes.push_back(std::move(n));
  return static_cast<NodeId>(nodes.size() - 1);
}

// ---------------------------------------------------------------------------
namespace {

class Generator {
 public:
  Generator(std::uint64_t seed, const RandomGraphParams& p)
      : rng_(seed * 0x2545f4914f6cdd1dULL + 17), p_(p), b_(fmt::format("random-{}", seed)) {}

  RandomCase run() {
    RandomCase c;
    // Devices and preset pools do not mix (a preset mem_id on a non-CPU
    // tensor is an error), so a case uses at most one of them.
    use_devices_ = p_.devices && rng_.chance(0.3);
    use_pools_ = p_.preset_pools && !use_devices_ && rng_.chance(0.4);
    if (p_.alignments) {
      static constexpr Bytes kAlign[] = {1, 4, 8, 16, 16, 32, 64};
      c.options.alignment = kAlign[rng_.below(std::size(kAlign))];
    }
    if (p_.vary_options) {
      c.options.alloc_graph_input = rng_.chance(0.8);
      c.options.alloc_graph_output = rng_.chance(0.85);
      c.options.alloc_mutable_buffers = rng_.chance(0.85);
    }
    c.options.per_device = use_devices_ && rng_.chance(0.7);
    graph(0, 0, {}, false);
    c.model = std::move(b_.model());
    std::size_t nodes = 0;
    for (const Graph& g : c.model.graphs) nodes += g.nodes.size();
    c.summary = fmt::format("{}: {} graphs, {} tensors, {} nodes, alignment {}{}{}",
                            c.model.name, c.model.graphs.size(), c.model.tensors.size(), nodes,
                            c.options.alignment, c.options.per_device ? ", per device" : "",
                            p_.huge_sizes ? ", huge sizes" : "");
    return c;
  }

 private:
  struct Info {
    bool produced = false;   // output of an ordinary node
    bool aliased = false;    // some view/in-place/ShareWith tensor names it
  };

  Bytes size() {
    if (p_.zero_size && rng_.chance(0.05)) return 0;
    if (p_.huge_sizes && rng_.chance(0.3))
      return (Bytes{1} << rng_.range(40, 60)) + rng_.below(4096);
    if (rng_.chance(0.5)) return static_cast<Bytes>(rng_.range(1, 256));
    if (rng_.chance(0.7)) return static_cast<Bytes>(rng_.range(257, 8192));
    return static_cast<Bytes>(rng_.range(8193, 1 << 20));
  }

  TensorId fresh(GraphId g, const char* prefix) {
    const TensorId t = b_.tensor(fmt::format("{}{}", prefix, counter_++), size(), g);
    info_.resize(b_.model().tensors.size());
    Tensor& x = b_.at(t);
    if (use_devices_ && g == 0 && rng_.chance(0.2))
      x.device = rng_.chance(0.5) ? Device{"npu", 0} : Device{"cuda", 1};
    if (use_pools_ && rng_.chance(0.25)) x.mem_id = static_cast<MemId>(rng_.range(1, 3));
    if (p_.alignments && rng_.chance(0.15)) x.alignment = Bytes{1} << rng_.range(0, 7);
    return t;
  }

  TensorId makeAlias(AliasKind kind, TensorId base, Bytes nbytes) {
    const TensorId t = b_.alias(fmt::format("a{}", counter_++), kind, base, nbytes);
    info_.resize(b_.model().tensors.size());
    info_[base].aliased = true;
    // alias() copies the base's size when nbytes is 0: keep zero sizes.
    b_.at(t).nbytes = nbytes;
    b_.at(t).shape = {static_cast<std::int64_t>(nbytes)};
    return t;
  }

  const Tensor& at(TensorId t) { return b_.model().tensors[t]; }

  static void erase(std::vector<TensorId>& v, TensorId t) {
    v.erase(std::remove(v.begin(), v.end(), t), v.end());
  }

  // Generates graph `g`; `avail` starts with the outer tensors it may read.
  void graph(GraphId g, int depth, std::vector<TensorId> avail, bool planned_inputs) {
    const bool main = g == 0;
    const int max_in = main ? p_.max_inputs : (planned_inputs ? 2 : 1);
    const auto n_in = rng_.range(planned_inputs ? 1 : 0, max_in);
    for (std::int64_t i = 0; i < n_in; ++i) {
      const TensorId t = fresh(g, "in");
      b_.input(g, t);
      avail.push_back(t);
    }
    if (main && p_.mutable_buffers && rng_.chance(0.3)) {
      const TensorId t = fresh(g, "state");
      b_.at(t).kind = TensorKind::MutableBuffer;
      avail.push_back(t);
    }
    if (p_.weights && rng_.chance(0.3)) {
      const TensorId w = fresh(g, "w");
      b_.at(w).kind = rng_.chance(0.5) ? TensorKind::Constant : TensorKind::TrainableConstant;
      avail.push_back(w);
    }
    const int max_nodes =
        std::max(1, main ? p_.max_nodes : p_.max_body_nodes > 0 ? p_.max_body_nodes : p_.max_nodes / 2);
    const auto n_nodes = rng_.range(1, max_nodes);
    for (std::int64_t i = 0; i < n_nodes; ++i) {
      std::vector<TensorId> ins;
      const auto n_ins = avail.empty() ? 0 : rng_.range(1, std::min<std::int64_t>(3, avail.size()));
      while (static_cast<std::int64_t>(ins.size()) < n_ins) {
        const TensorId t = avail[rng_.below(avail.size())];
        if (std::find(ins.begin(), ins.end(), t) == ins.end()) ins.push_back(t);
      }
      const std::string name = fmt::format("n{}", counter_++);
      if (p_.control_flow && depth < p_.max_depth && rng_.chance(p_.control_flow_rate)) {
        controlFlow(g, depth, name, ins, avail);
        continue;
      }
      std::vector<TensorId> outs;
      const int r = static_cast<int>(rng_.below(100));
      const TensorId in0 = ins.empty() ? kNone : ins[0];
      const bool own = in0 != kNone && at(in0).graph == g && at(in0).kind != TensorKind::Constant;
      if (own && p_.views && r < 15) {
        const TensorId v = makeAlias(AliasKind::View, in0, rng_.below(at(in0).nbytes + 1));
        outs.push_back(v);
        avail.push_back(v);
      } else if (own && p_.in_place && r < 30) {
        const TensorId x = makeAlias(AliasKind::InPlace, in0, at(in0).nbytes);
        erase(avail, in0);  // the old value is gone
        outs.push_back(x);
        avail.push_back(x);
      } else if (own && p_.share_with && r < 42 && info_[in0].produced && !info_[in0].aliased &&
                 at(in0).alias == AliasKind::None && at(in0).kind == TensorKind::Activation) {
        // Out-variant writing into its argument: the argument dies here.
        const TensorId x = makeAlias(AliasKind::ShareWith, in0, rng_.below(at(in0).nbytes + 1));
        erase(avail, in0);
        outs.push_back(x);
        avail.push_back(x);
      } else {
        const auto n_out = rng_.range(1, 2);
        for (std::int64_t k = 0; k < n_out; ++k) {
          const TensorId t = fresh(g, "t");
          info_[t].produced = true;
          outs.push_back(t);
          avail.push_back(t);
        }
      }
      b_.node(g, name, ins, outs);
    }
    // Outputs: tensors of this graph that are still current.
    std::vector<TensorId> own;
    for (TensorId t : avail)
      if (at(t).graph == g && at(t).kind != TensorKind::Constant) own.push_back(t);
    if (own.empty()) {
      const TensorId t = fresh(g, "t");
      b_.node(g, fmt::format("n{}", counter_++), {}, {t});
      own.push_back(t);
    }
    const auto n_out = rng_.range(1, std::min<std::int64_t>(2, own.size()));
    for (std::int64_t k = 0; k < n_out; ++k) {
      const TensorId t = own[rng_.below(own.size())];
      auto& outs = b_.model().graphs[g].outputs;
      if (std::find(outs.begin(), outs.end(), t) == outs.end()) b_.output(g, t);
    }
  }

  void controlFlow(GraphId g, int depth, const std::string& name, const std::vector<TensorId>& ins,
                   std::vector<TensorId>& avail) {
    static constexpr NodeKind kKinds[] = {NodeKind::Cond, NodeKind::While, NodeKind::Map,
                                          NodeKind::Scan, NodeKind::Call};
    const NodeKind kind = kKinds[rng_.below(std::size(kKinds))];
    const int n_bodies = kind == NodeKind::Cond || kind == NodeKind::While ? 2 : 1;
    const bool planned_inputs = kind == NodeKind::Map || kind == NodeKind::Scan;
    std::vector<GraphId> bodies;
    for (int k = 0; k < n_bodies; ++k) {
      const GraphId s = b_.subgraph(g);
      // Bodies read outer tensors of the CPU only (only CPU pools reserve).
      std::vector<TensorId> captures;
      for (TensorId t : avail)
        if (at(t).device.isCpu0() && rng_.chance(0.5)) captures.push_back(t);
      const bool saved = use_devices_;
      use_devices_ = false;
      graph(s, depth + 1, captures, planned_inputs);
      use_devices_ = saved;
      bodies.push_back(s);
    }
    std::vector<TensorId> outs;
    const auto n_out = rng_.range(1, 2);
    for (std::int64_t k = 0; k < n_out; ++k) {
      const TensorId t = fresh(g, "cf");
      info_[t].produced = true;
      outs.push_back(t);
      avail.push_back(t);
    }
    b_.node(g, name, ins, outs, kind, bodies);
  }

  Rng rng_;
  const RandomGraphParams& p_;
  ModelBuilder b_;
  std::vector<Info> info_;
  bool use_devices_ = false, use_pools_ = false;
  int counter_ = 0;
};

}  // namespace

RandomCase randomCase(std::uint64_t seed, const RandomGraphParams& params) {
  return Generator(seed, params).run();
}

RandomGraphParams paramsForIndex(std::uint64_t i) {
  Rng rng(i * 7919 + 1);
  RandomGraphParams p;
  static constexpr int kNodes[] = {3, 6, 10, 16};
  p.max_nodes = kNodes[rng.below(std::size(kNodes))];
  if (rng.chance(0.3)) {  // switch a few features off
    bool* features[] = {&p.views, &p.in_place, &p.share_with, &p.control_flow,
                        &p.mutable_buffers, &p.weights, &p.devices, &p.preset_pools,
                        &p.alignments, &p.zero_size, &p.vary_options};
    for (auto k = rng.range(1, 3); k > 0; --k) *features[rng.below(std::size(features))] = false;
  }
  p.huge_sizes = i % 16 == 15;
  return p;
}

}  // namespace memplan::test

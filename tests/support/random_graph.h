// Random models for property tests, and a small builder for hand-made ones.
//
// The generator draws from memplan's SplitMix64 (algorithms/random.h: no
// std distributions, whose results differ between standard libraries), so
// a seed names the same model on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/random.h"
#include "memplan/graph.h"
#include "memplan/specs.h"

namespace memplan::test {

using Rng = SplitMix64;

// Builds models by hand: tensors are bytes (dtype uint8, shape {nbytes}).
class ModelBuilder {
 public:
  explicit ModelBuilder(std::string name = "test");
  TensorId tensor(const std::string& name, Bytes nbytes, GraphId graph = 0);
  // An alias of `base` (nbytes 0 = the base's size); same device and graph.
  TensorId alias(const std::string& name, AliasKind kind, TensorId base, Bytes nbytes = 0);
  GraphId subgraph(GraphId parent, const std::string& name = "");
  NodeId node(GraphId graph, const std::string& name, std::vector<TensorId> inputs,
              std::vector<TensorId> outputs, NodeKind kind = NodeKind::Op,
              std::vector<GraphId> subgraphs = {});
  void input(GraphId graph, TensorId t) { model_.graphs[graph].inputs.push_back(t); }
  void output(GraphId graph, TensorId t) { model_.graphs[graph].outputs.push_back(t); }
  Tensor& at(TensorId t) { return model_.tensors[t]; }
  Model& model() { return model_; }

 private:
  Model model_;
};

// What the generator may use. Every feature is a switch so a failure can be
// narrowed down by turning them off.
struct RandomGraphParams {
  int max_nodes = 10;             // per graph (bodies get half)
  int max_body_nodes = 0;         // per body; 0 = half of max_nodes
  int max_inputs = 3;
  int max_depth = 2;              // control-flow nesting
  double control_flow_rate = 0.15;  // chance of a node being control flow
  bool views = true;
  bool in_place = true;
  bool share_with = true;         // out-variant reusing its argument
  bool control_flow = true;       // cond/while/map/scan/call with captures
  bool mutable_buffers = true;
  bool weights = true;            // constants and trainable constants
  bool devices = true;            // some tensors on npu/cuda (+ per_device)
  bool preset_pools = true;       // preset mem_ids 1..3
  bool alignments = true;         // per-tensor alignment, planning alignment
  bool zero_size = true;
  bool huge_sizes = false;        // sizes 2^40..2^60: planning may refuse
  bool vary_options = true;       // alloc_graph_input/output/mutable flags
};

struct RandomCase {
  Model model;
  PlanOptions options;
  std::string summary;            // one line: seed and counts, for messages
};

// The model for `seed`; always passes validateModel.
RandomCase randomCase(std::uint64_t seed, const RandomGraphParams& params = {});

// Feature mix used by the property test for the i-th graph: mostly all
// features, sometimes a few switched off, now and then huge sizes.
RandomGraphParams paramsForIndex(std::uint64_t i);

}  // namespace memplan::test

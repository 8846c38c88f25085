// One walk over a control-flow body and the bodies below it, shared by the
// stages that need what a body uses (lifetimes, the replay).
#pragma once

#include <cstddef>
#include <vector>

#include "memplan/graph.h"
#include "memplan/limits.h"

namespace memplan {

// Walks `root` and every body below it depth first, each graph once however
// many nodes run it (bodies form a DAG), without recursion (deep nesting).
// In a graph: each node's inputs, then its outputs, then its bodies
// (entered unless walked already); after the last node, the graph's
// outputs. `uses(list)` gets each tensor list in that order; `entered(g)`
// and `left(g)` each graph as its walk begins and ends. Graph ids out of
// range and bodies nested deeper than kMaxControlFlowDepth are not entered
// (the replay walks models nobody validated). `walked` has a flag per
// graph, all 0 on entry; the graphs entered are left set (the caller
// clears them, from its `entered` list, to walk again).
template <class Entered, class Uses, class Left>
void walkBodiesOnce(const Model& m, GraphId root, std::vector<char>& walked, Entered&& entered,
                    Uses&& uses, Left&& left) {
  struct Frame {
    GraphId graph;
    std::size_t node = 0, sub = 0;  // next body of node `node` to enter
  };
  std::vector<Frame> stack;
  const auto enter = [&](GraphId g) {
    if (g < 0 || static_cast<std::size_t>(g) >= m.graphs.size() || walked[g] ||
        stack.size() > limits::kMaxControlFlowDepth)
      return;
    walked[g] = 1;
    entered(g);
    stack.push_back({g});
    const Graph& graph = m.graphs[g];
    if (!graph.nodes.empty()) {
      uses(graph.nodes[0].inputs);
      uses(graph.nodes[0].outputs);
    }
  };
  enter(root);
  while (!stack.empty()) {
    Frame& f = stack.back();
    const Graph& graph = m.graphs[f.graph];
    if (f.node == graph.nodes.size()) {
      uses(graph.outputs);
      const GraphId done = f.graph;
      stack.pop_back();
      left(done);
      continue;
    }
    const Node& node = graph.nodes[f.node];
    if (f.sub < node.subgraphs.size()) {
      enter(node.subgraphs[f.sub++]);  // may invalidate f
      continue;
    }
    f.node++;
    f.sub = 0;
    if (f.node < graph.nodes.size()) {
      uses(graph.nodes[f.node].inputs);
      uses(graph.nodes[f.node].outputs);
    }
  }
}

}  // namespace memplan

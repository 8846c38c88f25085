// The order search's model of one graph (steps 1-3 of memplan/order.h):
// items (storage) with sizes, which nodes touch them, which nodes must
// precede which; and the cost of a whole order, evaluated in one sweep.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "memplan/order.h"
#include "memplan/specs.h"

namespace memplan::order {

using Item = std::int32_t;
using Pos = std::int32_t;

struct OrderProblem {
  std::int32_t n = 0;                           // nodes
  std::vector<Bytes> bytes;                     // by item: aligned planned size
  std::vector<char> open_start, open_end;       // by item: live before / after all nodes
  std::vector<std::vector<Item>> touches;       // by node: its items, each once
  std::vector<std::vector<NodeId>> users;       // by item: nodes touching it, ascending
  std::vector<std::vector<NodeId>> preds, succs;  // by node: direct dependencies
  Bytes always = 0;                             // live at every node step whatever the order
  std::string fixed;                            // why the graph may not be reordered
};

// The problem of graph `g` in its given order (node ids = given indices),
// with `constraints`' edges and reason to keep the order, when given.
OrderProblem buildOrderProblem(const Model& model, GraphId g, const PlanOptions& options,
                               const OrderConstraints* constraints = nullptr);

// The same problem run backwards: predecessors and successors swapped, and
// the start and the end of the items. A reversed order of it has the same
// step costs, reversed.
OrderProblem reversed(const OrderProblem& p);

// (peak, sum of step costs): what every heuristic compares.
struct OrderKey {
  Bytes peak = 0;
  Bytes area = 0;
  friend auto operator<=>(const OrderKey&, const OrderKey&) = default;
};

// The live-bytes sweep over an order (steps at nodes only: the graph's input
// and output steps do not depend on the order). `work` counts item visits.
OrderKey evaluate(const OrderProblem& p, const std::vector<NodeId>& order, std::uint64_t& work);
// The cost of each node step of `order`.
std::vector<Bytes> stepCosts(const OrderProblem& p, const std::vector<NodeId>& order);

// Whether `order` is a permutation of the nodes respecting preds.
bool isTopological(const OrderProblem& p, const std::vector<NodeId>& order);

// A lower bound on any order's peak: the costliest node's own items.
Bytes singleStepBound(const OrderProblem& p);

}  // namespace memplan::order

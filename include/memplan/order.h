// Order search: an execution order of a graph's nodes that needs less
// memory, within the data dependencies.
//
//   import -> Model -> ORDER (this stage) -> lifetimes/specs -> partition
//          -> algorithm -> Plan -> verify -> export/report
//
// The lower bound of any plan is the bytes live at the busiest step, and it
// depends on the order the nodes run in. An exporter emits one topological
// order among many; any other computes the same values. This stage looks
// for the order whose bound is lowest, and never returns one whose bound is
// above the given order's.
//
// The bound of an order (orderBound) is measured by the lifetime stage
// itself: the graph with its nodes permuted goes through collectSpecs, and
// the bound is the peak over steps of the planned specs' sizes (rounded up
// to their alignment; shared state, which lives in its own pool, left out).
// The search works on a model of the same rules that is cheap to evaluate
// (src/order/order_problem.h), and the order it returns is measured again by
// collectSpecs before it is accepted.
//
// The algorithm, one graph at a time (control-flow bodies are graphs of
// their own, each ordered on its own):
//
//  1. Storage. Each planned spec is an item with its aligned size. A node
//     touches the items of its inputs, outputs and, for a control-flow node,
//     of every tensor its bodies read (as collectSpecs does). An item is
//     live from its first toucher to its last; graph inputs are live from
//     the start, graph outputs to the end, mutable state always.
//  2. Dependencies. A node that reads a tensor comes after the node that
//     writes it. Where storage is written in place or kept between calls,
//     order matters beyond reads and writes, so those nodes keep their
//     relative order: every node touching a storage with an in-place result,
//     a ShareWith pair, mutable state or a resource handle; and every node
//     with effects the graph does not show (no outputs, or a control-flow
//     node, whose bodies may write state). A graph with gaps (node windows)
//     or pinned offsets is not reordered at all: both are stated for the
//     given order (pinned state excepted: it lives at every step). A
//     runtime may need more kept (OrderConstraints: a .pte's values and
//     jumps).
//  3. Cost of a step. With the set S of nodes run so far, the bytes live
//     while node v runs are: items live across the boundary of S (started
//     in S or at the start, still needed after S or at the end), plus v's
//     own items. This depends on S alone, not on the order inside S, which
//     is what makes the exact search possible.
//  4. Heuristics (OrderParams::greedy): the given order; a forward greedy
//     (each step the ready node whose step costs least, then that leaves
//     the fewest bytes live); the same greedy on the reversed graph (the
//     issue's "schedule from the end"), reversed. The best by (peak, sum of
//     live bytes over steps) is kept.
//  5. Local search (OrderParams::local_search): a node may move anywhere
//     between its last predecessor and its first successor. Only a node
//     whose window spans the peak step can lower the peak, so those are
//     tried, moved to either end of their window; a move is kept when
//     (peak, sum) drops. Until no move helps or the work budget is spent.
//  6. Exact search (OrderParams::exact, graphs up to exact_max_nodes):
//     best-first search over the sets S (each reached once: memoized),
//     cost of a path = the highest step on it, estimate = the largest
//     single step still to come (admissible and consistent, so the first
//     complete set popped is optimal). Paths whose estimate reaches the
//     best order found so far are cut (branch and bound). Dominance: a
//     ready node whose step costs no more than the peak so far and that
//     leaves no new item live is run at once, the only successor. The work
//     budget counts node and item visits, and 200 for each set stored (what
//     copying, hashing and queueing one costs, measured); at most a million
//     sets are kept, for memory. When it runs out the best order so far
//     stands. Each
//     expansion scans the nodes after the first one not run, O(n + edges):
//     the search is exponential in the graph's width in the worst case,
//     which is why it has a budget and a size limit.
//  7. Acceptance: the best order is measured by collectSpecs; it replaces
//     the given order only when its bound is strictly lower.
//
// Deterministic: ties break on the given order's positions, containers are
// walked in index order, budgets are work counters.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "memplan/graph.h"
#include "memplan/specs.h"

namespace memplan {

// Every technique is a switch; budgets are work units scaled by effort.
struct OrderParams {
  bool greedy = true;                  // step 4
  bool local_search = true;            // step 5
  bool exact = true;                   // step 6
  double effort = 1.0;                 // scales the budgets below
  std::int32_t exact_max_nodes = 4096; // larger graphs skip the exact search
  std::uint64_t exact_work = 50000000;  // exact search: visits, 200 a set stored
  std::uint64_t local_search_work = 20000000;  // item visits of local search
};

// One graph's result.
struct GraphOrder {
  GraphId graph = 0;
  std::vector<NodeId> order;           // order[i] = given index of the i-th node
  Bytes bound_given = 0;               // orderBound of the given order
  Bytes bound_found = 0;               // orderBound of `order` (<= bound_given)
  std::string method;                  // "given", "greedy", "greedy (reversed)",
                                       // "local search", "exact"
  bool proven_optimal = false;         // no order of this graph has a lower bound
  std::uint64_t work = 0;              // work units spent
  std::string fixed;                   // why the graph kept its order ("" = searched)
  bool changed() const;                // order differs from the given one
};

struct OrderResult {
  std::vector<GraphOrder> graphs;      // index = GraphId
  bool changed() const;
};

// What a runtime keeps in order beyond what the graph shows (a .pte's
// instruction chains: memplan/pte.h, pteOrderConstraints), by graph: pairs
// (a, b) of given indices, a < b, whose order stays; and why a graph may
// not be reordered at all ("" = it may). Missing entries constrain nothing.
struct OrderConstraints {
  std::vector<std::vector<std::pair<NodeId, NodeId>>> edges;
  std::vector<std::string> fixed;
};

// The bound of graph `g` in its current node order: the peak over steps of
// the bytes the planned specs of collectSpecs(model, g, options) hold
// (sizes rounded up to alignment; shared state left out). O(n log n).
Bytes orderBound(const Model& model, GraphId g, const PlanOptions& options);

// Searches every graph of the model (options as planModel gets them:
// bodies get graphPlanOptions). Deterministic.
// `constraints`, when given, are kept as well.
OrderResult searchOrder(const Model& model, const PlanOptions& options,
                        const OrderParams& params = {},
                        const OrderConstraints* constraints = nullptr);

// The model with each graph's nodes permuted: orders[g][i] is the given
// index of the node that runs i-th (an empty list keeps graph g's order).
// Throws InputError when a list is not a permutation of the graph's nodes.
Model applyOrder(const Model& model, const std::vector<std::vector<NodeId>>& orders);

// The model in the order searchOrder finds (`memplan import --reorder`).
Model reorderedModel(const Model& model, const PlanOptions& options = {},
                     const OrderParams& params = {});

// Whether `order` (given indices) runs every node of graph `g` after the
// nodes it reads from (and the nodes the search keeps in order); used by
// tests and by readers of recorded orders.
bool isValidOrder(const Model& model, GraphId g, const std::vector<NodeId>& order,
                  const OrderConstraints* constraints = nullptr);

}  // namespace memplan

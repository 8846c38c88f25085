// The order search stage (memplan/order.h): runs the techniques of
// order_search.h on each graph and accepts an order only when the lifetime
// stage measures it lower than the given one.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "memplan/order.h"
#include "order/order_search.h"

namespace memplan {

Bytes orderBound(const Model& model, GraphId g, const PlanOptions& options) {
  const GraphSpecs gs = collectSpecs(model, g, options);
  std::vector<std::pair<TimeValue, std::int64_t>> events;  // (time, +/-1 index)
  std::vector<Bytes> size;
  for (const Spec& spec : gs.specs) {
    if (!spec.planned || spec.shared) continue;
    const Bytes b = alignUp(spec.nbytes, std::max<Bytes>(spec.alignment, 1)).value_or(kMaxBytes);
    if (b == 0) continue;
    const auto id = static_cast<std::int64_t>(size.size());
    size.push_back(b);
    events.emplace_back(spec.first, id + 1);
    events.emplace_back(spec.last + 1, -(id + 1));  // ends sort before starts
  }
  std::sort(events.begin(), events.end());
  Bytes live = 0, peak = 0;
  for (const auto& [t, e] : events) {
    if (e > 0) {
      live = saturatingAdd(live, size[static_cast<std::size_t>(e - 1)]);
      peak = std::max(peak, live);
    } else {
      live -= size[static_cast<std::size_t>(-e - 1)];
    }
  }
  return peak;
}

namespace {

using order::OrderKey;
using order::OrderProblem;

// The best order one graph's techniques found, by (peak, area).
struct Candidate {
  std::vector<NodeId> order;
  OrderKey key;
  std::string method;
  bool proven = false;
};

void considerOrder(Candidate& best, std::vector<NodeId> order, const OrderKey& key, const char* method) {
  if (key < best.key) best = {std::move(order), key, method, false};
}

Candidate searchGraph(const OrderProblem& p, const OrderParams& params, std::uint64_t& work) {
  std::vector<NodeId> given(static_cast<std::size_t>(p.n));
  std::iota(given.begin(), given.end(), 0);
  Candidate best{given, order::evaluate(p, given, work), "given"};
  if (params.greedy) {
    const OrderProblem back = order::reversed(p);
    for (const auto rule : {order::GreedyRule::CheapestStep, order::GreedyRule::FewestLive}) {
      auto fwd = order::greedyOrder(p, rule, work);
      considerOrder(best, fwd, order::evaluate(p, fwd, work), "greedy");
      auto rev = order::greedyOrder(back, rule, work);
      std::reverse(rev.begin(), rev.end());
      considerOrder(best, rev, order::evaluate(p, rev, work), "greedy (reversed)");
    }
  }
  if (params.local_search) {
    const OrderKey before = best.key;
    order::localSearch(p, best.order, best.key,
                       static_cast<std::uint64_t>(static_cast<double>(params.local_search_work) * params.effort),
                       work);
    if (best.key < before) best.method = "local search";
  }
  const Bytes floor = order::singleStepBound(p);
  best.proven = best.key.peak <= floor;
  if (params.exact && !best.proven && p.n <= params.exact_max_nodes) {
    const auto budget = static_cast<std::uint64_t>(static_cast<double>(params.exact_work) * params.effort);
    order::ExactResult r = order::exactOrder(p, best.key.peak, budget, work);
    if (!r.order.empty()) {
      const OrderKey key = order::evaluate(p, r.order, work);
      best = {std::move(r.order), key, "exact", false};
    }
    best.proven = r.complete;
  }
  return best;
}

}  // namespace

OrderResult searchOrder(const Model& model, const PlanOptions& options, const OrderParams& params,
                        const OrderConstraints* constraints) {
  OrderResult result;
  const std::vector<PlanOptions> opts = graphsPlanOptions(model, options);
  Model work_model = model;  // each graph permuted here to be measured
  for (GraphId g = 0; g < static_cast<GraphId>(model.graphs.size()); ++g) {
    GraphOrder& out = result.graphs.emplace_back();
    out.graph = g;
    const auto n = static_cast<std::int32_t>(model.graphs[g].nodes.size());
    out.order.resize(static_cast<std::size_t>(n));
    std::iota(out.order.begin(), out.order.end(), 0);
    out.method = "given";
    out.bound_given = out.bound_found = orderBound(model, g, opts[g]);
    const OrderProblem p = order::buildOrderProblem(model, g, opts[g], constraints);
    out.fixed = p.fixed;
    out.proven_optimal = p.fixed.empty() && n < 2;  // the only order there is
    if (!p.fixed.empty() || n < 2) continue;
    Candidate best = searchGraph(p, params, out.work);
    out.proven_optimal = best.proven;
    if (best.method == "given") continue;
    // Measured by the lifetime stage: accepted only when strictly lower.
    auto& nodes = work_model.graphs[g].nodes;
    const std::vector<Node> kept = nodes;
    for (std::int32_t i = 0; i < n; ++i) nodes[i] = kept[best.order[i]];
    const Bytes found = orderBound(work_model, g, opts[g]);
    nodes = kept;
    if (found >= out.bound_given) continue;
    out.order = std::move(best.order);
    out.bound_found = found;
    out.method = best.method;
  }
  return result;
}

namespace {

void checkPermutation(const Model& model, GraphId g, const std::vector<NodeId>& order,
                      const std::vector<char>& has_gaps) {
  const Graph& graph = model.graphs[g];
  if (order.size() != graph.nodes.size())
    throw InputError(fmt::format("{}: order of graph {} ('{}') has {} nodes, the graph {}", model.name,
                                 g, graph.name, order.size(), graph.nodes.size()));
  std::vector<char> seen(order.size(), 0);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const NodeId v = order[i];
    if (v < 0 || static_cast<std::size_t>(v) >= order.size() || seen[v])
      throw InputError(fmt::format("{}: order of graph {} ('{}'), position {}: node {} is out of "
                                   "range or repeated",
                                   model.name, g, graph.name, i, v));
    seen[v] = 1;
    if (v != static_cast<NodeId>(i) && has_gaps[g])
      throw InputError(fmt::format("{}: graph {} ('{}') has tensors with gaps (node windows): "
                                   "its order cannot change",
                                   model.name, g, graph.name));
  }
  if (!isValidOrder(model, g, order))
    throw InputError(fmt::format("{}: order of graph {} ('{}') runs a node before one it depends on",
                                 model.name, g, graph.name));
}

}  // namespace

Model reorderedModel(const Model& model, const PlanOptions& options, const OrderParams& params) {
  const OrderResult r = searchOrder(model, options, params);
  std::vector<std::vector<NodeId>> orders(r.graphs.size());
  for (const GraphOrder& g : r.graphs)
    if (g.changed()) orders[g.graph] = g.order;
  return applyOrder(model, orders);
}

bool isValidOrder(const Model& model, GraphId g, const std::vector<NodeId>& order,
                  const OrderConstraints* constraints) {
  const OrderProblem p = order::buildOrderProblem(model, g, PlanOptions{}, constraints);
  return order::isTopological(p, order);
}

Model applyOrder(const Model& model, const std::vector<std::vector<NodeId>>& orders) {
  if (orders.size() > model.graphs.size())
    throw InputError(fmt::format("{}: {} node orders for {} graphs", model.name, orders.size(),
                                 model.graphs.size()));
  std::vector<char> has_gaps(model.graphs.size(), 0);
  for (const Tensor& t : model.tensors)
    if (!t.gaps.empty() && t.graph >= 0 && static_cast<std::size_t>(t.graph) < has_gaps.size())
      has_gaps[t.graph] = 1;
  Model out = model;
  for (GraphId g = 0; g < static_cast<GraphId>(orders.size()); ++g) {
    const auto& order = orders[g];
    if (order.empty()) continue;
    checkPermutation(model, g, order, has_gaps);
    std::vector<NodeId> new_index(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      out.graphs[g].nodes[i] = model.graphs[g].nodes[order[i]];
      new_index[order[i]] = static_cast<NodeId>(i);
    }
    // Bodies name the node that runs them by index.
    for (Graph& body : out.graphs)
      if (body.parent == g && body.parent_node >= 0 &&
          static_cast<std::size_t>(body.parent_node) < new_index.size())
        body.parent_node = new_index[body.parent_node];
  }
  return out;
}

}  // namespace memplan

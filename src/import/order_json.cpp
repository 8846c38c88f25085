// The order search's record in plan JSON (see order_json.h).
#include "import/order_json.h"

#include "memplan/limits.h"

namespace memplan {

nlohmann::ordered_json orderJson(const Plan& plan) {
  using ojson = nlohmann::ordered_json;
  if (plan.order.graphs.empty()) return nullptr;
  ojson out;
  out["applied"] = plan.order_applied;
  ojson graphs = ojson::array();
  for (const GraphOrder& g : plan.order.graphs) {
    ojson j;
    j["graph"] = g.graph;
    j["bound_given"] = g.bound_given;
    j["bound_found"] = g.bound_found;
    j["method"] = g.method;
    j["proven_optimal"] = g.proven_optimal;
    j["work"] = g.work;
    if (!g.fixed.empty()) j["fixed"] = g.fixed;
    // The node list only where it differs (given indices, in run order).
    if (g.changed()) j["nodes"] = g.order;
    graphs.push_back(std::move(j));
  }
  out["graphs"] = std::move(graphs);
  return out;
}

void readOrderJson(const jsontext::Fields& f, const nlohmann::json& value, OrderResult& order,
                   bool& applied) {
  f.object(value, "order");
  f.knownKeys(value, "order", {"applied", "graphs"});
  applied = f.boolean(f.require(value, "order", "applied"), "order.applied");
  const auto& graphs = f.array(f.require(value, "order", "graphs"), "order.graphs", limits::kMaxGraphs);
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    const std::string at = "order.graphs[" + std::to_string(i) + "]";
    const auto& v = f.object(graphs[i], at);
    f.knownKeys(v, at, {"graph", "bound_given", "bound_found", "method", "proven_optimal", "work",
                        "fixed", "nodes"});
    GraphOrder g;
    g.graph = static_cast<GraphId>(f.unsignedInt(f.require(v, at, "graph"), at + ".graph", limits::kMaxGraphs));
    if (g.graph != static_cast<GraphId>(i)) f.fail(at + ".graph", "expected " + std::to_string(i));
    g.bound_given = f.unsignedInt(f.require(v, at, "bound_given"), at + ".bound_given", kMaxBytes);
    g.bound_found = f.unsignedInt(f.require(v, at, "bound_found"), at + ".bound_found", kMaxBytes);
    g.method = f.str(f.require(v, at, "method"), at + ".method");
    if (const auto* x = f.find(v, "proven_optimal")) g.proven_optimal = f.boolean(*x, at + ".proven_optimal");
    if (const auto* x = f.find(v, "work")) g.work = f.unsignedInt(*x, at + ".work", UINT64_MAX);
    if (const auto* x = f.find(v, "fixed")) g.fixed = f.str(*x, at + ".fixed");
    if (const auto* x = f.find(v, "nodes")) {
      const auto& nodes = f.array(*x, at + ".nodes", limits::kMaxNodes);
      for (std::size_t k = 0; k < nodes.size(); ++k)
        g.order.push_back(static_cast<NodeId>(
            f.unsignedInt(nodes[k], at + ".nodes[" + std::to_string(k) + "]", limits::kMaxNodes)));
    }
    order.graphs.push_back(std::move(g));
  }
}

}  // namespace memplan

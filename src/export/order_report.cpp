// The order search in the reports (see order_report.h).
#include "export/order_report.h"

#include <fmt/format.h>

#include "export/export_util.h"

namespace memplan::exportutil {

std::string orderReportText(const Plan& plan, const Model* model, bool exact) {
  if (plan.order.graphs.empty()) return {};
  std::string out;
  Bytes given = 0;
  std::string kept;
  for (const GraphOrder& g : plan.order.graphs) {
    given += g.bound_given;
    const std::string name = model && static_cast<std::size_t>(g.graph) < model->graphs.size()
                                 ? sanitizeUtf8(model->graphs[g.graph].name)
                                 : std::to_string(g.graph);
    if (!g.fixed.empty() && g.order.size() > 1)
      kept += fmt::format("order of {}: kept as given: {}\n", name.empty() ? std::to_string(g.graph) : name,
                          sanitizeUtf8(g.fixed));
    if (g.bound_found >= g.bound_given) continue;
    out += fmt::format(
        "order of {}: bound {} in the given order, {} in the order found ({:.1f}%, {}{})\n",
        name.empty() ? std::to_string(g.graph) : name, formatBytes(g.bound_given, exact),
        formatBytes(g.bound_found, exact),
        100.0 * (static_cast<double>(g.bound_found) / static_cast<double>(g.bound_given) - 1.0),
        g.method, g.proven_optimal ? ", optimal" : "");
  }
  if (out.empty())
    return kept + fmt::format("order: no order found below the given one's bound ({})\n",
                              formatBytes(given, exact));
  out = kept + out;
  out += plan.order_applied ? "order: planned in the order found (the plan file records it)\n"
                            : "order: --reorder plans in the order found\n";
  return out;
}

nlohmann::json orderReportJson(const Plan& plan) {
  using nlohmann::json;
  if (plan.order.graphs.empty()) return nullptr;
  json graphs = json::array();
  for (const GraphOrder& g : plan.order.graphs) {
    json j = {{"graph", g.graph},
              {"bound_given_bytes", g.bound_given},
              {"bound_found_bytes", g.bound_found},
              {"method", g.method},
              {"proven_optimal", g.proven_optimal},
              {"changed", g.changed()}};
    if (!g.fixed.empty()) j["fixed"] = sanitizeUtf8(g.fixed);
    graphs.push_back(std::move(j));
  }
  return {{"applied", plan.order_applied}, {"graphs", std::move(graphs)}};
}

}  // namespace memplan::exportutil

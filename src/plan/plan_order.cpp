// The order search inside planning (see plan_order.h).
#include "plan/plan_order.h"

namespace memplan {

OrderResult orderForRequest(const Model& model, const PlanRequest& request, bool is_pte) {
  if (request.reorder == ReorderMode::Off) return {};
  if (is_pte && request.reorder == ReorderMode::Apply)
    throw InputError("PlanRequest.reorder: an ExecuTorch program's instructions are not reordered "
                     "(report only)");
  OrderParams params = request.order;
  params.effort *= request.params.effort;
  return searchOrder(model, request.options, params);
}

std::vector<std::vector<NodeId>> changedOrders(const OrderResult& order) {
  std::vector<std::vector<NodeId>> out(order.graphs.size());
  for (std::size_t g = 0; g < order.graphs.size(); ++g)
    if (order.graphs[g].changed()) out[g] = order.graphs[g].order;
  return out;
}

PlannedModel::PlannedModel(const Model& model, const OrderResult& order, bool applied)
    : model_(model) {
  if (applied && order.changed()) copy_ = applyOrder(model, changedOrders(order));
}

PlannedModel::PlannedModel(const Model& model, const Plan& plan)
    : PlannedModel(model, plan.order, plan.order_applied) {}

}  // namespace memplan

// The order search inside planning (see plan_order.h).
#include "plan/plan_order.h"

namespace memplan {

OrderResult orderForRequest(const Model& model, const PlanRequest& request, const PteProgram* program) {
  if (request.reorder == ReorderMode::Off) return {};
  OrderParams params = request.order;
  params.effort *= request.params.effort;
  if (!program) return searchOrder(model, request.options, params);
  const OrderConstraints constraints = pteOrderConstraints(*program);
  return searchOrder(model, request.options, params, &constraints);
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

PlannedProgram::PlannedProgram(const PteProgram& program, const OrderResult& order, bool applied)
    : program_(program) {
  if (applied && order.changed()) copy_ = reorderPte(program, changedOrders(order));
}

PlannedProgram::PlannedProgram(const PteProgram& program, const Plan& plan)
    : PlannedProgram(program, plan.order, plan.order_applied) {}

}  // namespace memplan

// The order search inside planning (PlanRequest::reorder): which order a
// plan is made for, and the model in that order for the stages that walk
// its nodes (replay, readers of plan files, exporters).
#pragma once

#include <optional>
#include <vector>

#include "memplan/plan.h"

namespace memplan {

// The search the request asks for (an empty result when reorder is Off).
// Throws InputError for an order the input cannot take (a .pte's
// instruction lists are not rewritten).
OrderResult orderForRequest(const Model& model, const PlanRequest& request, bool is_pte);

// The node lists of the graphs whose order changed (empty lists elsewhere).
std::vector<std::vector<NodeId>> changedOrders(const OrderResult& order);

// The model a plan was made for: the input's own, or a copy in the plan's
// order when it applied one.
class PlannedModel {
 public:
  PlannedModel(const Model& model, const Plan& plan);
  PlannedModel(const Model& model, const OrderResult& order, bool applied);
  const Model& get() const { return copy_ ? *copy_ : model_; }

 private:
  const Model& model_;
  std::optional<Model> copy_;
};

}  // namespace memplan

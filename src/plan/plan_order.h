// The order search inside planning (PlanRequest::reorder): which order a
// plan is made for, and the model (or ExecuTorch program) in that order for
// the stages that walk its nodes (replay, readers of plan files, exporters,
// the .pte writer).
#pragma once

#include <optional>
#include <vector>

#include "memplan/plan.h"
#include "memplan/pte.h"

namespace memplan {

// The search the request asks for (an empty result when reorder is Off).
// A program's instructions keep what pteOrderConstraints says.
OrderResult orderForRequest(const Model& model, const PlanRequest& request,
                            const PteProgram* program = nullptr);

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

// The same for an ExecuTorch program: its instructions in the plan's order
// (reorderPte; throws InputError for an order they cannot run in).
class PlannedProgram {
 public:
  PlannedProgram(const PteProgram& program, const Plan& plan);
  PlannedProgram(const PteProgram& program, const OrderResult& order, bool applied);
  const PteProgram& get() const { return copy_ ? *copy_ : program_; }

 private:
  const PteProgram& program_;
  std::optional<PteProgram> copy_;
};

}  // namespace memplan

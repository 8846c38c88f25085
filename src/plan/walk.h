// The one walker over a model's methods and control-flow bodies
// (plan_model.cpp). Ordinary planning (planModel), planning around pinned
// tensors (pinned.cpp) and planning an ExecuTorch program again
// (pte_plan.cpp) each supply only the step that plans one graph; the walker
// owns the rest: methods in order, bodies before their callers (each body
// planned once, however many nodes run it), their arenas reserved as a
// prefix of the caller's pools, the state the methods share, and timing.
#pragma once

#include <functional>
#include <vector>

#include "memplan/plan.h"

namespace memplan::walk {

// Plans graph `g` with `request` (its options already those of the graph:
// graphPlanOptions) around `reserved[m]` bytes its bodies hold at the front
// of pool m. The walker then sets graph and parent, grows each pool to hold
// the reservation, and sizes pool_devices.
using GraphStep =
    std::function<GraphPlan(GraphId g, const PlanRequest& request, const std::vector<Bytes>& reserved)>;

struct Walk {
  // Entry graphs in planning order (Model::entryPoints(), or every method
  // graph of an ExecuTorch program).
  std::vector<Method> entries;
  // Place the state the methods share (sharesState) once, after all
  // methods (see plan.h, planModel). Off for a program that pins its state.
  bool place_shared_state = true;
};

// `request` is resolved (algorithm, alignment and padding set). Throws
// InputError/PlanError.
Plan planWalk(const Model& model, const PlanRequest& request, const Walk& walk, const GraphStep& step);

// A model's plan with `step` for each graph: the model validated, the
// request's defaults filled in and checked as planModel does, every method
// walked and the shared state placed.
Plan planModelWith(const Model& model, const PlanRequest& request, const GraphStep& step);

}  // namespace memplan::walk

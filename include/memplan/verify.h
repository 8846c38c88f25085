// The verifier: proves a plan safe, independently of the algorithm.
//
// Per pool it sweeps allocations by offset and lifetime (O(n log n)): no two
// planned specs alive at the same step may share a byte (a ShareWith pair
// excepted); every allocation must lie inside its pool and after the pool's
// reserved prefix, and be aligned. Inputs, outputs and mutable buffers must
// be planned exactly as the options say. Recurses into control-flow bodies.
#pragma once

#include <string>
#include <vector>

#include "memplan/plan.h"

namespace memplan {

struct Violation {
  GraphId graph = 0;
  std::string message;               // one line, names both tensors
};

struct VerifyResult {
  std::vector<Violation> violations;  // empty = plan is valid
  std::vector<std::string> warnings;  // e.g. ExecuTorch's own misalignment
  std::size_t checked_allocations = 0;
  bool ok() const { return violations.empty(); }
};

// Verifies one graph's plan (specs carry their lifetimes).
VerifyResult verifyGraphPlan(const GraphPlan& plan, const PlanOptions& options,
                             std::size_t max_violations = 16);

// Verifies every graph of a model plan.
VerifyResult verifyPlan(const Plan& plan, std::size_t max_violations = 16);

// The checks that need no lifetimes: every planned spec allocated once and
// nothing else, pools that exist, presets and pins honoured, sizes, bounds,
// the reserved prefix, alignment, bodies fitting their parent's prefix. The
// replay runs them first, so that verify and replay agree on every plan.
VerifyResult checkPlanStructure(const Plan& plan, std::size_t max_violations = 16);
VerifyResult checkGraphStructure(const GraphPlan& plan, const PlanOptions& options,
                                 std::size_t max_violations = 16);

}  // namespace memplan

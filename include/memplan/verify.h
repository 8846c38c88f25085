// The verifier: proves a plan safe, independently of the algorithm.
//
// Per pool it sweeps allocations by offset and lifetime (O(n log n)): no two
// planned specs alive at the same step may share a byte (a ShareWith pair
// excepted); every allocation must lie inside its pool and after the pool's
// reserved prefix, and be aligned. Inputs, outputs and mutable buffers must
// be planned exactly as the options say, and stay within the capacities the
// options give (PlanOptions::capacities). A spec with gaps holds, in each
// gap, only its window (or nothing). Recurses into control-flow bodies.
#pragma once

#include <cstdint>
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

// The replay (memplan::replay in memplan/memplan.h): proves a plan by
// running the model on shadow arenas; the engine is described in
// src/verify/replay.h.

struct ReplayOptions {
  // Shadow memory for flat pools together (4 bytes per granule, the granule
  // being the gcd of every offset and size in the pool). A pool is flat only
  // when no tensor spans more than 64 granules and it has at most 64 per
  // tensor; the others, and those over this budget, are replayed on an
  // interval map: same verdicts, O(log n) per write or check.
  std::uint64_t max_dense_bytes = std::uint64_t{1} << 30;
  bool force_sparse = false;         // interval maps only (tests cross-check)
};

enum class ReplayIssue : std::uint8_t {
  None,
  Clobber,         // a read found bytes written by another tensor
  OutOfArena,      // an allocation lies outside its pool
  ShortAllocation, // an allocation is smaller than the tensor it holds
  BadPlan,         // plan and model do not match (graph count, spec ids)
};

struct ReplayResult {
  ReplayIssue issue = ReplayIssue::None;
  std::string message;               // one line naming the first problem
  // The first clobber (issue == Clobber).
  GraphId graph = 0;                 // graph where it was found
  std::string victim;                // tensor (spec) whose bytes were lost
  std::string writer;                // tensor (spec) that overwrote them
  std::string writer_node;           // node that wrote ("" = graph start)
  TimeValue write_step = 0;
  std::string reader_node;           // node that found it ("" = graph end)
  TimeValue read_step = 0;
  MemId mem_id = 0;
  Offset offset = 0;                 // first clobbered byte in the pool
  // Work done.
  std::uint64_t writes = 0;
  std::uint64_t reads = 0;           // checked reads of planned storage
  std::uint64_t steps = 0;           // nodes replayed (bodies included)
  std::uint64_t dense_pools = 0, sparse_pools = 0;
  // Shadow cells and runs the writes and checks visited: follows the
  // number of tensors and steps, never their bytes.
  std::uint64_t shadow_work = 0;
  bool ok() const { return issue == ReplayIssue::None; }
};

}  // namespace memplan

// Replay: proves a plan by running the model on shadow arenas.
//
// The verifier reasons about lifetimes; the replay does not look at them at
// all. It gives every planned pool a shadow arena (an interval map of owner
// ids, or one 32-bit id per granule when every tensor is a few granules) and walks the
// graph in execution order, exactly as a runtime would:
//
//   1. Graph start: planned graph inputs are written (copied in) in order,
//      then every planned storage no node of the graph produces (mutable
//      buffers, trainable weights).
//   2. Each node: its inputs must still hold the pattern of their last write;
//      control-flow bodies then run where the node runs (their arena is the
//      reserved prefix of the same pools); then every output is written with
//      a pattern unique to that write; then the outputs and the inputs are
//      checked again (a kernel reads its inputs while it writes its outputs).
//      Views write nothing; in-place and ShareWith results re-stamp their
//      base's bytes, and only then may the base be overwritten by them.
//   3. Graph end: outputs (and, in the owning graph, mutable buffers) must
//      still hold their pattern.
//
// A body run by several nodes is stepped through once; its later runs
// replay a trace of that run (the checks that depend on the bytes it finds,
// the last write of each range between them): the same checks, verdict and
// counts, in time polynomial in the model (docs/reliability.md, "Hostile control flow").
//
// The first read that finds foreign bytes is reported with the tensor that
// wrote them, the node and the step. Constants and unplanned tensors (user
// inputs when inputs are not planned, unbound dynamic shapes) are skipped.
#pragma once

#include <cstdint>
#include <string>

#include "memplan/graph.h"
#include "memplan/plan.h"

namespace memplan {

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

// Replays a model plan (every graph, control-flow bodies where they run).
// Uses the plan's spec -> allocation mapping, never its lifetimes.
ReplayResult replayPlan(const Model& model, const Plan& plan,
                        const ReplayOptions& options = {});

// Replays a spec list plan (ExecuTorch cases, CSV buffers): each planned
// spec is written at its first step and read at its last; writes of a step
// come before its reads (lifetimes are closed). A ShareWith spec may
// overwrite its inplace_base. The pools' reserved prefixes must survive.
// A spec with gaps is written and read piece by piece (in a gap it holds its
// window, or nothing). `plan_options` are the options the plan was made with
// (capacities are checked as the verifier checks them).
ReplayResult replaySpecs(const GraphPlan& plan, const ReplayOptions& options = {});
ReplayResult replaySpecs(const GraphPlan& plan, const PlanOptions& plan_options,
                         const ReplayOptions& options = {});

}  // namespace memplan

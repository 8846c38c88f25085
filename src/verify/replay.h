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
#include "memplan/verify.h"  // ReplayOptions, ReplayResult

namespace memplan {

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

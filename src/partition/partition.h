// The partition stage: from a graph's planning specs to pools, and from the
// algorithms' placements back to bufsizes.
//
//   pool_problems.cpp     planned specs -> one PoolProblem per mem_id
//   capacity_spill.cpp    run the algorithm per pool; spill over capacities
//   executorch_layout.cpp bufsizes around the reserved prefixes
//   devices.cpp           per-device partitions and their mem_id remapping
//   shared_state.cpp      state shared by several methods, placed once
//
// Orchestration (which partitions, which algorithm, bodies first) is
// src/plan's business; nothing here knows the Model.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "memplan/algorithm.h"
#include "memplan/plan.h"

namespace memplan::partition {

std::string specName(const Spec& s);

// ---- pool problems ----

// Everything about the planned specs that does not depend on the pools.
// Shared state is not among them: it has its own pool (shared_state.cpp).
struct PreparedSpecs {
  std::vector<SpecId> order;          // planned specs, first-appearance order
  std::vector<Bytes> size;            // by SpecId: aligned size
  std::vector<SpecId> root;           // by SpecId: in-place chain root (or itself)
  std::vector<MemId> home;            // by SpecId: pool (the root's preset, else 1)
};

// Checks lifetimes, sizes, alignments and preset pools; follows in-place
// chains (an unplanned or shared base ends a chain). Throws InputError.
PreparedSpecs prepareSpecs(const GraphSpecs& graph);

// The buffers of pool `m`: specs whose pool_of is m, in spec order; size =
// nbytes rounded up to the spec's alignment; [first, last] becomes
// [first, last + 1). `specs_out` receives buffer index -> spec.
PoolProblem buildPoolProblem(const GraphSpecs& graph, const PreparedSpecs& p, MemId m,
                             const std::vector<MemId>& pool_of, const PlanOptions& options,
                             const std::vector<Bytes>& reserved, Bytes extra_padding,
                             std::vector<SpecId>& specs_out);

// ---- pools planned by one algorithm ----

struct PoolRun {
  PoolProblem problem;
  std::vector<SpecId> specs;          // buffer index -> spec
  PoolSolution solution;
};

struct PoolsResult {
  std::map<MemId, PoolRun> pools;     // used pools
  std::vector<Bytes> bufsizes;        // laid out (executorch_layout.cpp)
  Bytes total = 0;                    // sum(bufsizes), saturating
};

// Plans every pool with `algo`; a pool above its capacity
// (options.capacities) spills tensors along options.spill_order and is
// planned again, until every pool fits (else PlanError).
PoolsResult planPools(const GraphSpecs& graph, const PreparedSpecs& p, const Algorithm& algo,
                      const PlanRequest& request, const std::vector<Bytes>& reserved);

// ---- bufsizes layout ----

// bufsizes of a graph whose used pools have `sizes` (mem_id -> size), laid
// out as `layout` says around the bodies' `reserved` prefixes.
std::vector<Bytes> layoutBufsizes(BufsizesLayout layout, const std::map<MemId, Bytes>& sizes,
                                  const std::vector<Bytes>& reserved);

// ---- devices ----

// The devices of the planned (not shared) specs, in ExecuTorch's partition
// order: CPU:0 first if present, then by (type's rank, type, index). Only
// devices that have specs. Throws InputError (naming
// PlanRequest.options.per_device, the first preset spec and the first
// non-CPU spec) when a preset pool meets a non-CPU spec, as ExecuTorch
// raises NotImplementedError.
std::vector<Device> devicePartitions(const GraphSpecs& graph);

// Appends one partition's plan to `merged` (which starts as bufsizes [0]):
// its bufsizes[1:] go after the ones already there, so a spec's mem_id
// becomes (local mem_id - 1) + base, base = merged bufsizes' length before.
void appendPartition(GraphPlan& merged, const GraphPlan& part, const Device& device);

// After the last partition: at least [0, 0] (a CPU slot).
void finishPartitions(GraphPlan& merged);

// ---- shared state ----

// One method's specs, as seen by state placement.
struct MethodSpecs {
  std::string name;
  const GraphSpecs* specs = nullptr;  // the method's entry graph
  bool per_device = false;
};

// Where one fqn lives, in every method.
struct StatePlacement {
  std::string fqn;
  Device device;                      // CPU:0 unless per_device
  std::size_t pool = 0;               // index into the state pools
  Offset offset = 0;
  Bytes size = 0;                     // reserved (aligned) bytes
};

struct StateLayout {
  std::vector<StatePlacement> slots;  // fqn order
  std::vector<Bytes> pool_sizes;      // one per state pool
  std::vector<Device> pool_devices;
};

// ExecuTorch (run_multimethod): over the methods in order and each method's
// specs in order, every fqn mutable there gets the next offset of one pool,
// the offset growing by its size rounded up to `alignment`.
StateLayout placeStateExecutorch(const std::vector<MethodSpecs>& methods, Bytes alignment);

// memplan: the same order, each fqn at the next offset aligned to its own
// alignment; with per_device one state pool per device (partition order).
StateLayout placeStateMemplan(const std::vector<MethodSpecs>& methods);

}  // namespace memplan::partition

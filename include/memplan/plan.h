// Plans: the result of planning a model (or a bare spec list / buffer list).
//
// Most users call memplan::plan() (memplan/memplan.h), which reads any input
// kind and fills in the input's defaults; planModel and planSpecs below are
// the stages it is made of.
#pragma once

#include <string>
#include <vector>

#include "memplan/algorithm.h"
#include "memplan/import.h"
#include "memplan/order.h"
#include "memplan/specs.h"

namespace memplan {

struct Allocation {
  SpecId spec = kNone;               // index into GraphPlan::specs.specs
  MemId mem_id = 0;
  std::int32_t mem_obj_id = 0;
  Offset offset = 0;                 // absolute offset in the pool
  Bytes size = 0;                    // reserved bytes (aligned)
};

struct PoolInfo {
  MemId mem_id = 0;
  Device device;
  Bytes size = 0;                    // bufsizes[mem_id]
  Bytes lower_bound = 0;             // no plan of this pool can be smaller
  Bytes naive_size = 0;              // sum of sizes: no reuse at all
  Bytes reserved = 0;                // prefix held by control-flow bodies
  std::size_t buffers = 0;           // planned specs in this pool
  std::string algorithm;             // winning algorithm
  bool proven_optimal = false;
  std::uint64_t work = 0;
  bool state = false;                // holds the state the methods share
  std::vector<SearchStage> stages;   // what each search stage reached (auto)
  std::string stopped;               // "", "time limit" or "interrupted"
};

struct GraphPlan {
  GraphId graph = 0;
  GraphId parent = kNone;            // graph whose pools hold this body's arena
  GraphSpecs specs;                  // lifetimes and specs that were planned
  std::vector<Bytes> bufsizes;       // index = mem_id; [0] is always 0
  std::vector<Allocation> allocations;  // one per planned spec, spec order
  std::vector<PoolInfo> pools;       // one per non-empty mem_id >= 1
  std::vector<Device> pool_devices;  // index = mem_id
  const Allocation* find(SpecId s) const;
};

// An entry of ExecuTorch's non_const_buffer_device: a pool whose device
// is not a CPU. A graph whose pools are all on CPUs has none.
struct BufferDevice {
  MemId buffer_idx = 0;              // the pool's mem_id
  Device device;
  friend bool operator==(const BufferDevice&, const BufferDevice&) = default;
};
std::vector<BufferDevice> nonConstBufferDevice(const GraphPlan& graph);

// One method of a multi-method model: its entry graph's bufsizes are the
// method's (ExecuTorch: the ExecutionPlan's non_const_buffer_sizes).
struct MethodPlan {
  std::string name;
  GraphId graph = 0;
  friend bool operator==(const MethodPlan&, const MethodPlan&) = default;
};

// Where one piece of shared state lives, in every method that uses it.
struct StateSlot {
  std::string fqn;
  MemId mem_id = 0;
  Offset offset = 0;
  Bytes size = 0;
  friend bool operator==(const StateSlot&, const StateSlot&) = default;
};

// What an input was read from (memplan/memplan.h fills it in).
struct SourceInfo {
  std::string name;                  // file name as given (empty: built in memory)
  std::uint64_t size = 0;            // bytes
  std::string sha256;                // lower-case hex of the file's bytes
  friend bool operator==(const SourceInfo&, const SourceInfo&) = default;
};

// The order search (memplan/order.h) in a plan: off, searched and reported
// (what it would save), or searched and planned in the order found.
enum class ReorderMode : std::uint8_t { Off, Report, Apply };

struct PlanRequest {
  std::string algorithm;               // "" = the input's default ("auto";
                                       // a spec list: the case's own)
  PlanOptions options;                 // options.alignment 0 = the input's default
  std::optional<Bytes> extra_padding;  // unset = the input's default (0; a
                                       // spec list: the case's)
  AlgorithmParams params;
  ReorderMode reorder = ReorderMode::Off;
  OrderParams order;                   // its switches (effort: params.effort)
};

struct Plan {
  std::vector<GraphPlan> graphs;     // index = GraphId; [0] is the main graph
  std::vector<MethodPlan> methods;   // one per Model::methods (empty: one method)
  // How it was made: every option, resolved (so a plan file can be checked
  // against its input without retyping them).
  std::string algorithm;             // as requested ("auto", "greedy", ...)
  PlanOptions options;               // alignment resolved (never 0)
  Bytes extra_padding = 0;
  double effort = 1.0;
  double time_limit_seconds = 0;
  std::uint64_t seed = AlgorithmParams{}.seed;
  SourceInfo source;                 // the input's file (empty: in memory)
  ImportOptions import_options;      // how the input was read
  double planning_seconds = 0;
  // "" when every search ran its work budget; else why one was cut short
  // ("time limit", "interrupted") and the plan is the best found until then.
  std::string search_stopped;
  // The order search's result (empty when it did not run). When
  // `order_applied`, the graphs were planned in order.graphs[g].order (given
  // node indices, in run order): verify, replay and the exporters take the
  // input's nodes in that order (applyOrder).
  OrderResult order;
  bool order_applied = false;
  const GraphPlan& main() const { return graphs.at(0); }
};

// The state slots of a plan: each shared fqn once, from the methods' entry
// graphs, by (mem_id, offset). Empty when the methods share no state.
std::vector<StateSlot> sharedState(const Plan& plan);

// Plans every method of the model, each graph as follows: control-flow
// bodies first (their arenas become a reserved prefix of the parent's
// pools), then the graph itself, partitioned by device when
// options.per_device. State shared by the methods (sharesState) is placed
// last, once for all methods, in a pool of its own appended to each
// method's pools: exactly as ExecuTorch's share_mutable_buffers with
// options.share_mutable_buffers (pool 2; its errors as InputError), else
// in the pool after every method's own ones. Throws InputError/PlanError.
Plan planModel(const Model& model, const PlanRequest& request);

// Plans a ready-made spec list (ExecuTorch conformance cases, CSV buffers):
// specs are taken as given (lifetimes included); `reserved[mem_id]` bytes
// are held at the front of each pool (of the CPU:0 partition with
// options.per_device, as ExecuTorch does). Shared specs are left to
// planModel.
GraphPlan planSpecs(GraphSpecs specs, const PlanRequest& request,
                    const std::vector<Bytes>& reserved);

// Copies the (resolved) request's algorithm, options, padding and search
// settings into the plan.
void recordRequest(Plan& plan, const PlanRequest& request);

}  // namespace memplan

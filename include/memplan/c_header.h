// A plan for C and C++ programs: the tables memplan::Arena (runtime.h)
// reads, as a generated header or, from a plan file, in memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "memplan/plan.h"
#include "memplan/runtime.h"

namespace memplan {

// Every planned tensor of a plan, in the order the C header lists them:
// the main graph's allocations in spec order, then each control-flow
// body's (their steps are their body's own).
struct RuntimeTable {
  std::vector<std::uint64_t> pool_size;      // index = pool id; [0] = 0 (constants)
  std::vector<std::uint64_t> tensor_pool, tensor_offset, tensor_size;
  std::vector<std::int32_t> first_step, last_step, tensor_graph;
  std::vector<std::string> names;            // spec names, as in the model
  std::vector<std::string> identifiers;      // unique C identifiers (no prefix)
  // Other tensors sharing an entry's storage (views, in-place results):
  // their names and identifiers (same id as the entry).
  std::vector<std::vector<std::string>> alias_names, alias_identifiers;
  std::vector<SpecId> specs;                 // spec of each entry in its graph
  std::uint64_t alignment = 1;               // pools must be aligned to this
  std::uint64_t granule = 1;                 // offsets and sizes are multiples
  std::int32_t first_node_step = 0;          // main graph: step of node 0
  std::int32_t output_step = 0;              // main graph: the output step

  // A view for memplan::Arena; valid while this table lives.
  PlanTable<std::uint64_t> view() const;
};

// Throws InputError when a step does not fit an int32.
RuntimeTable runtimeTable(const Plan& plan, const Model* model);

struct CHeaderOptions {
  // Prefix of every name: lower case for identifiers (memplan_plan,
  // memplan_tensor_offset), upper case for macros and tensor ids
  // (MEMPLAN_POOL_1_SIZE, MEMPLAN_T_<TENSOR>). A C identifier.
  std::string prefix = "memplan";
  std::string source;                        // the input's name, for the comment
};

// A header valid as C99 (C11 adds static_asserts) and as C++11 or later:
// per-pool sizes, the alignment, an enum of tensor ids made from the
// tensors' names (upper case, [A-Z0-9_], collisions numbered in list
// order; a view or in-place result gets its storage's id), pool/offset/size/lifetime tables, a plan struct memplan::Arena
// accepts, each tensor's name, shape and dtype in a comment. The same plan
// gives the same bytes. Throws InputError on a prefix that is not a C
// identifier.
std::string writeCHeader(const Plan& plan, const Model* model, const CHeaderOptions& options);

}  // namespace memplan

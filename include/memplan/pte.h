// ExecuTorch program files (.pte): read the program and the plan it carries,
// check that plan, plan the program again and write the new plan back.
//
// A .pte is a FlatBuffer (identifier "ET12", root table Program) with an
// optional extended header ("eh00") and data segments after it. Each method
// (ExecutionPlan) holds a table of values, one chain of instructions and its
// memory plan: every planned tensor's (memory_id, offset) and the size of
// each memory id's buffer (non_const_buffer_sizes).
//
// Lifetimes come from the instruction chain (see pte_import.cpp for the
// rules): a value is alive from its first to its last instruction; method
// inputs from the start, outputs to the end; a backward jump is a loop whose
// values stay alive across it; a move makes the destination use the
// source's storage; state (a mutable buffer) lives the whole method.
// Values that share one storage in the file's plan while both are in use
// (views, in-place results) become one storage group (AliasKind::View or
// InPlace); values that only reused bytes at disjoint times are free to move.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/graph.h"
#include "memplan/order.h"
#include "memplan/plan.h"
#include "memplan/verify.h"
#include "memplan/verify.h"

namespace memplan {

// A planned tensor's place in the file's own plan.
struct PteAllocation {
  MemId mem_id = 0;
  Offset offset = 0;
  friend bool operator==(const PteAllocation&, const PteAllocation&) = default;
};

// One tensor value of a method (a Tensor EValue), as the model's tensor.
struct PteTensor {
  GraphId method = 0;
  std::int32_t value = 0;                    // index in the method's values
  std::optional<PteAllocation> allocation;   // allocation_info; none: not planned
  bool used = false;       // an instruction, the inputs or the outputs name it
  bool state = false;      // kept between calls: lives the whole method
  bool shared = false;     // state another method shares: its offset is kept
  // Where the file says it (for the writer): byte position of the Tensor
  // table's allocation_info offset, of the AllocationDetails table, and of
  // its memory_offset_low / _high fields (0: the field is absent).
  std::size_t alloc_slot = 0, alloc_table = 0, offset_low_at = 0, offset_high_at = 0;
};

struct PteMethod {
  std::string name;
  std::vector<Bytes> buffer_sizes;   // non_const_buffer_sizes ([0] unused)
  bool has_buffer_sizes = false;     // the field is present
  std::size_t buffer_sizes_slot = 0; // byte position of its offset field
  std::size_t buffer_sizes_data = 0; // byte position of element 0
  std::vector<TensorId> value_tensor;  // value index -> tensor (kNone: not a tensor)
  std::size_t instructions = 0, kernel_calls = 0, delegate_calls = 0, moves = 0,
              jumps = 0, frees = 0, loops = 0;
  std::vector<std::string> delegates;  // backend ids, in the method's order
};

struct PteProgram {
  std::string source;                // file name, for messages
  std::string bytes;                 // the whole file (the writer starts from it)
  // graphs[m] is method m (an entry point, none is another's body: with
  // several methods the model is for reports and views, planModel does not
  // take it; planPte and methodModel do).
  Model model;
  std::vector<PteTensor> tensors;    // index = TensorId of `model`
  std::vector<PteMethod> methods;
  // Layout: the flatbuffer is bytes [0, program_size); segments start at
  // segment_base (0: none).
  bool extended_header = false;
  std::uint32_t header_length = 0;
  std::uint64_t program_size = 0, segment_base = 0, segment_data_size = 0;
  struct Segment {
    std::uint64_t offset = 0, size = 0;  // relative to segment_base
  };
  std::vector<Segment> segments;
};

// How messages name method `m` of a program (memplan/graph.h).
inline std::string methodLabel(const PteProgram& program, GraphId m) {
  return methodLabel(program.methods.at(static_cast<std::size_t>(m)).name, m);
}

// Reads a .pte. Throws InputError (one line: file, byte offset, method,
// value or instruction) on anything malformed; never crashes, hangs or
// allocates without bound.
PteProgram readPte(std::string bytes, const std::string& source_name);

// Method `m` as a model of its own (graph 0), e.g. for graph JSON.
Model methodModel(const PteProgram& program, GraphId m);

// The plan the file carries, one GraphPlan per method (graph = method):
// each storage group at its root's (memory_id, offset) with its exact bytes,
// bufsizes = non_const_buffer_sizes. Pools are labelled "original"; their
// lower bound is computed at `alignment` (memplan's planning alignment).
Plan embeddedPlan(const PteProgram& program, Bytes alignment = 16);

// Checks a plan of the program (the embedded one or memplan's): the
// verifier, plus what the runtime checks at load: every planned tensor's
// memory id has a buffer, and planned tensors no instruction uses lie
// inside their buffer. Those keep their file offset when it fits the
// plan's buffer and go to offset 0 otherwise (as writePte places them);
// with `file_offsets` their file offset is checked as it is (the embedded
// plan).
VerifyResult verifyPte(const PteProgram& program, const Plan& plan, bool file_offsets = false);

// Replays a plan of the program, method by method.
ReplayResult replayPte(const PteProgram& program, const Plan& plan,
                       const ReplayOptions& options = {});

// Plans every method again with `request`, keeping each tensor's memory id;
// state another method shares keeps its offset. Where memplan's pool is not
// smaller than the file's (and the file's pool is safe), the file's
// placement is kept (pool algorithm "original") unless the algorithm is
// ExecuTorch-exact (then its plan is kept as it is). Planned tensors no
// instruction uses go to offset 0 of their pool. Throws InputError/PlanError.
Plan planPte(const PteProgram& program, const PlanRequest& request);

// The default request options for a program: alignment 16 and, when a
// method calls the XNNPACK delegate, 64 bytes of padding per pool (as
// ExecuTorch plans them).
Bytes pteDefaultExtraPadding(const PteProgram& program);

// The program with `plan`'s offsets and buffer sizes (a plan made by
// planPte or read back from a file): every other byte of the flatbuffer is
// kept; AllocationDetails tables that lack a field the new offset needs are
// written anew after the flatbuffer and pointed to; segments are moved as
// a block when the flatbuffer grows, and the extended header says where.
// The result is read back and checked before it is returned: same fields,
// same segments, the plan it was given. Throws InputError/PlanError.
std::string writePte(const PteProgram& program, const Plan& plan);

// What must keep its order for the program's instructions to run as they
// do in another order (pte_reorder.cpp): per method, pairs of instructions
// (values read after they are written and not overwritten before they are
// read, storage linked by moves or kept between calls, jumps and their
// destinations as barriers), and why a method keeps its order (several
// chains, lists that cannot be permuted in place). For searchOrder.
OrderConstraints pteOrderConstraints(const PteProgram& program);

// The program with method m's instructions run in orders[m] (the given
// index of the instruction that runs i-th; empty: kept): each chain's
// instruction list (and stack trace) permuted in place, jump destinations
// remapped; its model in that order, its tensors and their storage as the
// original's (the plan the bytes carry is still the file's: plan it with
// planPte, write it with writePte). Checked: the orders keep
// pteOrderConstraints, and the result lists the original's fields with the
// instructions in the new order. Throws InputError/PlanError.
PteProgram reorderPte(const PteProgram& program, const std::vector<std::vector<NodeId>>& orders);

// Every field of the file, one per line, in a canonical form (byte blobs
// and segments as length and hash). Without `with_plan`, the plan fields
// (allocation offsets, buffer sizes) and the layout fields (header sizes)
// are left out: two files that differ only in their plans list the same.
std::string describePte(std::string_view bytes, const std::string& source_name,
                        bool with_plan);

}  // namespace memplan

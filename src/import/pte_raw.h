// What the .pte importer reads from a method before it computes lifetimes
// (pte_import.cpp reads, pte_chain.cpp analyses and builds the graph IR).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memplan/pte.h"

namespace memplan::pte {

struct RawTensor {
  std::int32_t value = 0;
  std::int8_t scalar_type = 0;
  std::vector<std::int64_t> sizes;
  Bytes nbytes = 0;
  std::uint32_t data_buffer_idx = 0;
  bool dynamic_unbound = false;      // shape_dynamism DYNAMIC_UNBOUND
  std::optional<PteAllocation> alloc;
  std::string fqn;                   // extra_tensor_info.fully_qualified_name
  std::size_t table_pos = 0;         // byte position of the Tensor table
  std::size_t alloc_slot = 0, alloc_table = 0, low_at = 0, high_at = 0;
};

// One tensor an instruction names, once per instruction: `write` when one of
// its places there is where the instruction's results go, `other` when one
// is not (an argument read, or whose role the program does not say).
struct RawRef {
  std::int32_t tensor = 0;           // index into RawMethod::tensors
  bool write = false;
  bool other = false;
};

enum class InstrKind : std::uint8_t { Kernel, Delegate, Move, Jump, Free };

enum class JumpKind : std::uint8_t {
  Conditional,  // falls through or jumps, as the value says at run time
  Always,       // tests a constant false: always jumps
  Never,        // tests a constant true: never jumps
};

struct RawMove {
  std::int32_t instruction = 0;
  std::int32_t from = -1, to = -1;   // tensor indices
};

struct RawMethod {
  std::string name;
  std::size_t table_pos = 0;
  std::vector<RawTensor> tensors;
  std::vector<std::int32_t> value_tensor;   // value -> tensor index, -1: not a tensor
  std::vector<std::int32_t> inputs, outputs;  // tensor indices
  // Instructions of all chains, in order.
  std::vector<InstrKind> kinds;
  std::vector<std::int32_t> target;         // operator or delegate index, else -1
  std::vector<std::size_t> instr_pos;       // byte position of each instruction table
  std::vector<std::size_t> ref_begin;       // refs of instruction i: [ref_begin[i], ref_begin[i+1])
  std::vector<RawRef> refs;
  std::vector<std::pair<std::int32_t, std::int32_t>> jumps;  // (instruction, destination)
  // Per jump: whether its condition is a Bool value no instruction writes
  // (ExecuTorch's jump over a cond's false branch tests a constant false).
  std::vector<JumpKind> jump_kinds;
  // Per move instruction: its tensors, when it moves one tensor to another
  // (-1, -1: a list, or not a tensor).
  std::vector<RawMove> tensor_moves;
  std::vector<std::pair<std::int32_t, std::int32_t>> moves;  // tensors whose storage moves share
  std::vector<std::string> op_names;        // operator table: "name.overload"
  std::vector<std::string> delegate_ids;
  std::vector<Bytes> buffer_sizes;
  bool has_buffer_sizes = false;
  std::size_t buffer_sizes_slot = 0, buffer_sizes_data = 0;
};

struct RawProgram {
  std::vector<RawMethod> methods;
};

// Lifetimes, storage groups and state from the chains; fills `program`
// (model, tensors, methods). pte_chain.cpp.
void buildProgram(RawProgram& raw, PteProgram& program);

}  // namespace memplan::pte

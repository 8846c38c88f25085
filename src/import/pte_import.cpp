// ExecuTorch program importer, part 1: the file -> what each method holds.
//
// memplan reads .pte files with its own minimal reader instead of code
// generated from ExecuTorch's schema: it declares the field ids it needs
// (pte_format.h) and reads them through flatbuffers::Table, each one checked
// by flatbuffers::Verifier right before it is read.
//
// Step by step:
//  1. Layout: identifier "ET12" at byte 4; an extended header "eh00" at
//     byte 8 gives the flatbuffer's size and where the segments start;
//     segments must lie inside the file.
//  2. Methods (Program.execution_plan): name, values, inputs, outputs,
//     chains, operators, delegates, non_const_buffer_sizes.
//  3. Values: Tensor values are read in full (scalar type, sizes, constant
//     data index, allocation_info, shape dynamism, fully qualified name);
//     tensor lists keep their items (indices of tensor values). Other values
//     (ints, lists of ints, ...) are not memory-planned.
//  4. Instructions of every chain, in order: kernel and delegate calls name
//     their arguments (tensor lists expanded to their items); the last
//     argument is where the results go, and so are the places just before
//     it that repeat it (ExecuTorch passes an out argument, then returns
//     it); moves, jumps (destination checked) and frees name their values.
//  5. pte_chain.cpp turns that into lifetimes and the graph IR.
#include <algorithm>
#include <cstring>

#include "import/pte_format.h"
#include "import/pte_raw.h"
#include "memplan/limits.h"

namespace memplan {
namespace pte {
namespace {

// Bounds: a file may claim any count; absurd ones are refused before
// allocating. What memplan builds is charged against 256 MiB + 16 x file.
constexpr std::size_t kMaxMethods = 1 << 16;
using limits::kMaxRank;
constexpr Bytes kMemoryAllowance = Bytes{256} << 20;
constexpr Bytes kMemoryPerFileByte = 16;
using limits::kMaxMemId;  // planSpecs' limit on pools
// Methods are planned over the program's whole tensor table (one table of
// every method's tensors): methods x tensors is bounded.
constexpr std::size_t kMaxMethodTensors = std::size_t{1} << 26;

class Importer {
 public:
  Importer(Reader& r, std::size_t file_size) : r_(r), budget_(kMemoryAllowance + kMemoryPerFileByte * file_size) {}

  RawProgram run(PteProgram& out) {
    const fb::Table* program = r_.root();
    const Where w;
    readSegments(program, out);
    const auto* plans = r_.vector<fb::uoffset_t>(program, program_f::kExecutionPlan, w, "execution_plan");
    if (!plans || plans->size() == 0) r_.fail(program, w, "no methods (execution_plan is empty)");
    if (plans->size() > kMaxMethods)
      r_.fail(program, w, fmt::format("{} methods exceed the limit of {}", plans->size(), kMaxMethods));
    RawProgram raw;
    raw.methods.resize(plans->size());
    for (fb::uoffset_t m = 0; m < plans->size(); ++m)
      readMethod(r_.tableAt(plans, m, Where{"method", m}), static_cast<std::int64_t>(m), raw.methods[m]);
    return raw;
  }

 private:
  void charge(std::size_t bytes, const void* at, const Where& w) {
    if (bytes > budget_)
      r_.fail(at, w, "the program expands beyond the memory allowance (offsets shared many times?)");
    budget_ -= bytes;
  }

  void readSegments(const fb::Table* program, PteProgram& out) {
    const auto* segs = r_.vector<fb::uoffset_t>(program, program_f::kSegments, Where{}, "segments");
    if (!segs) return;
    charge(sizeof(PteProgram::Segment) * segs->size(), segs, Where{});
    const std::uint64_t file = out.bytes.size();
    for (fb::uoffset_t i = 0; i < segs->size(); ++i) {
      const Where w{"segment", i};
      const fb::Table* s = r_.tableAt(segs, i, w);
      PteProgram::Segment seg;
      seg.offset = r_.scalar<std::uint64_t>(s, segment_f::kOffset, 0, w, "offset");
      seg.size = r_.scalar<std::uint64_t>(s, segment_f::kSize, 0, w, "size");
      if (seg.size > 0) {
        if (out.segment_base == 0)
          r_.fail(s, w, fmt::format("{} bytes of segment data, but the file has no extended header "
                                    "saying where segments start", seg.size));
        const auto end = checkedAdd(seg.offset, seg.size);
        const auto abs_end = end ? checkedAdd(*end, out.segment_base) : std::nullopt;
        if (!abs_end || *abs_end > file)
          r_.fail(s, w, fmt::format("segment [{}, +{}) from base {} runs past the end of the file "
                                    "({} bytes: truncated?)",
                                    seg.offset, seg.size, out.segment_base, file));
      }
      out.segments.push_back(seg);
    }
  }

  // Indices into the values table (inputs, outputs, args): checked.
  std::int32_t valueIndex(std::int64_t v, const RawMethod& m, const fb::Table* at, const Where& w,
                          const char* what) const {
    if (v < 0 || static_cast<std::size_t>(v) >= m.value_tensor.size())
      r_.fail(at, w, fmt::format("{}: value index {} out of range ({} values)", what, v,
                                 m.value_tensor.size()));
    return static_cast<std::int32_t>(v);
  }

  void readMethod(const fb::Table* plan, std::int64_t mi, RawMethod& m) {
    const Where w{"method", mi};
    m.table_pos = r_.pos(plan);
    if (const fb::String* name = r_.string(plan, plan_f::kName, w, "name")) {
      charge(name->size(), plan, w);
      m.name = name->str();
    }
    const Where mw{"method table", -1, mi, &m.name};
    const auto at = [&](const char* what, std::int64_t index = -1) {
      return Where{what, index, mi, &m.name};
    };

    // Operators and delegates (names for the report).
    if (const auto* ops = r_.vector<fb::uoffset_t>(plan, plan_f::kOperators, at("operators"), "operators")) {
      charge(sizeof(std::string) * ops->size(), ops, mw);
      m.op_names.reserve(ops->size());
      for (fb::uoffset_t i = 0; i < ops->size(); ++i) {
        const Where ow = at("operator", i);
        const fb::Table* op = r_.tableAt(ops, i, ow);
        const fb::String* name = r_.string(op, operator_f::kName, ow, "name");
        const fb::String* overload = r_.string(op, operator_f::kOverload, ow, "overload");
        std::string text = name ? name->str() : std::string();
        if (overload && overload->size() > 0) {
          text += '.';
          text.append(overload->data(), overload->size());
        }
        charge(text.size(), op, ow);
        m.op_names.push_back(std::move(text));
      }
    }
    if (const auto* dels = r_.vector<fb::uoffset_t>(plan, plan_f::kDelegates, at("delegates"), "delegates")) {
      charge(sizeof(std::string) * dels->size(), dels, mw);
      m.delegate_ids.reserve(dels->size());
      for (fb::uoffset_t i = 0; i < dels->size(); ++i) {
        const Where dw = at("delegate", i);
        const fb::Table* d = r_.tableAt(dels, i, dw);
        const fb::String* id = r_.string(d, delegate_f::kId, dw, "id");
        if (id) charge(id->size(), d, dw);
        m.delegate_ids.push_back(id ? id->str() : std::string());
      }
    }

    // Buffer sizes: index 0 is the constant segment, then one per memory id.
    if (const auto* sizes = r_.vector<std::int64_t>(plan, plan_f::kNonConstBufferSizes,
                                                    at("non_const_buffer_sizes"), "non_const_buffer_sizes")) {
      charge(sizeof(Bytes) * sizes->size(), sizes, mw);
      m.has_buffer_sizes = true;
      m.buffer_sizes_slot = r_.fieldPos(plan, plan_f::kNonConstBufferSizes);
      m.buffer_sizes_data = r_.pos(sizes->Data());
      for (fb::uoffset_t i = 0; i < sizes->size(); ++i) {
        const std::int64_t s = sizes->Get(i);
        if (s < 0 || static_cast<Bytes>(s) > kMaxBytes)
          r_.fail(sizes, at("non_const_buffer_sizes", i),
                  fmt::format("buffer size {} is not in [0, 2^62]", s));
        m.buffer_sizes.push_back(static_cast<Bytes>(s));
      }
    }

    readValues(plan, mi, m);
    // A planned tensor's memory id must name one of the method's buffers
    // (non_const_buffer_sizes[memory_id]); the runtime refuses the method
    // otherwise. Bad input, not a plan to verify.
    for (const RawTensor& x : m.tensors)
      if (x.alloc && static_cast<std::size_t>(x.alloc->mem_id) >= m.buffer_sizes.size())
        throw InputError(fmt::format(
            "{}: byte {}: {}: allocation_info.memory_id {} names no buffer of the method ({})",
            r_.source(), x.alloc_table, at("value", x.value).str(), x.alloc->mem_id,
            m.buffer_sizes.size() < 2 ? "it has no non_const_buffer_sizes beyond the constants'"
                                      : fmt::format("non_const_buffer_sizes has memory ids 1 to {}",
                                                    m.buffer_sizes.size() - 1)));

    const auto ios = [&](FieldId f, const char* what, std::vector<std::int32_t>& out) {
      const auto* v = r_.vector<std::int32_t>(plan, f, at(what), what);
      if (!v) return;
      charge(sizeof(std::int32_t) * v->size(), v, mw);
      for (fb::uoffset_t i = 0; i < v->size(); ++i) {
        const std::int32_t value = valueIndex(v->Get(i), m, plan, at(what, i), what);
        expand(value, [&](std::int32_t t) { out.push_back(t); });
      }
    };
    ios(plan_f::kInputs, "inputs", m.inputs);
    ios(plan_f::kOutputs, "outputs", m.outputs);

    readChains(plan, mi, m);
  }

  // Tensor values behind value `v`: itself, or a tensor list's items.
  template <typename F>
  void expand(std::int32_t v, const F& f) const {
    const std::int32_t t = value_tensor_[static_cast<std::size_t>(v)];
    if (t >= 0) {
      f(t);
      return;
    }
    const auto& [begin, end] = list_range_[static_cast<std::size_t>(v)];
    for (std::size_t i = begin; i < end; ++i) f(list_items_[i]);
  }
  bool isList(std::int32_t v) const {
    const auto& r = list_range_[static_cast<std::size_t>(v)];
    return value_tensor_[static_cast<std::size_t>(v)] < 0 && r.second > r.first;
  }

  void readValues(const fb::Table* plan, std::int64_t mi, RawMethod& m) {
    const auto at = [&](const char* what, std::int64_t index = -1) {
      return Where{what, index, mi, &m.name};
    };
    const auto* values = r_.vector<fb::uoffset_t>(plan, plan_f::kValues, at("values"), "values");
    const std::size_t n = values ? values->size() : 0;
    charge((sizeof(std::int32_t) * 2 + sizeof(std::pair<std::size_t, std::size_t>)) * n + 1, plan,
           at("values"));
    m.value_tensor.assign(n, -1);
    value_tensor_.assign(n, -1);
    bool_value_.assign(n, -1);
    list_range_.assign(n, {0, 0});
    list_items_.clear();
    // Lists name tensors by value index; tensors come first in a pass of
    // their own, so a list may name a tensor that follows it.
    for (std::size_t i = 0; i < n; ++i) {
      const Where w = at("value", static_cast<std::int64_t>(i));
      const fb::Table* ev = r_.tableAt(values, static_cast<fb::uoffset_t>(i), w);
      const auto type = r_.scalar<std::uint8_t>(ev, evalue_f::kValType, kNoValue, w, "val_type");
      if (type > kOptionalTensorList) r_.fail(ev, w, fmt::format("unknown value type {}", type));
      if (type == kBool) {
        const fb::Table* b = r_.table(ev, evalue_f::kVal, w, "bool");
        bool_value_[i] = b && r_.scalar<std::uint8_t>(b, field(0), 0, w, "bool_val") != 0 ? 1 : 0;
      }
      if (type != kTensor) continue;
      const fb::Table* t = r_.table(ev, evalue_f::kVal, w, "tensor");
      if (!t) r_.fail(ev, w, "a Tensor value without its table");
      m.value_tensor[i] = value_tensor_[i] = static_cast<std::int32_t>(m.tensors.size());
      m.tensors.push_back(readTensor(t, static_cast<std::int32_t>(i), w));
    }
    for (std::size_t i = 0; i < n; ++i) {
      const Where w = at("value", static_cast<std::int64_t>(i));
      const fb::Table* ev = r_.tableAt(values, static_cast<fb::uoffset_t>(i), w);
      const auto type = r_.scalar<std::uint8_t>(ev, evalue_f::kValType, kNoValue, w, "val_type");
      if (type != kTensorList && type != kOptionalTensorList) continue;
      const fb::Table* t = r_.table(ev, evalue_f::kVal, w, "tensor list");
      if (!t) r_.fail(ev, w, "a tensor list value without its table");
      const auto* items = r_.vector<std::int32_t>(t, field(0), w, "items");
      if (!items) continue;
      charge(sizeof(std::int32_t) * items->size(), t, w);
      const std::size_t begin = list_items_.size();
      for (fb::uoffset_t k = 0; k < items->size(); ++k) {
        const std::int32_t item = items->Get(k);
        if (item == -1 && type == kOptionalTensorList) continue;  // None
        if (item < 0 || static_cast<std::size_t>(item) >= n || value_tensor_[static_cast<std::size_t>(item)] < 0)
          r_.fail(t, w, fmt::format("item {}: value {} is not a tensor value", k, item));
        list_items_.push_back(value_tensor_[static_cast<std::size_t>(item)]);
      }
      list_range_[i] = {begin, list_items_.size()};
    }
  }

  RawTensor readTensor(const fb::Table* t, std::int32_t value, const Where& w) {
    RawTensor x;
    charge(sizeof(RawTensor) + sizeof(Tensor) + sizeof(PteTensor) + 48, t, w);
    x.value = value;
    x.table_pos = r_.pos(t);
    x.scalar_type = r_.scalar<std::int8_t>(t, tensor_f::kScalarType, 0, w, "scalar_type");
    const unsigned elem = scalarTypeBytes(x.scalar_type);
    if (elem == 0) r_.fail(t, w, fmt::format("scalar_type {} is not known", x.scalar_type));
    if (const auto* sizes = r_.vector<std::int32_t>(t, tensor_f::kSizes, w, "sizes")) {
      if (sizes->size() > kMaxRank)
        r_.fail(t, w, fmt::format("rank {} exceeds the limit of {}", sizes->size(), kMaxRank));
      charge(sizeof(std::int64_t) * 2 * sizes->size(), t, w);
      x.sizes.assign(sizes->begin(), sizes->end());
    }
    Bytes n = elem;
    for (std::int64_t d : x.sizes) {
      if (d < 0) r_.fail(t, w, fmt::format("negative size {} in sizes", d));
      const auto p = checkedMul(n, static_cast<Bytes>(d));
      if (!p) r_.fail(t, w, "sizes overflow 2^62 bytes");
      n = *p;
    }
    x.nbytes = n;
    x.data_buffer_idx = r_.scalar<std::uint32_t>(t, tensor_f::kDataBufferIdx, 0, w, "data_buffer_idx");
    x.dynamic_unbound = r_.scalar<std::int8_t>(t, tensor_f::kShapeDynamism, 0, w, "shape_dynamism") == 2;
    if (const fb::Table* a = r_.table(t, tensor_f::kAllocationInfo, w, "allocation_info")) {
      const auto id = r_.scalar<std::uint32_t>(a, alloc_f::kMemoryId, 0, w, "allocation_info.memory_id");
      const auto low = r_.scalar<std::uint32_t>(a, alloc_f::kOffsetLow, 0, w, "allocation_info.memory_offset_low");
      const auto high = r_.scalar<std::uint32_t>(a, alloc_f::kOffsetHigh, 0, w, "allocation_info.memory_offset_high");
      if (id == 0 || id > static_cast<std::uint32_t>(kMaxMemId))
        r_.fail(a, w, fmt::format("allocation_info.memory_id {} is not in [1, {}] (0 holds constants)",
                                  id, kMaxMemId));
      const Offset offset = (static_cast<Offset>(high) << 32) | low;
      if (offset > kMaxBytes - x.nbytes)
        r_.fail(a, w, fmt::format("allocation_info offset {} overflows 2^62 bytes", offset));
      x.alloc = PteAllocation{static_cast<MemId>(id), offset};
      x.alloc_slot = r_.fieldPos(t, tensor_f::kAllocationInfo);
      x.alloc_table = r_.pos(a);
      x.low_at = r_.fieldPos(a, alloc_f::kOffsetLow);
      x.high_at = r_.fieldPos(a, alloc_f::kOffsetHigh);
    }
    if (const fb::Table* e = r_.table(t, tensor_f::kExtraTensorInfo, w, "extra_tensor_info"))
      if (const fb::String* fqn = r_.string(e, extra_f::kFullyQualifiedName, w, "fully_qualified_name")) {
        charge(fqn->size(), e, w);
        x.fqn = fqn->str();
      }
    return x;
  }

  // Long (~110 lines) on purpose: the flatbuffer walk from a method to its
  // chains' instructions and their arguments, every offset checked where it
  // is read; the schema's nesting is the function's.
  void readChains(const fb::Table* plan, std::int64_t mi, RawMethod& m) {
    const auto at = [&](const char* what, std::int64_t index = -1) {
      return Where{what, index, mi, &m.name};
    };
    const auto* chains = r_.vector<fb::uoffset_t>(plan, plan_f::kChains, at("chains"), "chains");
    const std::size_t nchains = chains ? chains->size() : 0;
    std::vector<std::int32_t> stamp(m.tensors.size(), -1);  // last instruction naming a tensor
    std::vector<std::size_t> slot(m.tensors.size(), 0);     // its ref there
    std::vector<char> named(bool_value_.size(), 0);         // value named by a non-jump
    std::vector<std::int32_t> conds;                        // each jump's condition value
    m.ref_begin.push_back(0);
    for (std::size_t c = 0; c < nchains; ++c) {
      const fb::Table* chain = r_.tableAt(chains, static_cast<fb::uoffset_t>(c), at("chain", static_cast<std::int64_t>(c)));
      const auto* instrs = r_.vector<fb::uoffset_t>(chain, chain_f::kInstructions, at("chain", static_cast<std::int64_t>(c)), "instructions");
      const std::size_t n = instrs ? instrs->size() : 0;
      const auto base = static_cast<std::int64_t>(m.kinds.size());
      if (base + static_cast<std::int64_t>(n) > (std::int64_t{1} << 30))
        r_.fail(chain, at("chain", static_cast<std::int64_t>(c)), "more than 2^30 instructions");
      charge((sizeof(InstrKind) + sizeof(std::int32_t) + 2 * sizeof(std::size_t) + sizeof(Node) +
              sizeof(RawMove) + sizeof(JumpKind)) * n,
             chain, at("chain"));
      for (std::size_t k = 0; k < n; ++k) {
        const auto index = static_cast<std::int32_t>(base + static_cast<std::int64_t>(k));
        const Where w = at("instruction", index);
        const fb::Table* ins = r_.tableAt(instrs, static_cast<fb::uoffset_t>(k), w);
        m.instr_pos.push_back(r_.pos(ins));
        const auto type = r_.scalar<std::uint8_t>(ins, instruction_f::kArgsType, kNoInstruction, w, "instr_args_type");
        const fb::Table* args = type >= kKernelCall && type <= kFreeCall
                                    ? r_.table(ins, instruction_f::kArgs, w, "instr_args")
                                    : nullptr;
        if (!args) r_.fail(ins, w, fmt::format("instruction type {} is not a known instruction", type));
        const auto add = [&](std::int32_t t, bool write) {
          if (stamp[static_cast<std::size_t>(t)] != index) {
            stamp[static_cast<std::size_t>(t)] = index;
            slot[static_cast<std::size_t>(t)] = m.refs.size();
            charge(sizeof(RawRef) + 2 * sizeof(TensorId), ins, w);
            m.refs.push_back({t, false, false});
          }
          RawRef& ref = m.refs[slot[static_cast<std::size_t>(t)]];
          (write ? ref.write : ref.other) = true;
        };
        const auto int_field = [&](FieldId f, const char* name) {
          return r_.scalar<std::int32_t>(args, f, 0, w, name);
        };
        switch (type) {
          case kKernelCall:
          case kDelegateCall: {
            const bool kernel = type == kKernelCall;
            const std::int32_t target = int_field(kCallFirst, kernel ? "op_index" : "delegate_index");
            const std::size_t table = kernel ? m.op_names.size() : m.delegate_ids.size();
            if (target < 0 || static_cast<std::size_t>(target) >= table)
              r_.fail(args, w, fmt::format("{} {} out of range ({} {})", kernel ? "op_index" : "delegate_index",
                                           target, table, kernel ? "operators" : "delegates"));
            m.kinds.push_back(kernel ? InstrKind::Kernel : InstrKind::Delegate);
            m.target.push_back(target);
            const auto* a = r_.vector<std::int32_t>(args, kCallSecond, w, "args");
            readArgs(a, m, args, w, add);
            if (a)
              for (fb::uoffset_t j = 0; j < a->size(); ++j) named[static_cast<std::size_t>(a->Get(j))] = 1;
            break;
          }
          case kMoveCall: {
            const std::int32_t from = valueIndex(int_field(kCallFirst, "move_from"), m, args, w, "move_from");
            const std::int32_t to = valueIndex(int_field(kCallSecond, "move_to"), m, args, w, "move_to");
            m.kinds.push_back(InstrKind::Move);
            m.target.push_back(-1);
            std::int32_t first = -1;
            const auto link = [&](std::int32_t t) {
              if (first < 0) first = t;
              else m.moves.emplace_back(first, t);
            };
            expand(from, [&](std::int32_t t) { add(t, false); link(t); });
            expand(to, [&](std::int32_t t) { add(t, true); link(t); });
            named[static_cast<std::size_t>(from)] = named[static_cast<std::size_t>(to)] = 1;
            const std::int32_t tf = value_tensor_[static_cast<std::size_t>(from)];
            const std::int32_t tt = value_tensor_[static_cast<std::size_t>(to)];
            m.tensor_moves.push_back(tf >= 0 && tt >= 0 ? RawMove{index, tf, tt} : RawMove{index, -1, -1});
            break;
          }
          case kJumpFalseCall: {
            const std::int32_t cond = valueIndex(int_field(kCallFirst, "cond_value_index"), m, args, w, "cond_value_index");
            const std::int32_t dest = int_field(kCallSecond, "destination_instruction");
            if (dest < 0 || static_cast<std::size_t>(dest) > n)
              r_.fail(args, w, fmt::format("destination_instruction {} outside the chain's {} instructions",
                                           dest, n));
            m.kinds.push_back(InstrKind::Jump);
            m.target.push_back(-1);
            m.jumps.emplace_back(index, static_cast<std::int32_t>(base + dest));
            conds.push_back(cond);
            expand(cond, [&](std::int32_t t) { add(t, false); });
            break;
          }
          default: {  // kFreeCall
            const std::int32_t v = valueIndex(int_field(kCallFirst, "value_index"), m, args, w, "value_index");
            m.kinds.push_back(InstrKind::Free);
            m.target.push_back(-1);
            expand(v, [&](std::int32_t t) { add(t, false); });
            named[static_cast<std::size_t>(v)] = 1;
            break;
          }
        }
        m.ref_begin.push_back(m.refs.size());
      }
    }
    // A Bool value no other instruction names is a constant.
    for (std::int32_t c : conds) {
      const auto v = static_cast<std::size_t>(c);
      const bool constant = bool_value_[v] >= 0 && !named[v];
      m.jump_kinds.push_back(!constant ? JumpKind::Conditional
                             : bool_value_[v] ? JumpKind::Never
                                              : JumpKind::Always);
    }
  }

  // Arguments of a kernel or delegate call. Results go to the last argument
  // (a tensor or a list of tensors); the places just before it that repeat
  // it are the out arguments ExecuTorch passes before returning them.
  template <typename Add>
  void readArgs(const fb::Vector<std::int32_t>* a, const RawMethod& m, const fb::Table* at,
                const Where& w, const Add& add) {
    if (!a || a->size() == 0) return;
    const std::size_t n = a->size();
    std::vector<std::int32_t> values(n);
    for (std::size_t i = 0; i < n; ++i)
      values[i] = valueIndex(a->Get(static_cast<fb::uoffset_t>(i)), m, at, w, "args");
    const std::int32_t last = values[n - 1];
    std::vector<char> out(n, 0);
    out[n - 1] = 1;
    if (isList(last)) {
      const auto& [begin, end] = list_range_[static_cast<std::size_t>(last)];
      const std::size_t k = end - begin;
      if (k < n) {
        bool repeats = true;
        for (std::size_t j = 0; j < k && repeats; ++j) {
          const std::int32_t t = value_tensor_[static_cast<std::size_t>(values[n - 1 - k + j])];
          repeats = t >= 0 && t == list_items_[begin + j];
        }
        if (repeats)
          for (std::size_t j = 0; j < k; ++j) out[n - 1 - k + j] = 1;
      }
    } else if (n >= 2 && values[n - 2] == last) {
      out[n - 2] = 1;
    }
    for (std::size_t i = 0; i < n; ++i)
      expand(values[i], [&](std::int32_t t) { add(t, out[i] != 0); });
  }

  Reader& r_;
  Bytes budget_;
  // Of the method being read.
  std::vector<std::int32_t> value_tensor_;
  std::vector<std::int8_t> bool_value_;  // Bool values: 0 or 1; others -1
  std::vector<std::pair<std::size_t, std::size_t>> list_range_;
  std::vector<std::int32_t> list_items_;
};

}  // namespace
}  // namespace pte

PteProgram readPte(std::string bytes, const std::string& source_name) {
  using namespace pte;
  const Layout layout = readLayout(bytes, source_name);
  PteProgram program;
  program.source = source_name;
  program.extended_header = layout.header;
  program.header_length = layout.header_length;
  program.program_size = layout.program_size;
  program.segment_base = layout.segment_base;
  program.segment_data_size = layout.segment_data_size;
  program.bytes = std::move(bytes);
  RawProgram raw;
  {
    const AlignedBytes aligned(program.bytes);
    Reader reader(aligned.data(), static_cast<std::size_t>(layout.program_size), source_name);
    Importer importer(reader, program.bytes.size());
    raw = importer.run(program);
  }
  // Each method's specs index the program's whole tensor table.
  std::size_t tensors = 0;
  for (const RawMethod& m : raw.methods) tensors += m.tensors.size();
  if (raw.methods.size() > 1 && tensors > kMaxMethodTensors / raw.methods.size())
    throw InputError(fmt::format("{}: {} methods over {} tensor values exceed the limit of {} "
                                 "(methods x tensors)",
                                 source_name, raw.methods.size(), tensors, kMaxMethodTensors));
  buildProgram(raw, program);
  return program;
}

}  // namespace memplan

// Every field of an ExecuTorch program, one per line (see memplan/pte.h):
// the program as its schema lists it, walked with the verifying reader.
// Byte blobs (constant data, delegate blobs, segments) appear as length and
// FNV-1a hash. Without the plan, allocation offsets, buffer sizes and the
// header's sizes are left out; everything else is listed, so two files that
// list the same differ at most in their plans.
#include <bit>
#include <cstring>

#include "import/pte_format.h"
#include "memplan/pte.h"

namespace memplan {
namespace {

using namespace pte;

constexpr Bytes kListingAllowance = Bytes{64} << 20;
constexpr Bytes kListingPerFileByte = 64;

// Lists the fields as text, or (`text` false) only mixes them into a hash:
// the same walk, without formatting, for comparing large files quickly.
class Describer {
 public:
  Describer(Reader& r, std::string_view bytes, const Layout& layout, bool with_plan, bool text)
      : r_(r), bytes_(bytes), layout_(layout), with_plan_(with_plan), text_(text),
        budget_(kListingAllowance + kListingPerFileByte * bytes.size()) {}

  std::uint64_t hash() const { return hash_; }

  std::string run() {
    text("identifier", kIdentifier);
    text("extended_header", layout_.header ? "yes" : "no");
    if (layout_.header) {
      number("extended_header.length", layout_.header_length);
      if (with_plan_) {
        number("extended_header.program_size", layout_.program_size);
        number("extended_header.segment_base_offset", layout_.segment_base);
      }
      number("extended_header.segment_data_size", layout_.segment_data_size);
    }
    const fb::Table* p = r_.root();
    const Where w;
    u32(p, program_f::kVersion, "version", w);
    tables(p, program_f::kExecutionPlan, "execution_plan", [&](const fb::Table* t, const Where& tw) { plan(t, tw); });
    tables(p, program_f::kConstantBuffer, "constant_buffer",
           [&](const fb::Table* t, const Where& tw) { blob(t, field(0), "storage", tw); });
    tables(p, program_f::kBackendDelegateData, "backend_delegate_data",
           [&](const fb::Table* t, const Where& tw) { blob(t, field(0), "data", tw); });
    tables(p, program_f::kSegments, "segments", [&](const fb::Table* t, const Where& tw) {
      const auto off = u64(t, segment_f::kOffset, "offset", tw);
      const auto size = u64(t, segment_f::kSize, "size", tw);
      segmentData(off, size);
    });
    table(p, program_f::kConstantSegment, "constant_segment", [&](const fb::Table* t, const Where& tw) { subsegments(t, tw); });
    tables(p, program_f::kMutableDataSegments, "mutable_data_segments",
           [&](const fb::Table* t, const Where& tw) { subsegments(t, tw); });
    tables(p, program_f::kNamedData, "named_data", [&](const fb::Table* t, const Where& tw) {
      str(t, field(0), "key", tw);
      u32(t, field(1), "segment_index", tw);
    });
    return std::move(out_);
  }

 private:
  // ---- output ----
  void mix(std::uint64_t v) {
    hash_ = (hash_ ^ v) * 0x9e3779b97f4a7c15ULL;
    hash_ ^= hash_ >> 29;
  }
  void line(std::string_view name, std::string_view value) {
    const std::size_t n = path_.size() + name.size() + value.size() + 3;
    if (n > budget_)
      throw InputError(fmt::format("{}: the program's listing grows beyond {} bytes (offsets shared "
                                   "many times?)",
                                   r_.source(), kListingAllowance + kListingPerFileByte * bytes_.size()));
    budget_ -= n;
    out_ += path_;
    if (!path_.empty()) out_ += '.';
    out_ += name;
    out_ += '=';
    out_ += value;
    out_ += '\n';
  }
  // A field: its name (a literal: the pointer identifies it) and value.
  void number(const char* name, std::uint64_t v) {
    if (text_) return line(name, std::to_string(v));
    mix(reinterpret_cast<std::uintptr_t>(name));
    mix(v);
  }
  void signedNumber(const char* name, std::int64_t v) {
    if (text_) return line(name, std::to_string(v));
    mix(reinterpret_cast<std::uintptr_t>(name));
    mix(static_cast<std::uint64_t>(v));
  }
  void text(const char* name, std::string_view v) {
    if (!text_) {
      mix(reinterpret_cast<std::uintptr_t>(name));
      mix(hashBytes(reinterpret_cast<const std::uint8_t*>(v.data()), v.size()));
      return;
    }
    line(name, v);
  }
  void bytes(const char* name, const std::uint8_t* p, std::size_t n) {
    const std::uint64_t h = hashBytes(p, n);
    if (text_) return line(name, fmt::format("{} bytes, fnv1a {:016x}", n, h));
    mix(reinterpret_cast<std::uintptr_t>(name));
    mix(n);
    mix(h);
  }
  struct Scope {
    Describer& d;
    std::size_t size;
    Scope(Describer& d_, const char* part, std::int64_t index = -1) : d(d_), size(d_.path_.size()) {
      if (!d.text_) {
        d.mix(reinterpret_cast<std::uintptr_t>(part));
        d.mix(static_cast<std::uint64_t>(index));
        return;
      }
      if (!d.path_.empty()) d.path_ += '.';
      d.path_ += part;
      if (index >= 0) {
        d.path_ += '[';
        d.path_ += std::to_string(index);
        d.path_ += ']';
      }
    }
    ~Scope() {
      if (d.text_) d.path_.resize(size);
      else d.mix(0x5c09e);  // end of scope
    }
  };

  // ---- fields ----
  template <typename T>
  T scalar(const fb::Table* t, FieldId f, const char* name, const Where& w, bool show = true) {
    const T v = r_.scalar<T>(t, f, T{}, w, name);
    if (show) {
      if constexpr (std::is_signed_v<T>) signedNumber(name, v);
      else number(name, v);
    }
    return v;
  }
  std::uint32_t u32(const fb::Table* t, FieldId f, const char* name, const Where& w) { return scalar<std::uint32_t>(t, f, name, w); }
  std::uint64_t u64(const fb::Table* t, FieldId f, const char* name, const Where& w) { return scalar<std::uint64_t>(t, f, name, w); }
  void i32(const fb::Table* t, FieldId f, const char* name, const Where& w) { scalar<std::int32_t>(t, f, name, w); }
  void i8(const fb::Table* t, FieldId f, const char* name, const Where& w) { scalar<std::int8_t>(t, f, name, w); }
  void u8(const fb::Table* t, FieldId f, const char* name, const Where& w) { scalar<std::uint8_t>(t, f, name, w); }

  void str(const fb::Table* t, FieldId f, const char* name, const Where& w) {
    const fb::String* s = r_.string(t, f, w, name);
    if (!s) return;
    if (!text_) return text(name, s->string_view());
    std::string v;
    for (char c : s->string_view()) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u >= 0x7f || c == '\\') v += fmt::format("\\x{:02x}", u);
      else v += c;
    }
    line(name, '"' + v + '"');
  }
  template <typename T>
  void list(const fb::Table* t, FieldId f, const char* name, const Where& w) {
    const auto* v = r_.vector<T>(t, f, w, name);
    if (!v) return;
    if (!text_) {
      mix(reinterpret_cast<std::uintptr_t>(name));
      mix(v->size());
      mix(hashBytes(reinterpret_cast<const std::uint8_t*>(v->Data()), sizeof(T) * v->size()));
      return;
    }
    std::string items = "[";
    for (fb::uoffset_t i = 0; i < v->size(); ++i) {
      if (i) items += ',';
      if constexpr (std::is_same_v<T, double>)
        items += fmt::format("{:#x}", std::bit_cast<std::uint64_t>(v->Get(i)));  // exact
      else
        items += std::to_string(+v->Get(i));
      if (items.size() > budget_) line(name, items);  // fails with the budget message
    }
    line(name, items + "]");
  }
  void blob(const fb::Table* t, FieldId f, const char* name, const Where& w) {
    const auto* v = r_.vector<std::uint8_t>(t, f, w, name);
    if (!v) return;
    bytes(name, v->Data(), v->size());
  }
  void segmentData(std::uint64_t off, std::uint64_t size) {
    if (size == 0 || layout_.segment_base == 0) return;
    const auto end = checkedAdd(off, size);
    const auto abs = end ? checkedAdd(*end, layout_.segment_base) : std::nullopt;
    if (!abs || *abs > bytes_.size())
      throw InputError(fmt::format("{}: segment [{}, +{}) runs past the end of the file", r_.source(), off, size));
    const auto* p = reinterpret_cast<const std::uint8_t*>(bytes_.data() + layout_.segment_base + off);
    bytes("data", p, size);
  }

  template <typename F>
  void table(const fb::Table* t, FieldId f, const char* name, const F& each) {
    const Where w{name};
    if (const fb::Table* sub = r_.table(t, f, w, name)) {
      Scope scope(*this, name);
      each(sub, w);
    }
  }
  template <typename F>
  void tables(const fb::Table* t, FieldId f, const char* name, const F& each) {
    const Where w{name};
    const auto* v = r_.vector<fb::uoffset_t>(t, f, w, name);
    if (!v) return;
    number(name, v->size());
    for (fb::uoffset_t i = 0; i < v->size(); ++i) {
      const Where iw{name, i};
      Scope scope(*this, name, i);
      each(r_.tableAt(v, i, iw), iw);
    }
  }

  void subsegments(const fb::Table* t, const Where& w) {
    u32(t, field(0), "segment_index", w);
    list<std::uint64_t>(t, field(1), "offsets", w);
  }

  void plan(const fb::Table* p, const Where& w) {
    str(p, plan_f::kName, "name", w);
    table(p, plan_f::kContainerMetaType, "container_meta_type", [&](const fb::Table* t, const Where& tw) {
      str(t, field(0), "encoded_inp_str", tw);
      str(t, field(1), "encoded_out_str", tw);
    });
    tables(p, plan_f::kValues, "values", [&](const fb::Table* t, const Where& tw) { value(t, tw); });
    list<std::int32_t>(p, plan_f::kInputs, "inputs", w);
    list<std::int32_t>(p, plan_f::kOutputs, "outputs", w);
    tables(p, plan_f::kChains, "chains", [&](const fb::Table* t, const Where& tw) {
      list<std::int32_t>(t, chain_f::kInputs, "inputs", tw);
      list<std::int32_t>(t, chain_f::kOutputs, "outputs", tw);
      tables(t, chain_f::kInstructions, "instructions", [&](const fb::Table* i, const Where& iw) { instruction(i, iw); });
      tables(t, chain_f::kStacktrace, "stacktrace", [&](const fb::Table* fl, const Where& fw) {
        tables(fl, field(0), "items", [&](const fb::Table* fr, const Where& frw) {
          str(fr, field(0), "filename", frw);
          i32(fr, field(1), "lineno", frw);
          str(fr, field(2), "name", frw);
          str(fr, field(3), "context", frw);
        });
        (void)fw;
      });
    });
    tables(p, plan_f::kOperators, "operators", [&](const fb::Table* t, const Where& tw) {
      str(t, operator_f::kName, "name", tw);
      str(t, operator_f::kOverload, "overload", tw);
    });
    tables(p, plan_f::kDelegates, "delegates", [&](const fb::Table* t, const Where& tw) {
      str(t, delegate_f::kId, "id", tw);
      table(t, delegate_f::kProcessed, "processed", [&](const fb::Table* d, const Where& dw) {
        i8(d, field(0), "location", dw);
        u32(d, field(1), "index", dw);
      });
      tables(t, delegate_f::kCompileSpecs, "compile_specs", [&](const fb::Table* c, const Where& cw) {
        str(c, field(0), "key", cw);
        blob(c, field(1), "value", cw);
      });
    });
    if (with_plan_) list<std::int64_t>(p, plan_f::kNonConstBufferSizes, "non_const_buffer_sizes", w);
    else if (const auto* v = r_.vector<std::int64_t>(p, plan_f::kNonConstBufferSizes, w, "non_const_buffer_sizes"))
      number("non_const_buffer_sizes", v->size());
  }

  void value(const fb::Table* ev, const Where& w) {
    const auto type = scalar<std::uint8_t>(ev, evalue_f::kValType, "val_type", w);
    static constexpr const char* kNames[] = {"none",       "null",       "int",      "bool",
                                             "double",     "tensor",     "string",   "int_list",
                                             "double_list", "bool_list", "tensor_list",
                                             "optional_tensor_list"};
    if (type == kNoValue || type > kOptionalTensorList) return;
    const fb::Table* t = r_.table(ev, evalue_f::kVal, w, "val");
    if (!t) return;
    Scope scope(*this, kNames[type]);
    switch (type) {
      case kInt: scalar<std::int64_t>(t, field(0), "int_val", w); break;
      case kBool: u8(t, field(0), "bool_val", w); break;
      case kDouble: {
        const double d = r_.scalar<double>(t, field(0), 0.0, w, "double_val");
        if (text_) line("double_val", fmt::format("{:#x}", std::bit_cast<std::uint64_t>(d)));
        else number("double_val", std::bit_cast<std::uint64_t>(d));
        break;
      }
      case kTensor: tensor(t, w); break;
      case kString: str(t, field(0), "string_val", w); break;
      case kIntList: list<std::int64_t>(t, field(0), "items", w); break;
      case kDoubleList: list<double>(t, field(0), "items", w); break;
      case kBoolList: list<std::uint8_t>(t, field(0), "items", w); break;
      case kTensorList:
      case kOptionalTensorList: list<std::int32_t>(t, field(0), "items", w); break;
      default: break;
    }
  }

  void tensor(const fb::Table* t, const Where& w) {
    i8(t, tensor_f::kScalarType, "scalar_type", w);
    i32(t, tensor_f::kStorageOffset, "storage_offset", w);
    list<std::int32_t>(t, tensor_f::kSizes, "sizes", w);
    list<std::uint8_t>(t, tensor_f::kDimOrder, "dim_order", w);
    u8(t, tensor_f::kRequiresGrad, "requires_grad", w);
    u32(t, tensor_f::kDataBufferIdx, "data_buffer_idx", w);
    table(t, tensor_f::kAllocationInfo, "allocation_info", [&](const fb::Table* a, const Where& aw) {
      u32(a, alloc_f::kMemoryId, "memory_id", aw);
      scalar<std::uint32_t>(a, alloc_f::kOffsetLow, "memory_offset_low", aw, with_plan_);
      scalar<std::uint32_t>(a, alloc_f::kOffsetHigh, "memory_offset_high", aw, with_plan_);
    });
    i8(t, tensor_f::kLayout, "layout", w);
    i8(t, tensor_f::kShapeDynamism, "shape_dynamism", w);
    table(t, tensor_f::kExtraTensorInfo, "extra_tensor_info", [&](const fb::Table* e, const Where& ew) {
      u64(e, extra_f::kMutableDataSegmentsIdx, "mutable_data_segments_idx", ew);
      str(e, extra_f::kFullyQualifiedName, "fully_qualified_name", ew);
      i8(e, extra_f::kLocation, "location", ew);
    });
  }

  void instruction(const fb::Table* ins, const Where& w) {
    const auto type = scalar<std::uint8_t>(ins, instruction_f::kArgsType, "instr_args_type", w);
    if (type == kNoInstruction || type > kFreeCall) return;
    const fb::Table* a = r_.table(ins, instruction_f::kArgs, w, "instr_args");
    if (!a) return;
    static constexpr const char* kNames[] = {"", "kernel_call", "delegate_call", "move_call",
                                             "jump_false_call", "free_call"};
    Scope scope(*this, kNames[type]);
    switch (type) {
      case kKernelCall:
        i32(a, kCallFirst, "op_index", w);
        list<std::int32_t>(a, kCallSecond, "args", w);
        break;
      case kDelegateCall:
        i32(a, kCallFirst, "delegate_index", w);
        list<std::int32_t>(a, kCallSecond, "args", w);
        break;
      case kMoveCall:
        i32(a, kCallFirst, "move_from", w);
        i32(a, kCallSecond, "move_to", w);
        break;
      case kJumpFalseCall:
        i32(a, kCallFirst, "cond_value_index", w);
        i32(a, kCallSecond, "destination_instruction", w);
        break;
      default:
        i32(a, kCallFirst, "value_index", w);
        break;
    }
  }

  Reader& r_;
  std::string_view bytes_;
  const Layout& layout_;
  bool with_plan_;
  bool text_;
  Bytes budget_;
  std::string path_;
  std::string out_;
  std::uint64_t hash_ = 0x6d656d706c616eULL;
};

}  // namespace

std::string describePte(std::string_view bytes, const std::string& source_name, bool with_plan) {
  const Layout layout = readLayout(bytes, source_name);
  const AlignedBytes aligned(bytes);
  Reader reader(aligned.data(), static_cast<std::size_t>(layout.program_size), source_name);
  return Describer(reader, bytes, layout, with_plan, true).run();
}

namespace pte {
std::uint64_t fieldHash(std::string_view bytes, const std::string& source_name) {
  const Layout layout = readLayout(bytes, source_name);
  const AlignedBytes aligned(bytes);
  Reader reader(aligned.data(), static_cast<std::size_t>(layout.program_size), source_name);
  Describer d(reader, bytes, layout, false, false);
  d.run();
  return d.hash();
}
}  // namespace pte

}  // namespace memplan

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

class Describer {
 public:
  Describer(Reader& r, std::string_view bytes, const Layout& layout, bool with_plan)
      : r_(r), bytes_(bytes), layout_(layout), with_plan_(with_plan),
        budget_(kListingAllowance + kListingPerFileByte * bytes.size()) {}

  std::string run() {
    line("identifier", std::string(kIdentifier));
    line("extended_header", layout_.header ? "yes" : "no");
    if (layout_.header) {
      line("extended_header.length", std::to_string(layout_.header_length));
      if (with_plan_) {
        line("extended_header.program_size", std::to_string(layout_.program_size));
        line("extended_header.segment_base_offset", std::to_string(layout_.segment_base));
      }
      line("extended_header.segment_data_size", std::to_string(layout_.segment_data_size));
    }
    const fb::Table* p = r_.root();
    const Where w;
    line("version", std::to_string(r_.scalar<std::uint32_t>(p, program_f::kVersion, 0, w, "version")));
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
  struct Scope {
    Describer& d;
    std::size_t size;
    Scope(Describer& d_, const std::string& part) : d(d_), size(d_.path_.size()) {
      if (!d.path_.empty()) d.path_ += '.';
      d.path_ += part;
    }
    ~Scope() { d.path_.resize(size); }
  };

  // ---- fields ----
  template <typename T>
  T scalar(const fb::Table* t, FieldId f, const char* name, const Where& w, bool show = true) {
    const T v = r_.scalar<T>(t, f, T{}, w, name);
    if (show) line(name, std::to_string(v));
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
    std::string text = "[";
    for (fb::uoffset_t i = 0; i < v->size(); ++i) {
      if (i) text += ',';
      if constexpr (std::is_same_v<T, double>)
        text += fmt::format("{:#x}", std::bit_cast<std::uint64_t>(v->Get(i)));  // exact
      else
        text += std::to_string(+v->Get(i));
      if (text.size() > budget_) line(name, text);  // fails with the budget message
    }
    line(name, text + "]");
  }
  void blob(const fb::Table* t, FieldId f, const char* name, const Where& w) {
    const auto* v = r_.vector<std::uint8_t>(t, f, w, name);
    if (!v) return;
    line(name, fmt::format("{} bytes, fnv1a {:016x}", v->size(), hashBytes(v->Data(), v->size())));
  }
  void segmentData(std::uint64_t off, std::uint64_t size) {
    if (size == 0 || layout_.segment_base == 0) return;
    const auto end = checkedAdd(off, size);
    const auto abs = end ? checkedAdd(*end, layout_.segment_base) : std::nullopt;
    if (!abs || *abs > bytes_.size())
      throw InputError(fmt::format("{}: segment [{}, +{}) runs past the end of the file", r_.source(), off, size));
    const auto* p = reinterpret_cast<const std::uint8_t*>(bytes_.data() + layout_.segment_base + off);
    line("data", fmt::format("{} bytes, fnv1a {:016x}", size, hashBytes(p, size)));
  }

  template <typename F>
  void table(const fb::Table* t, FieldId f, const char* name, const F& each) {
    const Where w{name};
    if (const fb::Table* sub = r_.table(t, f, w, name)) {
      Scope s(*this, name);
      each(sub, w);
    }
  }
  template <typename F>
  void tables(const fb::Table* t, FieldId f, const char* name, const F& each) {
    const Where w{name};
    const auto* v = r_.vector<fb::uoffset_t>(t, f, w, name);
    if (!v) return;
    line(name, fmt::format("{} entries", v->size()));
    for (fb::uoffset_t i = 0; i < v->size(); ++i) {
      const Where iw{name, i};
      Scope s(*this, fmt::format("{}[{}]", name, i));
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
      line("non_const_buffer_sizes", fmt::format("{} entries", v->size()));
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
    Scope s(*this, kNames[type]);
    switch (type) {
      case kInt: scalar<std::int64_t>(t, field(0), "int_val", w); break;
      case kBool: u8(t, field(0), "bool_val", w); break;
      case kDouble: {
        const double d = r_.scalar<double>(t, field(0), 0.0, w, "double_val");
        line("double_val", fmt::format("{:#x}", std::bit_cast<std::uint64_t>(d)));
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
    Scope s(*this, kNames[type]);
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
  Bytes budget_;
  std::string path_;
  std::string out_;
};

}  // namespace

std::string describePte(std::string_view bytes, const std::string& source_name, bool with_plan) {
  const Layout layout = readLayout(bytes, source_name);
  const AlignedBytes aligned(bytes);
  Reader reader(aligned.data(), static_cast<std::size_t>(layout.program_size), source_name);
  return Describer(reader, bytes, layout, with_plan).run();
}

}  // namespace memplan

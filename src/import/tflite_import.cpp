// TFLite importer: a .tflite flatbuffer -> the graph IR.
//
// memplan reads TFLite with its own minimal reader instead of code generated
// from TensorFlow's schema: it declares the few field ids it needs (from the
// public schema.fbs, "TFL3") and reads them through flatbuffers::Table.
// The file is hostile until proven otherwise, so every table, vector, string
// and scalar is checked with flatbuffers::Verifier immediately before it is
// read: verification and reading are one pass over exactly the structure
// memplan uses, so nothing is read that was not verified.
//
// Step by step:
//  1. Size, alignment and identifier. Bytes 4..8 must be "TFL3"; a buffer
//     written without an identifier is accepted when its structure verifies,
//     but four printable characters other than "TFL3" are a wrong identifier.
//  2. Model: schema version 3, operator codes, buffers, subgraphs.
//  3. Buffers: the stored size of each one, inline (`data`) or, in models
//     larger than 2 GB, outside the flatbuffer (`offset` > 1, `size`).
//  4. Operator codes -> op names: the builtin code is
//     max(deprecated_builtin_code, builtin_code) (schema 3a); custom ops are
//     named by their custom_code.
//  5. Subgraphs, from subgraph 0 (main) outward: IF, WHILE and CALL_ONCE
//     name bodies in their options. Only subgraphs reachable from the main
//     graph are read (others, e.g. extra signatures, are ignored); a cycle
//     of references is rejected.
//  6. Graph ids: reachable subgraphs keep their file order. A body's parent
//     is the first node (breadth first from main) that references it; a body
//     referenced from several nodes is one graph.
//  7. Tensors: a tensor whose buffer holds data is a Constant sized by its
//     stored bytes (sparse and packed encodings differ from the dense size);
//     is_variable marks state (MutableBuffer); the rest are activations,
//     planned at `shape` (shape_signature's -1 dims are dynamic, `shape` holds
//     the concrete default). String, resource and variant tensors live on the
//     TFLite heap, never in the arena: dynamic_unbound.
//  8. Offline plan: TensorFlow Lite Micro's metadata entry
//     "OfflineMemoryAllocation" names a buffer of little-endian int32s
//     [version, subgraphs, n, offset_0 .. offset_n-1], one offset per tensor
//     of all subgraphs concatenated in file order (n must equal that total),
//     -1 for "planned at run time". Unless ignore_offline_plan, each offset
//     >= 0 pins its tensor (Tensor::offset, mem_id 1) -- for the tensors TFLM
//     places in its arena: not constants, not variables, not empty. The
//     last entry of that name wins, as in TFLM.
//  9. validateModel().
#include <flatbuffers/flatbuffers.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>

#include "import/flatbuffer_reader.h"
#include "memplan/import.h"
#include "memplan/limits.h"

namespace memplan {
namespace {

namespace fb = flatbuffers;
using flatbuf::FieldId;
using flatbuf::TableVector;
// Unions take two field ids: the type byte, then the value.
using flatbuf::field;

// Field ids from the public TFLite schema (schema.fbs).
namespace model_f {
constexpr FieldId kVersion = field(0), kOperatorCodes = field(1), kSubgraphs = field(2),
                  kBuffers = field(4);
}
namespace subgraph_f {
constexpr FieldId kTensors = field(0), kInputs = field(1), kOutputs = field(2),
                  kOperators = field(3), kName = field(4);
}
namespace tensor_f {
constexpr FieldId kShape = field(0), kType = field(1), kBuffer = field(2), kName = field(3),
                  kIsVariable = field(5);
}
namespace operator_f {
constexpr FieldId kOpcodeIndex = field(0), kInputs = field(1), kOutputs = field(2),
                  kBuiltinOptionsType = field(3), kBuiltinOptions = field(4),
                  kIntermediates = field(8);
}
namespace opcode_f {
constexpr FieldId kDeprecatedBuiltinCode = field(0), kCustomCode = field(1),
                  kBuiltinCode = field(3);
}
namespace buffer_f {
constexpr FieldId kData = field(0), kOffset = field(1), kSize = field(2);
}
namespace metadata_f {
constexpr FieldId kName = field(0), kBuffer = field(1);
}
constexpr FieldId kModelMetadata = field(6);
constexpr std::string_view kOfflinePlanName = "OfflineMemoryAllocation";
// IfOptions{then, else}, WhileOptions{cond, body}, CallOnceOptions{init}:
// all int32 subgraph indices, in field order.
constexpr FieldId kOptionSubgraph[2] = {field(0), field(1)};

constexpr std::uint32_t kSchemaVersion = 3;
constexpr std::int32_t kOpCustom = 32, kOpIf = 118, kOpWhile = 119, kOpCallOnce = 129;
// BuiltinOptions union type tags.
constexpr std::uint8_t kIfOptions = 92, kWhileOptions = 93, kCallOnceOptions = 103;

// Bounds: a file may claim any count; memplan refuses absurd ones before
// allocating (vectors are also bounded by the file size: >= 4 bytes each).
constexpr std::size_t kMaxSubgraphs = 1 << 16;
using limits::kMaxTensors;  // over all subgraphs
constexpr std::size_t kMaxOperators = 1 << 22;  // over all subgraphs
using limits::kMaxRank;
constexpr std::size_t kMaxNesting = 64;  // control-flow depth below main
// Offsets may share one table, vector or string among many owners, so what
// memplan builds can outgrow the file. Bytes materialized (tensors, nodes,
// names, shapes, indices) are charged against 256 MiB + 4 x the file size.
constexpr Bytes kMemoryAllowance = Bytes{256} << 20;
constexpr Bytes kMemoryPerFileByte = 4;

// BuiltinOperator enum names, index = code (schema.fbs order, 0..209).
// clang-format off
constexpr std::array<std::string_view, 210> kBuiltinNames{
    "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D",
    "DEPTH_TO_SPACE", "DEQUANTIZE", "EMBEDDING_LOOKUP", "FLOOR", "FULLY_CONNECTED",
    "HASHTABLE_LOOKUP", "L2_NORMALIZATION", "L2_POOL_2D", "LOCAL_RESPONSE_NORMALIZATION",
    "LOGISTIC", "LSH_PROJECTION", "LSTM", "MAX_POOL_2D", "MUL", "RELU", "RELU_N1_TO_1",
    "RELU6", "RESHAPE", "RESIZE_BILINEAR", "RNN", "SOFTMAX", "SPACE_TO_DEPTH", "SVDF",
    "TANH", "CONCAT_EMBEDDINGS", "SKIP_GRAM", "CALL", "CUSTOM", "EMBEDDING_LOOKUP_SPARSE",
    "PAD", "UNIDIRECTIONAL_SEQUENCE_RNN", "GATHER", "BATCH_TO_SPACE_ND",
    "SPACE_TO_BATCH_ND", "TRANSPOSE", "MEAN", "SUB", "DIV", "SQUEEZE",
    "UNIDIRECTIONAL_SEQUENCE_LSTM", "STRIDED_SLICE", "BIDIRECTIONAL_SEQUENCE_RNN", "EXP",
    "TOPK_V2", "SPLIT", "LOG_SOFTMAX", "DELEGATE", "BIDIRECTIONAL_SEQUENCE_LSTM", "CAST",
    "PRELU", "MAXIMUM", "ARG_MAX", "MINIMUM", "LESS", "NEG", "PADV2", "GREATER",
    "GREATER_EQUAL", "LESS_EQUAL", "SELECT", "SLICE", "SIN", "TRANSPOSE_CONV",
    "SPARSE_TO_DENSE", "TILE", "EXPAND_DIMS", "EQUAL", "NOT_EQUAL", "LOG", "SUM", "SQRT",
    "RSQRT", "SHAPE", "POW", "ARG_MIN", "FAKE_QUANT", "REDUCE_PROD", "REDUCE_MAX", "PACK",
    "LOGICAL_OR", "ONE_HOT", "LOGICAL_AND", "LOGICAL_NOT", "UNPACK", "REDUCE_MIN",
    "FLOOR_DIV", "REDUCE_ANY", "SQUARE", "ZEROS_LIKE", "FILL", "FLOOR_MOD", "RANGE",
    "RESIZE_NEAREST_NEIGHBOR", "LEAKY_RELU", "SQUARED_DIFFERENCE", "MIRROR_PAD", "ABS",
    "SPLIT_V", "UNIQUE", "CEIL", "REVERSE_V2", "ADD_N", "GATHER_ND", "COS", "WHERE", "RANK",
    "ELU", "REVERSE_SEQUENCE", "MATRIX_DIAG", "QUANTIZE", "MATRIX_SET_DIAG", "ROUND",
    "HARD_SWISH", "IF", "WHILE", "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5",
    "SCATTER_ND", "SELECT_V2", "DENSIFY", "SEGMENT_SUM", "BATCH_MATMUL",
    "PLACEHOLDER_FOR_GREATER_OP_CODES", "CUMSUM", "CALL_ONCE", "BROADCAST_TO", "RFFT2D",
    "CONV_3D", "IMAG", "REAL", "COMPLEX_ABS", "HASHTABLE", "HASHTABLE_FIND",
    "HASHTABLE_IMPORT", "HASHTABLE_SIZE", "REDUCE_ALL", "CONV_3D_TRANSPOSE", "VAR_HANDLE",
    "READ_VARIABLE", "ASSIGN_VARIABLE", "BROADCAST_ARGS", "RANDOM_STANDARD_NORMAL",
    "BUCKETIZE", "RANDOM_UNIFORM", "MULTINOMIAL", "GELU", "DYNAMIC_UPDATE_SLICE",
    "RELU_0_TO_1", "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_SUM",
    "ATAN2", "UNSORTED_SEGMENT_MIN", "SIGN", "BITCAST", "BITWISE_XOR", "RIGHT_SHIFT",
    "STABLEHLO_LOGISTIC", "STABLEHLO_ADD", "STABLEHLO_DIVIDE", "STABLEHLO_MULTIPLY",
    "STABLEHLO_MAXIMUM", "STABLEHLO_RESHAPE", "STABLEHLO_CLAMP", "STABLEHLO_CONCATENATE",
    "STABLEHLO_BROADCAST_IN_DIM", "STABLEHLO_CONVOLUTION", "STABLEHLO_SLICE",
    "STABLEHLO_CUSTOM_CALL", "STABLEHLO_REDUCE", "STABLEHLO_ABS", "STABLEHLO_AND",
    "STABLEHLO_COSINE", "STABLEHLO_EXPONENTIAL", "STABLEHLO_FLOOR", "STABLEHLO_LOG",
    "STABLEHLO_MINIMUM", "STABLEHLO_NEGATE", "STABLEHLO_OR", "STABLEHLO_POWER",
    "STABLEHLO_REMAINDER", "STABLEHLO_RSQRT", "STABLEHLO_SELECT", "STABLEHLO_SUBTRACT",
    "STABLEHLO_TANH", "STABLEHLO_SCATTER", "STABLEHLO_COMPARE", "STABLEHLO_CONVERT",
    "STABLEHLO_DYNAMIC_SLICE", "STABLEHLO_DYNAMIC_UPDATE_SLICE", "STABLEHLO_PAD",
    "STABLEHLO_IOTA", "STABLEHLO_DOT_GENERAL", "STABLEHLO_REDUCE_WINDOW", "STABLEHLO_SORT",
    "STABLEHLO_WHILE", "STABLEHLO_GATHER", "STABLEHLO_TRANSPOSE", "DILATE",
    "STABLEHLO_RNG_BIT_GENERATOR", "REDUCE_WINDOW", "STABLEHLO_COMPOSITE",
    "STABLEHLO_SHIFT_LEFT", "STABLEHLO_CBRT", "STABLEHLO_CASE",
};
// clang-format on

std::string builtinName(std::int32_t code) {
  if (code >= 0 && static_cast<std::size_t>(code) < kBuiltinNames.size())
    return std::string(kBuiltinNames[static_cast<std::size_t>(code)]);
  return fmt::format("BUILTIN_{}", code);
}

// TensorType -> DType; nullopt for codes memplan cannot size (INT2 = 19 has
// no DType) or does not know.
std::optional<DType> tensorType(std::int8_t code) {
  static constexpr std::array<DType, 23> kTypes{
      DType::Float32,   DType::Float16,    DType::Int32,     DType::UInt8,
      DType::Int64,     DType::String,     DType::Bool,      DType::Int16,
      DType::Complex64, DType::Int8,       DType::Float64,   DType::Complex128,
      DType::UInt64,    DType::Resource,   DType::Variant,   DType::UInt32,
      DType::UInt16,    DType::Int4,       DType::BFloat16,  DType::Unknown /* INT2 */,
      DType::UInt4,     DType::Float8E4M3, DType::Float8E5M2};
  if (code < 0 || static_cast<std::size_t>(code) >= kTypes.size()) return std::nullopt;
  const DType t = kTypes[static_cast<std::size_t>(code)];
  if (t == DType::Unknown) return std::nullopt;
  return t;
}

// Names the place being read, formatted only when something is wrong.
struct Where {
  const char* table = "model";
  std::int64_t index = -1;     // element index in its vector
  std::int64_t subgraph = -1;  // enclosing subgraph, if any
  std::string str() const {
    std::string s = subgraph >= 0 ? fmt::format("subgraph {} ", subgraph) : std::string();
    s += table;
    if (index >= 0) s += fmt::format(" {}", index);
    return s;
  }
};

// The model's flatbuffer, checked as it is read; `file_size` bounds what the
// importer may allocate.
class TfliteReader : public flatbuf::Reader<Where> {
 public:
  TfliteReader(const std::uint8_t* buf, std::size_t size, std::size_t file_size,
         const std::string& source)
      : flatbuf::Reader<Where>(buf, size, source, {"a TFLite flatbuffer", 1u << 26, false}),
        file_size_(file_size) {}
  std::size_t fileSize() const { return file_size_; }

 private:
  std::size_t file_size_;
};


struct RawOp {
  std::string op;
  NodeKind kind = NodeKind::Op;
  std::vector<std::int32_t> inputs, outputs;  // subgraph-local tensor indices
  std::vector<std::int32_t> bodies;           // subgraph indices
};

struct RawSubgraph {
  std::string name;
  std::vector<Tensor> tensors;  // graph id set later
  std::vector<std::int32_t> inputs, outputs;
  std::vector<RawOp> ops;
  std::vector<std::size_t> op_pos;  // byte position of each operator table
};

// TFLite Micro's offline plan (metadata "OfflineMemoryAllocation"), when
// the model carries one: the offsets it gives become the pins of the
// tensors TFLM places in its arena.
void readOfflinePlan(TfliteReader& reader, const fb::Table* model, const TableVector* buffers,
                     std::size_t all_tensors, const std::vector<std::size_t>& file_base,
                     const std::vector<bool>& loaded, std::vector<RawSubgraph>& raw) {
  const auto* metadata = reader.vector<fb::uoffset_t>(model, kModelMetadata, Where{}, "metadata");
  if (!metadata) return;
  const fb::Table* entry = nullptr;
  Where w;
  for (fb::uoffset_t i = 0; i < metadata->size(); ++i) {
    const Where here{"metadata", static_cast<std::int64_t>(i)};
    const fb::Table* t = reader.tableAt(metadata, i, here);
    const fb::String* name = reader.string(t, metadata_f::kName, here, "name");
    if (name && name->string_view() == kOfflinePlanName) {
      entry = t;
      w = here;
    }
  }
  if (!entry) return;
  const auto buffer = reader.scalar<std::uint32_t>(entry, metadata_f::kBuffer, 0, w, "buffer");
  if (!buffers || buffer >= buffers->size())
    reader.fail(entry, w,
            fmt::format("{}: buffer index {} out of range ({} buffers)", kOfflinePlanName, buffer,
                        buffers ? buffers->size() : 0));
  const Where bw{"buffer", static_cast<std::int64_t>(buffer)};
  const fb::Table* b = reader.tableAt(buffers, buffer, bw);
  const auto* data = reader.vector<std::uint8_t>(b, buffer_f::kData, bw, "data");
  const std::size_t size = data ? data->size() : 0;
  if (size < 12)
    reader.fail(entry, w,
            fmt::format("{}: buffer {} holds {} bytes, fewer than its 12-byte header (version, "
                        "subgraphs, count){}",
                        kOfflinePlanName, buffer, size,
                        size == 0 ? " (data stored outside the flatbuffer is not read by TFLite "
                                    "Micro either)"
                                  : ""));
  const auto word = [&](std::size_t k) {
    std::int32_t v;
    std::memcpy(&v, data->Data() + 4 * k, 4);
    return flatbuffers::EndianScalar(v);
  };
  const auto count = static_cast<std::uint32_t>(word(2));
  if (count != all_tensors)
    reader.fail(entry, w,
            fmt::format("{}: {} offsets for {} tensors (one per tensor of every subgraph, "
                        "concatenated in file order)",
                        kOfflinePlanName, count, all_tensors));
  if ((size - 12) / 4 < count)
    reader.fail(entry, w,
            fmt::format("{}: buffer {} holds {} bytes, {} offsets need {}", kOfflinePlanName,
                        buffer, size, count, 12 + 4 * std::size_t{count}));
  for (std::size_t s = 0; s < raw.size(); ++s) {
    if (!loaded[s]) continue;
    for (std::size_t i = 0; i < raw[s].tensors.size(); ++i) {
      const std::int32_t v = word(3 + file_base[s] + i);
      if (v == -1) continue;
      Tensor& x = raw[s].tensors[i];
      if (v < 0)
        reader.fail(entry, w,
                fmt::format("{}: subgraph {} tensor {} ('{}'): offset {} is neither -1 (planned "
                            "at run time) nor a byte offset",
                            kOfflinePlanName, s, i, x.name, v));
      // TFLM places only these tensors in its arena; it ignores the
      // offsets of the others.
      if (x.kind != TensorKind::Activation || x.dynamic_unbound || x.nbytes == 0) continue;
      x.mem_id = 1;  // TFLM's one arena
      x.offset = static_cast<Offset>(v);
    }
  }
}

class TfliteImporter {
 public:
  TfliteImporter(TfliteReader& r, const std::string& source, const ImportOptions& options)
      : r_(r), source_(source), options_(options) {}

  Model run() {
    const fb::Table* model = r_.root();
    const Where w;
    const auto version = r_.scalar<std::uint32_t>(model, model_f::kVersion, 0, w, "version");
    if (version != kSchemaVersion)
      r_.fail(
          model, w,
          fmt::format("schema version {} is not supported (expected {})", version, kSchemaVersion));
    readBuffers(model);
    readOpcodes(model);
    subgraphs_ = r_.vector<fb::uoffset_t>(model, model_f::kSubgraphs, w, "subgraphs");
    if (!subgraphs_ || subgraphs_->size() == 0) r_.fail(model, w, "no subgraphs");
    if (subgraphs_->size() > kMaxSubgraphs)
      r_.fail(
          model, w,
          fmt::format("{} subgraphs exceed the limit of {}", subgraphs_->size(), kMaxSubgraphs));
    loadReachable();
    countAllTensors();
    if (!options_.ignore_offline_plan)
      readOfflinePlan(r_, model, buffers_, total_all_, file_base_, loaded_, raw_);
    return assemble();
  }

  // TFLM's number for each tensor memplan imports (see tfliteTensorIndex).
  TfliteTensorIndex tensorIndex() {
    run();
    TfliteTensorIndex out;
    out.total = total_all_;
    for (std::size_t s = 0; s < raw_.size(); ++s)
      if (loaded_[s])
        for (std::size_t i = 0; i < raw_[s].tensors.size(); ++i)
          out.index.push_back(static_cast<std::int64_t>(file_base_[s] + i));
    return out;
  }

 private:
  // Charges `bytes` of materialized data against the budget.
  void charge(std::size_t bytes, const void* at, const Where& w) {
    if (bytes > budget_)
      r_.fail(at, w,
              fmt::format("the model expands beyond {} bytes in memory (offsets shared "
                          "many times?)",
                          kMemoryAllowance + kMemoryPerFileByte * r_.fileSize()));
    budget_ -= bytes;
  }

  void readBuffers(const fb::Table* model) {
    const auto* bufs = r_.vector<fb::uoffset_t>(model, model_f::kBuffers, Where{}, "buffers");
    if (!bufs) return;
    charge(sizeof(Bytes) * bufs->size(), bufs, Where{});
    buffers_ = bufs;
    buffer_bytes_.resize(bufs->size());
    for (fb::uoffset_t i = 0; i < bufs->size(); ++i) {
      const Where w{"buffer", i};
      const fb::Table* b = r_.tableAt(bufs, i, w);
      const auto* data = r_.vector<std::uint8_t>(b, buffer_f::kData, w, "data");
      const auto offset = r_.scalar<std::uint64_t>(b, buffer_f::kOffset, 0, w, "offset");
      const auto size = r_.scalar<std::uint64_t>(b, buffer_f::kSize, 0, w, "size");
      if (data && data->size() > 0) {
        buffer_bytes_[i] = data->size();
      } else if (offset > 1) {  // stored after the flatbuffer (offset 0/1: unset)
        const auto end = checkedAdd(offset, size);
        if (!end || *end > r_.fileSize())
          r_.fail(b, w,
                  fmt::format("data at offset {} size {} lies outside the file ({} bytes)", offset,
                              size, r_.fileSize()));
        buffer_bytes_[i] = size;
      }
    }
  }

  void readOpcodes(const fb::Table* model) {
    const auto* codes =
        r_.vector<fb::uoffset_t>(model, model_f::kOperatorCodes, Where{}, "operator_codes");
    if (!codes) return;
    charge((sizeof(std::int32_t) + sizeof(std::string)) * codes->size(), codes, Where{});
    opcodes_.resize(codes->size());
    op_names_.resize(codes->size());
    for (fb::uoffset_t i = 0; i < codes->size(); ++i) {
      const Where w{"operator code", i};
      const fb::Table* c = r_.tableAt(codes, i, w);
      const auto deprecated = r_.scalar<std::int8_t>(c, opcode_f::kDeprecatedBuiltinCode, 0, w,
                                                     "deprecated_builtin_code");
      const auto builtin = r_.scalar<std::int32_t>(c, opcode_f::kBuiltinCode, 0, w, "builtin_code");
      const std::int32_t code = std::max<std::int32_t>(deprecated, builtin);
      opcodes_[i] = code;
      if (code == kOpCustom) {
        const fb::String* custom = r_.string(c, opcode_f::kCustomCode, w, "custom_code");
        if (custom) charge(custom->size(), c, w);
        op_names_[i] = custom && custom->size() > 0 ? custom->str() : "CUSTOM";
      } else {
        op_names_[i] = builtinName(code);
      }
    }
  }

  // Reads subgraph 0 and every subgraph it reaches through control flow.
  void loadReachable() {
    const std::size_t n = subgraphs_->size();
    raw_.resize(n);
    loaded_.assign(n, false);
    std::vector<std::size_t> depth(n, 0);  // breadth-first: the shortest nesting
    std::deque<std::int32_t> queue{0};
    loaded_[0] = true;
    while (!queue.empty()) {
      const std::int32_t s = queue.front();
      queue.pop_front();
      readSubgraph(s);
      for (std::size_t i = 0; i < raw_[s].ops.size(); ++i)
        for (std::int32_t b : raw_[s].ops[i].bodies)
          if (!loaded_[b]) {
            loaded_[b] = true;
            depth[b] = depth[s] + 1;
            if (depth[b] > kMaxNesting)
              throw InputError(fmt::format(
                  "{}: byte {}: subgraph {} operator {}: control flow nested deeper than {}",
                  source_, raw_[s].op_pos[i], s, i, kMaxNesting));
            queue.push_back(b);
          }
    }
    rejectCycles();
  }

  // Tensor counts of every subgraph (unreachable ones too): TFLM numbers
  // tensors over all of them.
  void countAllTensors() {
    file_base_.assign(raw_.size(), 0);
    std::size_t total = 0;
    for (std::size_t s = 0; s < raw_.size(); ++s) {
      file_base_[s] = total;
      std::size_t count = raw_[s].tensors.size();
      if (!loaded_[s]) {
        const Where w{"subgraph", static_cast<std::int64_t>(s)};
        const fb::Table* sg = r_.tableAt(subgraphs_, static_cast<fb::uoffset_t>(s), w);
        const auto* tensors = r_.vector<fb::uoffset_t>(sg, subgraph_f::kTensors, w, "tensors");
        count = tensors ? tensors->size() : 0;
      }
      total += count;
    }
    total_all_ = total;
  }

  // Iterative depth-first search; a back edge is a subgraph that (directly
  // or not) runs itself, which no runtime can plan or execute.
  void rejectCycles() const {
    const std::size_t n = raw_.size();
    enum : std::uint8_t { kNew, kOpen, kDone };
    std::vector<std::uint8_t> state(n, kNew);
    struct Frame {
      std::int32_t s;
      std::size_t op, body;
    };
    std::vector<Frame> stack{{0, 0, 0}};
    state[0] = kOpen;
    while (!stack.empty()) {
      Frame& f = stack.back();
      const auto& ops = raw_[f.s].ops;
      if (f.op == ops.size()) {
        state[f.s] = kDone;
        stack.pop_back();
        continue;
      }
      if (f.body == ops[f.op].bodies.size()) {
        ++f.op;
        f.body = 0;
        continue;
      }
      const std::int32_t b = ops[f.op].bodies[f.body++];
      if (state[b] == kOpen)
        throw InputError(fmt::format(
            "{}: byte {}: subgraph {} operator {}: subgraph {} runs itself (control-flow cycle)",
            source_, raw_[f.s].op_pos[f.op], f.s, f.op, b));
      if (state[b] == kNew) {
        state[b] = kOpen;
        stack.push_back({b, 0, 0});
      }
    }
  }

  void readSubgraph(std::int32_t s) {
    RawSubgraph& out = raw_[s];
    const Where sw{"subgraph", s};
    const fb::Table* sg = r_.tableAt(subgraphs_, static_cast<fb::uoffset_t>(s), sw);
    if (const fb::String* name = r_.string(sg, subgraph_f::kName, sw, "name")) {
      charge(name->size(), sg, sw);
      out.name = name->str();
    }

    const auto* tensors = r_.vector<fb::uoffset_t>(sg, subgraph_f::kTensors, sw, "tensors");
    const std::size_t num_tensors = tensors ? tensors->size() : 0;
    total_tensors_ += num_tensors;
    if (total_tensors_ > kMaxTensors)
      r_.fail(sg, sw, fmt::format("more than {} tensors", kMaxTensors));
    out.tensors.reserve(num_tensors);
    for (std::size_t i = 0; i < num_tensors; ++i)
      out.tensors.push_back(readTensor(r_.tableAt(tensors, static_cast<fb::uoffset_t>(i),
                                                  Where{"tensor", static_cast<std::int64_t>(i), s}),
                                       s, static_cast<std::int64_t>(i)));

    const auto indices = [&](const fb::Table* t, FieldId f, const Where& w, const char* what,
                             bool optional_ok) {
      std::vector<std::int32_t> ids;
      const auto* v = r_.vector<std::int32_t>(t, f, w, what);
      if (!v) return ids;
      charge(sizeof(TensorId) * v->size(), t, w);
      ids.reserve(v->size());
      for (fb::uoffset_t k = 0; k < v->size(); ++k) {
        const std::int32_t id = v->Get(k);
        if (id == -1 && optional_ok) continue;  // optional input/output left out
        if (id < 0 || static_cast<std::size_t>(id) >= num_tensors)
          r_.fail(t, w,
                  fmt::format("{}[{}]: tensor index {} out of range ({} tensors)", what, k, id,
                              num_tensors));
        ids.push_back(id);
      }
      return ids;
    };
    out.inputs = indices(sg, subgraph_f::kInputs, sw, "inputs", false);
    out.outputs = indices(sg, subgraph_f::kOutputs, sw, "outputs", false);

    const auto* ops = r_.vector<fb::uoffset_t>(sg, subgraph_f::kOperators, sw, "operators");
    const std::size_t num_ops = ops ? ops->size() : 0;
    total_ops_ += num_ops;
    if (total_ops_ > kMaxOperators)
      r_.fail(sg, sw, fmt::format("more than {} operators", kMaxOperators));
    out.ops.reserve(num_ops);
    out.op_pos.reserve(num_ops);
    for (std::size_t i = 0; i < num_ops; ++i) {
      const Where w{"operator", static_cast<std::int64_t>(i), s};
      const fb::Table* t = r_.tableAt(ops, static_cast<fb::uoffset_t>(i), w);
      charge(sizeof(RawOp) + sizeof(Node), t, w);
      RawOp op;
      const auto index =
          r_.scalar<std::uint32_t>(t, operator_f::kOpcodeIndex, 0, w, "opcode_index");
      if (index >= opcodes_.size())
        r_.fail(t, w,
                fmt::format("opcode index {} out of range ({} operator codes)", index,
                            opcodes_.size()));
      charge(op_names_[index].size(), t, w);
      op.op = op_names_[index];
      op.inputs = indices(t, operator_f::kInputs, w, "inputs", true);
      op.outputs = indices(t, operator_f::kOutputs, w, "outputs", true);
      // Intermediates are scratch tensors of this op alone (quantized LSTM):
      // TFLite allocates them for the op's duration, like outputs.
      for (std::int32_t id : indices(t, operator_f::kIntermediates, w, "intermediates", true))
        op.outputs.push_back(id);
      // The node is later named after its first result: a copy of that name.
      if (!op.outputs.empty())
        charge(out.tensors[static_cast<std::size_t>(op.outputs[0])].name.size(), t, w);
      readControlFlow(t, w, opcodes_[index], op);
      out.op_pos.push_back(r_.pos(t));
      out.ops.push_back(std::move(op));
    }
  }

  void readControlFlow(const fb::Table* t, const Where& w, std::int32_t code, RawOp& op) {
    std::uint8_t want = 0;
    int count = 0;
    if (code == kOpIf) {
      want = kIfOptions;
      count = 2;
      op.kind = NodeKind::Cond;
    } else if (code == kOpWhile) {
      want = kWhileOptions;
      count = 2;
      op.kind = NodeKind::While;
    } else if (code == kOpCallOnce) {
      want = kCallOnceOptions;
      count = 1;
      op.kind = NodeKind::Call;
    } else
      return;
    const auto type =
        r_.scalar<std::uint8_t>(t, operator_f::kBuiltinOptionsType, 0, w, "builtin_options_type");
    const fb::Table* options =
        type == want ? r_.table(t, operator_f::kBuiltinOptions, w, "builtin_options") : nullptr;
    if (!options)
      r_.fail(
          t, w,
          fmt::format("{} operator without its options (builtin_options_type {})", op.op, type));
    for (int k = 0; k < count; ++k) {
      const auto body =
          r_.scalar<std::int32_t>(options, kOptionSubgraph[k], 0, w, "subgraph index");
      if (body < 0 || static_cast<std::size_t>(body) >= subgraphs_->size())
        r_.fail(options, w,
                fmt::format("{} subgraph index {} out of range ({} subgraphs)", op.op, body,
                            subgraphs_->size()));
      op.bodies.push_back(body);
    }
  }

  Tensor readTensor(const fb::Table* t, std::int32_t s, std::int64_t i) {
    const Where w{"tensor", i, s};
    Tensor x;
    charge(sizeof(Tensor), t, w);
    if (const fb::String* name = r_.string(t, tensor_f::kName, w, "name")) {
      charge(name->size(), t, w);
      x.name = name->str();
    }
    if (const auto* shape = r_.vector<std::int32_t>(t, tensor_f::kShape, w, "shape")) {
      if (shape->size() > kMaxRank)
        r_.fail(t, w, fmt::format("rank {} exceeds the limit of {}", shape->size(), kMaxRank));
      charge(sizeof(std::int64_t) * shape->size(), t, w);
      x.shape.assign(shape->begin(), shape->end());
    }
    const auto type_code = r_.scalar<std::int8_t>(t, tensor_f::kType, 0, w, "type");
    const auto type = tensorType(type_code);
    if (!type) r_.fail(t, w, fmt::format("tensor type {} is not supported", type_code));
    x.dtype = *type;
    const auto buffer = r_.scalar<std::uint32_t>(t, tensor_f::kBuffer, 0, w, "buffer");
    if (buffer != 0 && buffer >= buffer_bytes_.size())
      r_.fail(
          t, w,
          fmt::format("buffer index {} out of range ({} buffers)", buffer, buffer_bytes_.size()));
    const bool is_variable =
        r_.scalar<std::uint8_t>(t, tensor_f::kIsVariable, 0, w, "is_variable") != 0;

    const Bytes stored = buffer != 0 ? buffer_bytes_[buffer] : 0;
    if (is_variable) {
      x.kind = TensorKind::MutableBuffer;  // state, even when it has an initial value
    } else if (stored > 0) {
      x.kind = TensorKind::Constant;
      x.nbytes = stored;
      return x;
    }
    if (x.dtype == DType::String || x.dtype == DType::Resource || x.dtype == DType::Variant) {
      x.dynamic_unbound = true;  // TFLite keeps these on the heap (kTfLiteDynamic)
      return x;
    }
    const bool unknown_dim =
        std::any_of(x.shape.begin(), x.shape.end(), [](std::int64_t d) { return d < 0; });
    if (unknown_dim) {
      if (options_.unknown_size_bytes == 0)
        r_.fail(t, w,
                fmt::format("'{}' has an unknown dimension in shape [{}] (plan it at an "
                            "upper bound with --unknown-size-bytes N)",
                            x.name, fmt::join(x.shape, ",")));
      if (options_.unknown_size_bytes > kMaxBytes)
        r_.fail(t, w, "--unknown-size-bytes is too large");
      x.nbytes = options_.unknown_size_bytes;
      return x;
    }
    const auto bytes = denseBytes(x.shape, x.dtype);
    if (!bytes || *bytes > kMaxBytes)
      r_.fail(t, w, fmt::format("'{}' shape [{}] is too large", x.name, fmt::join(x.shape, ",")));
    x.nbytes = *bytes;
    return x;
  }

  // Numbers the reachable subgraphs (file order), links bodies to the first
  // node that runs them (breadth first) and builds the model.
  Model assemble() {
    const std::size_t n = raw_.size();
    std::vector<GraphId> gid(n, kNone);
    Model m;
    m.name = source_;
    for (std::size_t s = 0; s < n; ++s)
      if (loaded_[s]) {
        gid[s] = static_cast<GraphId>(m.graphs.size());
        Graph g;
        g.name = !raw_[s].name.empty()
                     ? raw_[s].name
                     : (s == 0 ? std::string("main") : fmt::format("subgraph{}", s));
        m.graphs.push_back(std::move(g));
      }

    std::vector<TensorId> base(n, 0);  // first TensorId of each subgraph
    m.tensors.reserve(total_tensors_);
    for (std::size_t s = 0; s < n; ++s) {
      if (!loaded_[s]) continue;
      base[s] = static_cast<TensorId>(m.tensors.size());
      for (Tensor& x : raw_[s].tensors) {
        x.graph = gid[s];
        m.tensors.push_back(std::move(x));
      }
    }

    std::vector<bool> parented(n, false);
    parented[0] = true;
    std::deque<std::size_t> queue{0};
    while (!queue.empty()) {
      const std::size_t s = queue.front();
      queue.pop_front();
      Graph& g = m.graphs[static_cast<std::size_t>(gid[s])];
      const auto map = [&](const std::vector<std::int32_t>& ids) {
        std::vector<TensorId> out;
        out.reserve(ids.size());
        for (std::int32_t id : ids) out.push_back(base[s] + id);
        return out;
      };
      g.inputs = map(raw_[s].inputs);
      g.outputs = map(raw_[s].outputs);
      g.nodes.reserve(raw_[s].ops.size());
      for (std::size_t i = 0; i < raw_[s].ops.size(); ++i) {
        RawOp& op = raw_[s].ops[i];
        Node node;
        node.op = std::move(op.op);
        node.kind = op.kind;
        node.inputs = map(op.inputs);
        node.outputs = map(op.outputs);
        // TFLite operators are nameless: name them after their first result.
        if (!node.outputs.empty())
          node.name = m.tensors[static_cast<std::size_t>(node.outputs[0])].name;
        if (node.name.empty()) node.name = fmt::format("{}_{}", node.op, i);
        for (std::int32_t b : op.bodies) {
          node.subgraphs.push_back(gid[static_cast<std::size_t>(b)]);
          if (!parented[static_cast<std::size_t>(b)]) {
            parented[static_cast<std::size_t>(b)] = true;
            Graph& body = m.graphs[static_cast<std::size_t>(gid[static_cast<std::size_t>(b)])];
            body.parent = gid[s];
            body.parent_node = static_cast<NodeId>(i);
            queue.push_back(static_cast<std::size_t>(b));
          }
        }
        g.nodes.push_back(std::move(node));
      }
    }
    validateModel(m);
    return m;
  }

  TfliteReader& r_;
  const std::string& source_;
  const ImportOptions& options_;
  std::vector<Bytes> buffer_bytes_;    // stored bytes of each buffer
  std::vector<std::int32_t> opcodes_;  // builtin code of each operator code
  std::vector<std::string> op_names_;
  const TableVector* subgraphs_ = nullptr;
  const TableVector* buffers_ = nullptr;
  std::vector<std::size_t> file_base_;  // first TFLM tensor number of each subgraph
  std::size_t total_all_ = 0;
  std::vector<RawSubgraph> raw_;
  std::vector<bool> loaded_;
  std::size_t total_tensors_ = 0, total_ops_ = 0;
  Bytes budget_ = kMemoryAllowance + kMemoryPerFileByte * r_.fileSize();
};

bool printableAscii(char c) { return c >= 0x20 && c < 0x7f; }

// Checks the header and runs `f` on an importer over a suitably aligned copy.
template <typename F>
auto withImporter(std::string_view bytes, const std::string& source_name,
                  const ImportOptions& options, F f) {
  if (bytes.size() < 8)
    throw InputError(
        fmt::format("{}: not a TFLite flatbuffer (file is {} bytes)", source_name, bytes.size()));
  const std::string_view ident = bytes.substr(4, 4);
  if (ident != "TFL3" && std::all_of(ident.begin(), ident.end(), printableAscii))
    throw InputError(
        fmt::format("{}: byte 4: file identifier '{}' is not 'TFL3'", source_name, ident));
  // Flatbuffer scalars are read in place: give them 8-byte alignment.
  std::vector<std::uint64_t> copy;
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  if (reinterpret_cast<std::uintptr_t>(data) % 8 != 0) {
    copy.resize((bytes.size() + 7) / 8);
    std::memcpy(copy.data(), bytes.data(), bytes.size());
    data = reinterpret_cast<const std::uint8_t*>(copy.data());
  }
  // The flatbuffer proper is below 2 GB; larger files keep buffers after it.
  const std::size_t fb_size = std::min<std::size_t>(bytes.size(), FLATBUFFERS_MAX_BUFFER_SIZE - 1);
  TfliteReader reader(data, fb_size, bytes.size(), source_name);
  TfliteImporter importer(reader, source_name, options);
  return f(importer);
}
}  // namespace

Model importTflite(std::string_view bytes, const std::string& source_name,
                   const ImportOptions& options) {
  return withImporter(bytes, source_name, options, [](TfliteImporter& i) { return i.run(); });
}

TfliteTensorIndex tfliteTensorIndex(std::string_view bytes, const std::string& source_name) {
  ImportOptions options;
  options.ignore_offline_plan = true;
  options.unknown_size_bytes = 1;  // sizes do not matter here
  return withImporter(bytes, source_name, options,
                      [](TfliteImporter& i) { return i.tensorIndex(); });
}

}  // namespace memplan

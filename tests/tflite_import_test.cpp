// TFLite importer: real models checked against an independent reader,
// hostile files, and hand-built control flow.
#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>

#include "memplan/algorithm.h"
#include "memplan/import.h"
#include "memplan/plan.h"
#include "memplan/verify.h"
#include "support/test_support.h"

namespace memplan {
namespace {

// ---------------------------------------------------------------------------
// An independent reader for well-formed files: plain little-endian reads of
// the flatbuffer layout (root offset, vtables), no flatbuffers library and no
// code shared with the importer. Field ids are the schema's declaration order.
class RawTflite {
 public:
  explicit RawTflite(std::string bytes) : b_(std::move(bytes)) {}

  std::uint32_t u32(std::size_t at) const { return read<std::uint32_t>(at); }
  std::size_t root() const { return u32(0); }
  // Absolute position of field `id` of the table at `t`, or 0 when absent.
  std::size_t field(std::size_t t, int id) const {
    const std::size_t vt = t - static_cast<std::size_t>(read<std::int32_t>(t));
    const auto vsize = read<std::uint16_t>(vt);
    const std::size_t slot = 4 + 2 * static_cast<std::size_t>(id);
    if (slot >= vsize) return 0;
    const auto off = read<std::uint16_t>(vt + slot);
    return off ? t + off : 0;
  }
  std::size_t deref(std::size_t at) const { return at + u32(at); }
  std::vector<std::size_t> tables(std::size_t t, int id) const {
    std::vector<std::size_t> out;
    if (const std::size_t f = field(t, id)) {
      const std::size_t v = deref(f);
      for (std::uint32_t i = 0; i < u32(v); ++i) out.push_back(deref(v + 4 + 4 * i));
    }
    return out;
  }
  std::vector<std::int32_t> ints(std::size_t t, int id) const {
    std::vector<std::int32_t> out;
    if (const std::size_t f = field(t, id)) {
      const std::size_t v = deref(f);
      for (std::uint32_t i = 0; i < u32(v); ++i) out.push_back(read<std::int32_t>(v + 4 + 4 * i));
    }
    return out;
  }
  std::string str(std::size_t t, int id) const {
    const std::size_t f = field(t, id);
    if (!f) return {};
    const std::size_t v = deref(f);
    return b_.substr(v + 4, u32(v));
  }
  std::uint32_t vectorLength(std::size_t t, int id) const {
    const std::size_t f = field(t, id);
    return f ? u32(deref(f)) : 0;
  }
  template <typename T>
  T scalar(std::size_t t, int id, T fallback) const {
    const std::size_t f = field(t, id);
    return f ? read<T>(f) : fallback;
  }

 private:
  template <typename T>
  T read(std::size_t at) const {
    T v;
    std::memcpy(&v, b_.data() + at, sizeof(T));
    return v;
  }
  std::string b_;
};

// Element bytes by TFLite TensorType code (FLOAT32 = 0, FLOAT16, INT32,
// UINT8, INT64, STRING, BOOL, INT16, COMPLEX64, INT8, FLOAT64).
Bytes elementBytes(std::int8_t type) {
  static const Bytes kSizes[] = {4, 2, 4, 1, 8, 0, 1, 2, 8, 1, 8};
  return type >= 0 && type < 11 ? kSizes[type] : 0;
}

struct ModelFacts {
  const char* path;
  // Counts read once from the files with a separate Python struct-based
  // parser (same flatbuffer walk, written independently of both readers).
  std::size_t tensors;
  std::size_t operators;
  Bytes constant_bytes;  // sum over tensors of their non-empty buffer sizes
};

constexpr ModelFacts kModels[] = {
    {"face_detection/face_detection_short_range.tflite", 250, 164, 203132},
    {"face_detection/face_detection_full_range.tflite", 544, 354, 1028418},
    {"face_detection/face_detection_full_range_sparse.tflite", 577, 388, 369064},
    {"selfie_segmentation/selfie_segmentation.tflite", 360, 246, 212826},
    {"selfie_segmentation/selfie_segmentation_landscape.tflite", 370, 246, 212906},
};

void PrintTo(const ModelFacts& facts, std::ostream* os) { *os << facts.path; }

std::string loadModel(const char* rel) {
  const auto path = test::modelsDir() / rel;
  if (!std::filesystem::exists(path)) return {};
  return test::readText(path);
}

Model import(const std::string& bytes, const std::string& name = "model.tflite") {
  return importTflite(bytes, name, ImportOptions{});
}

class RealModel : public ::testing::TestWithParam<ModelFacts> {};

TEST_P(RealModel, MatchesIndependentReader) {
  const ModelFacts& facts = GetParam();
  const std::string bytes = loadModel(facts.path);
  if (bytes.empty()) MEMPLAN_MISSING_DATA() << "model not fetched: " << facts.path;
  const Model m = import(bytes, facts.path);

  const RawTflite raw(bytes);
  const std::size_t root = raw.root();
  const auto buffers = raw.tables(root, 4);
  const auto subgraphs = raw.tables(root, 2);
  ASSERT_EQ(subgraphs.size(), 1u);
  const std::size_t sg = subgraphs[0];
  const auto tensors = raw.tables(sg, 0);

  ASSERT_EQ(m.graphs.size(), 1u);
  EXPECT_EQ(tensors.size(), facts.tensors);
  ASSERT_EQ(m.tensors.size(), facts.tensors);
  EXPECT_EQ(raw.vectorLength(sg, 3), facts.operators);
  EXPECT_EQ(m.main().nodes.size(), facts.operators);
  const auto inputs = raw.ints(sg, 1);
  const auto outputs = raw.ints(sg, 2);
  EXPECT_EQ(m.main().inputs, std::vector<TensorId>(inputs.begin(), inputs.end()));
  EXPECT_EQ(m.main().outputs, std::vector<TensorId>(outputs.begin(), outputs.end()));

  Bytes constant_bytes = 0, expected_constant_bytes = 0;
  std::size_t checked = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = m.tensors[i];
    const std::uint32_t buffer = raw.scalar<std::uint32_t>(tensors[i], 2, 0);
    const Bytes stored = buffer ? raw.vectorLength(buffers.at(buffer), 0) : 0;
    expected_constant_bytes += stored;
    if (t.kind == TensorKind::Constant) constant_bytes += t.nbytes;
    EXPECT_EQ(t.kind == TensorKind::Constant, stored > 0) << "tensor " << i;
    const auto shape = raw.ints(tensors[i], 0);
    EXPECT_EQ(t.shape, std::vector<std::int64_t>(shape.begin(), shape.end())) << "tensor " << i;
    if (stored == 0 && i % 5 == 0) {  // a sample of activations
      Bytes elements = 1;
      for (std::int32_t d : shape) elements *= static_cast<Bytes>(d);
      const Bytes size = elementBytes(raw.scalar<std::int8_t>(tensors[i], 1, 0));
      ASSERT_GT(size, 0u);
      EXPECT_EQ(t.nbytes, elements * size) << "tensor " << i << " " << t.name;
      ++checked;
    }
  }
  EXPECT_GT(checked, 20u);
  EXPECT_EQ(expected_constant_bytes, facts.constant_bytes);
  EXPECT_EQ(constant_bytes, facts.constant_bytes);
}

INSTANTIATE_TEST_SUITE_P(Examples, RealModel, ::testing::ValuesIn(kModels),
                         [](const auto& info) {
                           return std::filesystem::path(info.param.path).stem().string();
                         });

TEST(TfliteImport, ShortRangeDetails) {
  const std::string bytes = loadModel(kModels[0].path);
  if (bytes.empty()) MEMPLAN_MISSING_DATA() << "model not fetched: " << kModels[0].path;
  const Model m = import(bytes);
  // Tensor 0 'input' float32 [1,128,128,3] = 196608 bytes; tensor 1 is the
  // float16 kernel 'conv2d/Kernel' [24,5,5,3] = 1800 halves = 3600 bytes.
  EXPECT_EQ(m.tensors[0].name, "input");
  EXPECT_EQ(m.tensors[0].dtype, DType::Float32);
  EXPECT_EQ(m.tensors[0].nbytes, 196608u);
  EXPECT_EQ(m.tensors[0].kind, TensorKind::Activation);
  EXPECT_EQ(m.tensors[1].name, "conv2d/Kernel");
  EXPECT_EQ(m.tensors[1].dtype, DType::Float16);
  EXPECT_EQ(m.tensors[1].kind, TensorKind::Constant);
  EXPECT_EQ(m.tensors[1].nbytes, 3600u);
  std::size_t dequantize = 0, conv = 0;
  for (const Node& n : m.main().nodes) {
    EXPECT_EQ(n.kind, NodeKind::Op);
    dequantize += n.op == "DEQUANTIZE";
    conv += n.op == "CONV_2D";
  }
  EXPECT_EQ(dequantize, 74u);  // Python parser: 74 DEQUANTIZE, 21 CONV_2D
  EXPECT_EQ(conv, 21u);
}

TEST(TfliteImport, CustomOpIsNamedByCustomCode) {
  const std::string bytes = loadModel(kModels[3].path);
  if (bytes.empty()) MEMPLAN_MISSING_DATA() << "model not fetched: " << kModels[3].path;
  const Model m = import(bytes);
  std::size_t custom = 0, hard_swish = 0;
  for (const Node& n : m.main().nodes) {
    custom += n.op == "Convolution2DTransposeBias";
    hard_swish += n.op == "HARD_SWISH";
  }
  // The same counts from the independent reader: Model.operator_codes (1)
  // gives each operator's code: builtin = max(deprecated_builtin_code (0),
  // builtin_code (3)); CUSTOM (32) ops are named by custom_code (1).
  const RawTflite raw(bytes);
  const auto codes = raw.tables(raw.root(), 1);
  std::size_t raw_custom = 0, raw_hard_swish = 0;
  for (const std::size_t op : raw.tables(raw.tables(raw.root(), 2).at(0), 3)) {
    const std::size_t code = codes.at(raw.scalar<std::uint32_t>(op, 0, 0));
    const std::int32_t builtin = std::max<std::int32_t>(raw.scalar<std::int8_t>(code, 0, 0),
                                                        raw.scalar<std::int32_t>(code, 3, 0));
    raw_hard_swish += builtin == 117;  // BuiltinOperator HARD_SWISH
    raw_custom += builtin == 32 && raw.str(code, 1) == "Convolution2DTransposeBias";
  }
  EXPECT_EQ(custom, raw_custom);
  EXPECT_EQ(hard_swish, raw_hard_swish);
  EXPECT_EQ(raw_custom, 1u);       // the segmentation head's transposed convolution
  EXPECT_GT(raw_hard_swish, 0u);   // 11 in selfie_segmentation.tflite
}

// ---------------------------------------------------------------------------
// Hostile files: InputError or a valid model, never a crash.

// True when `bytes` imported as a valid model, false on an InputError.
bool expectInputErrorOrModel(const std::string& bytes, const std::string& what) {
  try {
    const Model m = import(bytes);
    EXPECT_NO_THROW(validateModel(m)) << what;
    return true;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << what << ": " << msg;
    EXPECT_EQ(msg.rfind("model.tflite: ", 0), 0u) << what << ": " << msg;
    return false;
  }
}

TEST(TfliteImport, EmptyTinyAndForeignFilesAreInputErrors) {
  EXPECT_THROW(import(""), InputError);
  EXPECT_THROW(import("TFL3"), InputError);
  EXPECT_THROW(import(std::string(64, '\0')), InputError);
  EXPECT_THROW(import(std::string("\x08\x00\x00\x00ONNXjunkjunkjunk", 20)), InputError);
}

TEST(TfliteImport, WrongIdentifierIsAnInputError) {
  std::string bytes = loadModel(kModels[0].path);
  if (bytes.empty()) MEMPLAN_MISSING_DATA() << "model not fetched";
  bytes[7] = '2';  // "TFL2"
  try {
    import(bytes);
    FAIL() << "accepted a wrong identifier";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("TFL2"), std::string::npos) << e.what();
  }
}

TEST(TfliteImport, TruncatedFilesNeverCrash) {
  const std::string bytes = loadModel(kModels[0].path);
  if (bytes.empty()) MEMPLAN_MISSING_DATA() << "model not fetched";
  std::size_t errors = 0;
  for (std::size_t len = 0; len < bytes.size(); len += (len < 4096 ? 7 : 397))
    errors += !expectInputErrorOrModel(bytes.substr(0, len), "length " + std::to_string(len));
  // The root table and buffers span the file: every truncation is detected.
  EXPECT_GT(errors, 1000u);
  for (std::size_t len = 0; len < bytes.size(); len += 397)
    EXPECT_THROW(import(bytes.substr(0, len)), InputError) << "length " << len;
}

TEST(TfliteImport, BitFlipsNeverCrash) {
  const std::string bytes = loadModel(kModels[0].path);
  if (bytes.empty()) MEMPLAN_MISSING_DATA() << "model not fetched";
  // In this file the weights come first and the tables last (tensor and
  // operator tables in the final 23 KiB): flip bits anywhere on odd rounds,
  // in the final 32 KiB or the first 512 bytes (root, vtables) otherwise.
  std::mt19937_64 rng(20240601);
  std::size_t errors = 0, models = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string mutated = bytes;
    const std::size_t flips = 1 + rng() % 4;
    for (std::size_t k = 0; k < flips; ++k) {
      std::size_t at = rng() % mutated.size();
      if (i % 2 == 0) at = i % 4 == 0 ? mutated.size() - 1 - at % 32768 : at % 512;
      mutated[at] = static_cast<char>(mutated[at] ^ (1u << (rng() % 8)));
    }
    if (expectInputErrorOrModel(mutated, "round " + std::to_string(i)))
      ++models;
    else
      ++errors;
  }
  RecordProperty("imported", static_cast<int>(models));
  RecordProperty("rejected", static_cast<int>(errors));
  EXPECT_GT(errors, 0u);
  EXPECT_GT(models, 0u);  // flips inside weights leave a valid model
}

// ---------------------------------------------------------------------------
// Hand-built flatbuffers: the schema's field ids, written with raw
// FlatBufferBuilder calls (no generated code).

namespace fb = flatbuffers;
constexpr fb::voffset_t F(int id) { return static_cast<fb::voffset_t>(4 + 2 * id); }

struct TensorDesc {
  std::vector<std::int32_t> shape;
  std::int8_t type = 0;  // FLOAT32
  std::uint32_t buffer = 0;
  std::string name;
  bool is_variable = false;
};
struct OpDesc {
  std::uint32_t opcode = 0;
  std::vector<std::int32_t> inputs, outputs;
  std::uint8_t options_type = 0;            // BuiltinOptions tag
  std::vector<std::int32_t> option_fields;  // int32 fields of the options table
};
struct SubgraphDesc {
  std::vector<TensorDesc> tensors;
  std::vector<std::int32_t> inputs, outputs;
  std::vector<OpDesc> ops;
  std::string name;
};
struct OpcodeDesc {
  std::int8_t deprecated = 0;
  std::int32_t builtin = 0;
  std::string custom;
};

std::string buildModel(const std::vector<OpcodeDesc>& opcodes,
                       const std::vector<SubgraphDesc>& subgraphs,
                       const std::vector<std::string>& buffers, std::uint32_t version = 3,
                       const std::vector<std::pair<std::uint64_t, std::uint64_t>>& external = {}) {
  fb::FlatBufferBuilder b;
  using Off = fb::Offset<fb::Table>;
  std::vector<Off> buffer_offsets;
  for (const std::string& data : buffers) {
    const auto vec =
        data.empty()
            ? fb::Offset<fb::Vector<std::uint8_t>>()
            : b.CreateVector(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
    const auto start = b.StartTable();
    if (!data.empty()) b.AddOffset(F(0), vec);
    buffer_offsets.push_back(Off(b.EndTable(start)));
  }
  for (const auto& [offset, size] : external) {  // large-model buffers: offset, size
    const auto start = b.StartTable();
    b.AddElement<std::uint64_t>(F(1), offset, 0);
    b.AddElement<std::uint64_t>(F(2), size, 0);
    buffer_offsets.push_back(Off(b.EndTable(start)));
  }
  std::vector<Off> opcode_offsets;
  for (const OpcodeDesc& c : opcodes) {
    const auto custom = c.custom.empty() ? fb::Offset<fb::String>() : b.CreateString(c.custom);
    const auto start = b.StartTable();
    b.AddElement<std::int8_t>(F(0), c.deprecated, 0);
    if (!c.custom.empty()) b.AddOffset(F(1), custom);
    b.AddElement<std::int32_t>(F(2), 1, 0);  // version
    b.AddElement<std::int32_t>(F(3), c.builtin, 0);
    opcode_offsets.push_back(Off(b.EndTable(start)));
  }
  std::vector<Off> subgraph_offsets;
  for (const SubgraphDesc& sg : subgraphs) {
    std::vector<Off> tensors;
    for (const TensorDesc& t : sg.tensors) {
      const auto shape = b.CreateVector(t.shape);
      const auto name = b.CreateString(t.name);
      const auto start = b.StartTable();
      b.AddOffset(F(0), shape);
      b.AddElement<std::int8_t>(F(1), t.type, 0);
      b.AddElement<std::uint32_t>(F(2), t.buffer, 0);
      b.AddOffset(F(3), name);
      b.AddElement<std::uint8_t>(F(5), t.is_variable ? 1 : 0, 0);
      tensors.push_back(Off(b.EndTable(start)));
    }
    std::vector<Off> ops;
    for (const OpDesc& op : sg.ops) {
      Off options;
      if (op.options_type) {
        const auto start = b.StartTable();
        for (std::size_t k = 0; k < op.option_fields.size(); ++k)
          b.AddElement<std::int32_t>(F(static_cast<int>(k)), op.option_fields[k], -1);
        options = Off(b.EndTable(start));
      }
      const auto inputs = b.CreateVector(op.inputs);
      const auto outputs = b.CreateVector(op.outputs);
      const auto start = b.StartTable();
      b.AddElement<std::uint32_t>(F(0), op.opcode, 0);
      b.AddOffset(F(1), inputs);
      b.AddOffset(F(2), outputs);
      b.AddElement<std::uint8_t>(F(3), op.options_type, 0);
      if (op.options_type) b.AddOffset(F(4), options);
      ops.push_back(Off(b.EndTable(start)));
    }
    const auto tv = b.CreateVector(tensors);
    const auto iv = b.CreateVector(sg.inputs);
    const auto ov = b.CreateVector(sg.outputs);
    const auto opv = b.CreateVector(ops);
    const auto name = b.CreateString(sg.name);
    const auto start = b.StartTable();
    b.AddOffset(F(0), tv);
    b.AddOffset(F(1), iv);
    b.AddOffset(F(2), ov);
    b.AddOffset(F(3), opv);
    b.AddOffset(F(4), name);
    subgraph_offsets.push_back(Off(b.EndTable(start)));
  }
  const auto codes = b.CreateVector(opcode_offsets);
  const auto sgs = b.CreateVector(subgraph_offsets);
  const auto bufs = b.CreateVector(buffer_offsets);
  const auto start = b.StartTable();
  b.AddElement<std::uint32_t>(F(0), version, 0);
  b.AddOffset(F(1), codes);
  b.AddOffset(F(2), sgs);
  b.AddOffset(F(4), bufs);
  b.Finish(Off(b.EndTable(start)), "TFL3");
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

// Opcodes: 0 ADD, 1 IF, 2 WHILE (deprecated code 119 fits a byte),
// 3 CALL_ONCE (deprecated field holds the placeholder 127, builtin 129),
// 4 custom "MyOp".
const std::vector<OpcodeDesc> kOpcodes = {
    {0, 0, ""}, {118, 118, ""}, {119, 0, ""}, {127, 129, ""}, {32, 32, "MyOp"}};
constexpr std::uint8_t kIfOptions = 92, kWhileOptions = 93, kCallOnceOptions = 103;

SubgraphDesc unary(const std::string& name) {
  // x -> ADD(x, x) -> y
  SubgraphDesc sg;
  sg.tensors = {{{4}, 0, 0, name + "_x", false}, {{4}, 0, 0, name + "_y", false}};
  sg.inputs = {0};
  sg.outputs = {1};
  sg.ops = {{0, {0, 0}, {1}, 0, {}}};
  sg.name = name;
  return sg;
}

TEST(TfliteImport, ControlFlowSubgraphs) {
  SubgraphDesc main;
  main.name = "main";
  main.tensors = {
      {{}, 6, 0, "cond"},  // bool scalar
      {{4}, 0, 0, "x"},
      {{4}, 0, 0, "y"},
      {{4}, 0, 0, "z"},
      {{4}, 0, 1, "w"},               // constant: buffer 1 (16 bytes)
      {{2, 4}, 9, 0, "state", true},  // int8 variable: 8 bytes
      {{4}, 0, 0, "u"},
  };
  main.inputs = {0, 1};
  main.outputs = {6};
  main.ops = {
      {1, {0, 1}, {2}, kIfOptions, {1, 2}},  // IF then=1 else=2
      {2, {2}, {3}, kWhileOptions, {3, 2}},  // WHILE cond=3 body=2 (shared)
      {3, {}, {}, kCallOnceOptions, {4}},    // CALL_ONCE init=4
      {4, {3, -1, 4, 5}, {6}, 0, {}},        // custom op, optional input
  };
  const std::string bytes = buildModel(
      kOpcodes, {main, unary("then"), unary("else"), unary("cond"), unary("init"), unary("unused")},
      {"", std::string(16, 'w')});
  const Model m = import(bytes);

  ASSERT_EQ(m.graphs.size(), 5u);  // subgraph 5 is never referenced
  EXPECT_EQ(m.tensors.size(), 7u + 4 * 2);
  const Graph& g = m.main();
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(g.nodes[0].kind, NodeKind::Cond);
  EXPECT_EQ(g.nodes[0].op, "IF");
  EXPECT_EQ(g.nodes[0].subgraphs, (std::vector<GraphId>{1, 2}));
  EXPECT_EQ(g.nodes[1].kind, NodeKind::While);
  EXPECT_EQ(g.nodes[1].op, "WHILE");
  EXPECT_EQ(g.nodes[1].subgraphs, (std::vector<GraphId>{3, 2}));
  EXPECT_EQ(g.nodes[2].kind, NodeKind::Call);
  EXPECT_EQ(g.nodes[2].op, "CALL_ONCE");
  EXPECT_EQ(g.nodes[2].subgraphs, (std::vector<GraphId>{4}));
  EXPECT_EQ(g.nodes[3].kind, NodeKind::Op);
  EXPECT_EQ(g.nodes[3].op, "MyOp");
  EXPECT_EQ(g.nodes[3].inputs, (std::vector<TensorId>{3, 4, 5}));  // -1 skipped
  EXPECT_EQ(g.inputs, (std::vector<TensorId>{0, 1}));
  EXPECT_EQ(g.outputs, (std::vector<TensorId>{6}));

  // Bodies: parent is the first node that runs them.
  EXPECT_EQ(m.graphs[1].parent, 0);
  EXPECT_EQ(m.graphs[1].parent_node, 0);
  EXPECT_EQ(m.graphs[2].parent_node, 0);  // else (IF) before body (WHILE)
  EXPECT_EQ(m.graphs[3].parent_node, 1);
  EXPECT_EQ(m.graphs[4].parent_node, 2);
  EXPECT_EQ(m.graphs[2].name, "else");
  // Each body owns its own tensors, numbered after the main graph's.
  EXPECT_EQ(m.graphs[2].inputs, (std::vector<TensorId>{9}));
  EXPECT_EQ(m.tensors[9].name, "else_x");
  EXPECT_EQ(m.tensors[9].graph, 2);
  EXPECT_EQ(m.graphs[2].nodes.at(0).inputs, (std::vector<TensorId>{9, 9}));

  EXPECT_EQ(m.tensors[0].dtype, DType::Bool);
  EXPECT_EQ(m.tensors[0].nbytes, 1u);
  EXPECT_EQ(m.tensors[4].kind, TensorKind::Constant);
  EXPECT_EQ(m.tensors[4].nbytes, 16u);
  EXPECT_EQ(m.tensors[5].kind, TensorKind::MutableBuffer);
  EXPECT_EQ(m.tensors[5].dtype, DType::Int8);
  EXPECT_EQ(m.tensors[5].nbytes, 8u);
  EXPECT_EQ(m.tensors[6].kind, TensorKind::Activation);
  EXPECT_EQ(m.tensors[6].nbytes, 16u);
}

TEST(TfliteImport, BitFlipsInControlFlowModelNeverCrash) {
  // A small model is all structure: every flip lands in a table or vtable.
  SubgraphDesc main = unary("main");
  main.tensors.push_back({{}, 6, 0, "c", false});
  main.ops.push_back({1, {2, 1}, {1}, kIfOptions, {1, 2}});
  main.ops.push_back({2, {1}, {1}, kWhileOptions, {2, 1}});
  const std::string bytes =
      buildModel(kOpcodes, {main, unary("a"), unary("b"), unary("unused")}, {"", "abcd"});
  std::mt19937_64 rng(7);
  std::size_t errors = 0, models = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string mutated = bytes;
    for (std::size_t k = 0, n = 1 + rng() % 3; k < n; ++k) {
      const std::size_t at = rng() % mutated.size();
      mutated[at] = static_cast<char>(mutated[at] ^ (1u << (rng() % 8)));
    }
    if (expectInputErrorOrModel(mutated, "round " + std::to_string(i)))
      ++models;
    else
      ++errors;
  }
  RecordProperty("imported", static_cast<int>(models));
  RecordProperty("rejected", static_cast<int>(errors));
  EXPECT_GT(errors, 1000u);
  EXPECT_GT(models, 100u);  // flips in names and unused fields are harmless
}

TEST(TfliteImport, SubgraphCycleIsRejected) {
  SubgraphDesc main = unary("main");
  main.tensors.push_back({{}, 6, 0, "c"});
  main.ops.push_back({1, {2, 1}, {1}, kIfOptions, {1, 1}});
  SubgraphDesc body = unary("body");
  body.tensors.push_back({{}, 6, 0, "c"});
  body.ops.push_back({1, {2, 1}, {1}, kIfOptions, {1, 0}});  // body runs itself
  try {
    import(buildModel(kOpcodes, {main, body}, {""}));
    FAIL() << "accepted a cycle";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
  // Referencing the main graph from a body is a cycle too.
  body.ops.back().option_fields = {0, 0};
  EXPECT_THROW(import(buildModel(kOpcodes, {main, body}, {""})), InputError);
}

TEST(TfliteImport, NestingDepthIsBounded) {
  // main -> 1 -> 2 -> ... each through CALL_ONCE: 64 levels below main are
  // accepted, 65 are not.
  const auto chain = [](int levels) {
    std::vector<SubgraphDesc> sgs;
    for (int k = 0; k <= levels; ++k) {
      SubgraphDesc sg = unary("level" + std::to_string(k));
      if (k < levels) sg.ops.push_back({3, {}, {}, kCallOnceOptions, {k + 1}});
      sgs.push_back(sg);
    }
    return buildModel(kOpcodes, sgs, {""});
  };
  const Model m = import(chain(64));
  ASSERT_EQ(m.graphs.size(), 65u);
  EXPECT_EQ(m.graphs[64].parent, 63);
  EXPECT_EQ(m.graphs[64].parent_node, 1);  // after the ADD
  try {
    import(chain(65));
    FAIL() << "accepted 65 levels";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than 64"), std::string::npos) << e.what();
  }
}

TEST(TfliteImport, BuffersOutsideTheFlatbufferAreConstants) {
  // Models above 2 GB keep weights after the flatbuffer: Buffer{offset, size}
  // with offset > 1. Here buffer 1 points at 32 bytes inside the file.
  SubgraphDesc main = unary("main");
  main.tensors.push_back({{8}, 0, 1, "weight", false});
  main.ops[0].inputs = {0, 2};
  const std::string ok = buildModel(kOpcodes, {main}, {""}, 3, {{8, 32}});
  const Model m = import(ok);
  EXPECT_EQ(m.tensors[2].kind, TensorKind::Constant);
  EXPECT_EQ(m.tensors[2].nbytes, 32u);
  // Offsets 0 and 1 mean "unset": an activation.
  EXPECT_EQ(import(buildModel(kOpcodes, {main}, {""}, 3, {{1, 32}})).tensors[2].kind,
            TensorKind::Activation);
  try {
    import(buildModel(kOpcodes, {main}, {""}, 3, {{ 1ull << 40, 32 }}));
    FAIL() << "accepted a buffer outside the file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("buffer 1: data at offset 1099511627776 size 32 lies "
                                         "outside the file"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(import(buildModel(kOpcodes, {main}, {""}, 3, {{8, ~0ull - 4}})), InputError);
}

TEST(TfliteImport, BadIndicesAreOneLineErrors) {
  const auto expectError = [](const std::string& bytes, const std::string& needle) {
    try {
      import(bytes);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(needle), std::string::npos) << msg;
      EXPECT_EQ(msg.rfind("model.tflite: byte ", 0), 0u) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  };
  SubgraphDesc main = unary("main");
  main.ops.push_back({1, {0, 1}, {1}, kIfOptions, {7, 0}});
  expectError(buildModel(kOpcodes, {main}, {""}), "subgraph index 7 out of range (1 subgraphs)");

  main = unary("main");
  main.ops.push_back({1, {0, 1}, {1}, 0, {}});  // IF without IfOptions
  expectError(buildModel(kOpcodes, {main}, {""}), "IF operator without its options");

  main = unary("main");
  main.tensors[0].buffer = 99;
  expectError(buildModel(kOpcodes, {main}, {"", ""}),
              "subgraph 0 tensor 0: buffer index 99 out of range (2 buffers)");

  main = unary("main");
  main.ops[0].inputs = {0, 5};
  expectError(buildModel(kOpcodes, {main}, {""}),
              "subgraph 0 operator 0: inputs[1]: tensor index 5 out of range (2 tensors)");

  main = unary("main");
  main.ops[0].opcode = 42;
  expectError(buildModel(kOpcodes, {main}, {""}), "opcode index 42 out of range");

  main = unary("main");
  main.tensors[1].shape = {-1, 4};
  expectError(buildModel(kOpcodes, {main}, {""}), "unknown dimension");
  ImportOptions options;
  options.unknown_size_bytes = 4096;
  EXPECT_EQ(importTflite(buildModel(kOpcodes, {main}, {""}), "m", options).tensors[1].nbytes,
            4096u);

  main = unary("main");
  main.tensors[1].type = 19;  // INT2: no dtype
  expectError(buildModel(kOpcodes, {main}, {""}), "tensor type 19 is not supported");

  expectError(buildModel(kOpcodes, {unary("main")}, {""}, 2), "schema version 2");
}

TEST(TfliteImport, SharedOffsetsCannotExpandWithoutBound) {
  // 200000 tensors all naming one 1 MiB string: a 3 MB file that would
  // expand to 200 GB of names. The importer refuses before allocating it.
  fb::FlatBufferBuilder b;
  using Off = fb::Offset<fb::Table>;
  const auto name = b.CreateString(std::string(1 << 20, 'n'));
  const auto shape = b.CreateVector(std::vector<std::int32_t>{1});
  auto start = b.StartTable();
  b.AddOffset(F(0), shape);
  b.AddOffset(F(3), name);
  const Off tensor(b.EndTable(start));
  const auto tensors = b.CreateVector(std::vector<Off>(200000, tensor));
  start = b.StartTable();
  b.AddOffset(F(0), tensors);
  const auto subgraphs = b.CreateVector(std::vector<Off>{Off(b.EndTable(start))});
  start = b.StartTable();
  b.AddElement<std::uint32_t>(F(0), 3, 0);
  b.AddOffset(F(2), subgraphs);
  b.Finish(Off(b.EndTable(start)), "TFL3");
  const std::string bytes(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
  ASSERT_LT(bytes.size(), 4u << 20);
  try {
    import(bytes);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expands beyond"), std::string::npos) << e.what();
  }
}

TEST(TfliteImport, BuilderModelWithoutIdentifierImports) {
  std::string bytes = buildModel(kOpcodes, {unary("main")}, {""});
  // Same model, identifier bytes replaced by non-text bytes: accepted when
  // the structure verifies.
  bytes[4] = '\0';
  bytes[5] = '\x01';
  bytes[6] = '\0';
  bytes[7] = '\0';
  const Model m = import(bytes);
  EXPECT_EQ(m.tensors.size(), 2u);
}

// ---------------------------------------------------------------------------
// The imported models plan and verify.

TEST(TfliteImport, ExampleModelsPlanAndVerify) {
  std::string missing;  // the others still run; then skip, or fail when data is required
  for (const ModelFacts& facts : kModels) {
    const std::string bytes = loadModel(facts.path);
    if (bytes.empty()) {
      missing += std::string(missing.empty() ? "" : ", ") + facts.path;
      continue;
    }
    const Model m = import(bytes, facts.path);
    for (const char* algorithm : {"greedy", "auto"}) {
      ASSERT_TRUE(makeAlgorithm(algorithm)) << algorithm;
      PlanRequest request;
      request.algorithm = algorithm;
      const Plan plan = planModel(m, request);
      const VerifyResult result = verifyPlan(plan);
      EXPECT_TRUE(result.ok()) << facts.path << " " << algorithm << ": "
                               << (result.ok() ? "" : result.violations[0].message);
      EXPECT_GT(result.checked_allocations, 100u);
      // No arena can be smaller than the peak of live bytes, nor than the
      // largest activation; none needs more than all activations side by side.
      ASSERT_GE(plan.main().bufsizes.size(), 2u);
      ASSERT_FALSE(plan.main().pools.empty());
      const Bytes arena = plan.main().bufsizes[1];
      EXPECT_GE(arena, plan.main().pools[0].lower_bound);
      Bytes largest = 0, side_by_side = 0;
      for (const Tensor& t : m.tensors) {
        if (t.kind != TensorKind::Activation) continue;
        largest = std::max(largest, t.nbytes);
        side_by_side += (t.nbytes + 15) / 16 * 16;
      }
      EXPECT_GE(arena, largest) << facts.path;
      EXPECT_LE(arena, side_by_side) << facts.path;
      EXPECT_LT(arena, side_by_side / 4) << facts.path;  // these CNNs reuse >75%
    }
  }
  if (!missing.empty()) MEMPLAN_MISSING_DATA() << "models not fetched: " << missing;
}

TEST(TfliteImport, ControlFlowModelPlansAndVerifies) {
  ASSERT_TRUE(makeAlgorithm("greedy"));
  SubgraphDesc main = unary("main");
  main.tensors.push_back({{}, 6, 0, "c"});
  main.tensors.push_back({{64}, 0, 0, "out"});
  main.outputs = {3};
  main.ops.push_back({1, {2, 1}, {3}, kIfOptions, {1, 2}});
  SubgraphDesc then_body = unary("then");
  then_body.tensors[1].shape = {64};
  const Model m = import(buildModel(kOpcodes, {main, then_body, unary("else")}, {""}));
  PlanRequest request;
  request.algorithm = "greedy";
  const Plan plan = planModel(m, request);
  EXPECT_TRUE(verifyPlan(plan).ok());
  ASSERT_EQ(plan.graphs.size(), 3u);
}

// ---------------------------------------------------------------------------
// The command line: `memplan plan model.tflite`.

TEST(TfliteCli, PlansModelsAndRejectsBrokenFiles) {
  const auto dir = test::tempDir("tflite-cli");
  SubgraphDesc main = unary("main");
  main.tensors.push_back({{}, 6, 0, "c", false});
  main.ops.push_back({1, {2, 1}, {1}, kIfOptions, {1, 2}});
  const std::string control_flow = buildModel(kOpcodes, {main, unary("a"), unary("b")}, {""});
  {
    std::ofstream(dir / "cf.tflite", std::ios::binary) << control_flow;
    std::ofstream(dir / "broken.tflite", std::ios::binary) << control_flow.substr(0, 60);
  }
  const test::CliResult ok = test::runCli("plan " + (dir / "cf.tflite").string());
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  const test::CliResult bad = test::runCli("plan " + (dir / "broken.tflite").string());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("broken.tflite: "), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;

  const auto model = test::modelsDir() / kModels[0].path;
  if (!std::filesystem::exists(model)) MEMPLAN_MISSING_DATA() << "model not fetched";
  const test::CliResult real = test::runCli("plan " + model.string());
  EXPECT_EQ(real.exit_code, 0) << real.err;
  EXPECT_NE(real.out.find("face_detection_short_range.tflite"), std::string::npos) << real.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace memplan

// Graph JSON reader/writer, file I/O and input detection.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <random>

#include "memplan/formats.h"
#include "memplan/io.h"
#include "support/test_support.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;

// First difference between two models, "" when identical.
std::string modelDiff(const Model& a, const Model& b) {
  if (a.name != b.name) return "name";
  if (a.tensors.size() != b.tensors.size()) return "tensor count";
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const Tensor& x = a.tensors[i];
    const Tensor& y = b.tensors[i];
    const std::string at = "tensor " + std::to_string(i) + ": ";
    if (x.name != y.name) return at + "name";
    if (x.shape != y.shape) return at + "shape";
    if (x.dtype != y.dtype) return at + "dtype";
    if (x.nbytes != y.nbytes) return at + "nbytes";
    if (!(x.device == y.device)) return at + "device";
    if (x.alignment != y.alignment) return at + "alignment";
    if (x.mem_id != y.mem_id) return at + "mem_id";
    if (x.offset != y.offset) return at + "offset";
    if (x.kind != y.kind) return at + "kind";
    if (x.alias != y.alias || x.alias_of != y.alias_of) return at + "alias";
    if (x.dynamic_unbound != y.dynamic_unbound) return at + "dynamic_unbound";
    if (x.graph != y.graph) return at + "graph";
    if (x.fqn != y.fqn) return at + "fqn";
  }
  if (a.methods != b.methods) return "methods";
  if (a.graphs.size() != b.graphs.size()) return "graph count";
  for (std::size_t g = 0; g < a.graphs.size(); ++g) {
    const Graph& x = a.graphs[g];
    const Graph& y = b.graphs[g];
    const std::string at = "graph " + std::to_string(g) + ": ";
    if (x.name != y.name) return at + "name";
    if (x.inputs != y.inputs) return at + "inputs";
    if (x.outputs != y.outputs) return at + "outputs";
    if (x.parent != y.parent || x.parent_node != y.parent_node) return at + "parent";
    if (x.nodes.size() != y.nodes.size()) return at + "node count";
    for (std::size_t n = 0; n < x.nodes.size(); ++n) {
      const Node& p = x.nodes[n];
      const Node& q = y.nodes[n];
      const std::string nat = at + "node " + std::to_string(n) + ": ";
      if (p.name != q.name) return nat + "name";
      if (p.op != q.op) return nat + "op";
      if (p.kind != q.kind) return nat + "kind";
      if (p.inputs != q.inputs) return nat + "inputs";
      if (p.outputs != q.outputs) return nat + "outputs";
      if (p.subgraphs != q.subgraphs) return nat + "subgraphs";
    }
  }
  return "";
}

// A random valid model: nested control flow, aliases, pinned offsets,
// devices, shared and empty names (which force references by index).
Model randomModel(std::uint32_t seed) {
  std::mt19937 rng(seed);
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  Model m;
  m.name = "random-" + std::to_string(seed);
  const int num_graphs = 1 + pick(4);
  m.graphs.resize(num_graphs);
  for (int g = 0; g < num_graphs; ++g) {
    m.graphs[g].name = pick(5) == 0 ? "" : (pick(6) == 0 ? "dup" : "g" + std::to_string(g));
    if (g > 0) m.graphs[g].parent = pick(g);
  }
  const DType dtypes[] = {DType::Float32, DType::Int8, DType::Int4, DType::Float16, DType::Bool};
  const int num_tensors = 1 + pick(40);
  for (int t = 0; t < num_tensors; ++t) {
    Tensor x;
    x.name = pick(8) == 0 ? "" : (pick(8) == 0 ? "same" : "t" + std::to_string(t));
    x.dtype = dtypes[pick(5)];
    for (int d = pick(4); d > 0; --d) x.shape.push_back(pick(7));
    if (pick(6) == 0) {
      x.shape.push_back(-1);
      x.dynamic_unbound = true;
      x.nbytes = 0;
    } else {
      x.nbytes = *denseBytes(x.shape, x.dtype);
    }
    if (pick(5) == 0) x.shape.clear(), x.nbytes = 1 + pick(1000);  // size without shape
    if (pick(4) == 0) x.dtype = DType::Unknown;
    if (pick(5) == 0) x.device = Device{"npu", pick(3)};
    if (pick(4) == 0) x.alignment = Bytes{1} << pick(8);
    if (pick(5) == 0) {
      x.mem_id = 1 + pick(3);
      if (pick(2)) x.offset = static_cast<Offset>(pick(1 << 20));
    }
    x.kind = static_cast<TensorKind>(pick(4));
    // Constants may be stored below their dense size (sparse weights).
    if (x.kind == TensorKind::Constant && !x.shape.empty() && x.nbytes > 1 && pick(3) == 0)
      x.nbytes /= 2;
    x.graph = pick(num_graphs);
    if (t > 0 && pick(4) == 0) {
      const TensorId base = pick(t);
      x.alias = static_cast<AliasKind>(1 + pick(3));
      x.alias_of = base;
      x.device = m.tensors[base].device;
    }
    m.tensors.push_back(x);
  }
  const auto visible = [&](GraphId g) {
    std::vector<TensorId> v;
    for (TensorId t = 0; t < num_tensors; ++t)
      for (GraphId a = g; a != kNone; a = m.graphs[a].parent)
        if (m.tensors[t].graph == a) v.push_back(t);
    return v;
  };
  for (GraphId g = 0; g < num_graphs; ++g) {
    Graph& graph = m.graphs[g];
    const std::vector<TensorId> vis = visible(g);
    if (vis.empty()) continue;
    const auto some = [&](int max) {
      std::vector<TensorId> r;
      for (int k = pick(max + 1); k > 0; --k) r.push_back(vis[pick(static_cast<int>(vis.size()))]);
      return r;
    };
    graph.inputs = some(2);
    graph.outputs = some(2);
    for (int n = pick(6); n > 0; --n) {
      Node node;
      node.name = pick(3) ? "n" + std::to_string(graph.nodes.size()) : "";
      node.op = pick(2) ? "add" : "aten::mul";
      node.inputs = some(3);
      node.outputs = some(2);
      graph.nodes.push_back(node);
    }
  }
  // Hang each subgraph under a control-flow node of its parent; sometimes a
  // second node runs it too, and sometimes it names a node other than the
  // first one running it (so the writer must spell the parent out).
  for (GraphId g = 1; g < num_graphs; ++g) {
    Graph& parent = m.graphs[m.graphs[g].parent];
    if (parent.nodes.empty()) parent.nodes.push_back(Node{"cf", "If", NodeKind::Cond, {}, {}, {}});
    const NodeId n = pick(static_cast<int>(parent.nodes.size()));
    Node& node = parent.nodes[n];
    if (node.kind == NodeKind::Op) node.kind = static_cast<NodeKind>(1 + pick(5));
    node.subgraphs.push_back(g);
    m.graphs[g].parent_node = n;
    if (pick(3) == 0) {
      Node extra{"again", "Call", NodeKind::Call, {}, {}, {g}};
      parent.nodes.insert(parent.nodes.begin(), extra);
      for (GraphId s = 1; s < num_graphs; ++s)
        if (m.graphs[s].parent == m.graphs[g].parent && m.graphs[s].parent_node != kNone &&
            s <= g)
          ++m.graphs[s].parent_node;
    }
  }
  return m;
}

Model readTiny() {
  const fs::path path = test::sourceDir() / "examples/graphs/tiny.json";
  return readGraphJson(readFile(path), "tiny.json");
}

TEST(GraphJson, ReadsTinyExample) {
  const Model m = readTiny();
  EXPECT_EQ(m.name, "tiny");
  ASSERT_EQ(m.tensors.size(), 5u);
  for (const Tensor& t : m.tensors) {
    EXPECT_EQ(t.nbytes, 4u) << t.name;
    EXPECT_EQ(t.dtype, DType::Float32);
    EXPECT_EQ(t.shape, std::vector<std::int64_t>{1});
    EXPECT_TRUE(t.device.isCpu0());
  }
  ASSERT_EQ(m.graphs.size(), 1u);
  const Graph& g = m.main();
  EXPECT_EQ(g.inputs, std::vector<TensorId>{0});
  EXPECT_EQ(g.outputs, std::vector<TensorId>{4});
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<TensorId>{0, 0}));
  EXPECT_EQ(g.nodes[1].inputs, (std::vector<TensorId>{0, 1}));
  EXPECT_EQ(g.nodes[2].inputs, (std::vector<TensorId>{2, 1}));
  EXPECT_EQ(g.nodes[3].inputs, (std::vector<TensorId>{2, 3}));
  EXPECT_EQ(g.nodes[3].outputs, std::vector<TensorId>{4});
  EXPECT_EQ(g.nodes[3].op, "mul");
}

TEST(GraphJson, ReadsMlpExample) {
  const fs::path path = test::sourceDir() / "examples/graphs/mlp.json";
  const Model m = readGraphJson(readFile(path), "mlp.json");
  ASSERT_EQ(m.tensors.size(), 13u);
  EXPECT_EQ(m.tensors[0].nbytes, 8u * 784 * 4);
  EXPECT_EQ(m.tensors[1].alias, AliasKind::View);
  EXPECT_EQ(m.tensors[1].alias_of, 0);
  EXPECT_EQ(m.tensors[2].kind, TensorKind::Constant);
  EXPECT_EQ(m.tensors[2].nbytes, 256u * 784 * 4);
  EXPECT_EQ(m.tensors[9].kind, TensorKind::MutableBuffer);
  EXPECT_EQ(m.tensors[9].nbytes, 8u);  // int64 scalar
  EXPECT_EQ(m.tensors[11].alias, AliasKind::InPlace);
  EXPECT_EQ(m.tensors[11].alias_of, 9);
  EXPECT_EQ(m.main().inputs, (std::vector<TensorId>{0, 9}));
  EXPECT_EQ(m.main().nodes.size(), 6u);
}

TEST(GraphJson, WriterOutputReadsBackIdentical) {
  const Model m = readTiny();
  const std::string text = writeGraphJson(m);
  const Model back = readGraphJson(text, "out.json");
  EXPECT_EQ(modelDiff(m, back), "");
  EXPECT_EQ(writeGraphJson(back), text);
  // Tensors and nodes are one a line, keys in a fixed order.
  EXPECT_NE(text.find("\n    {\"name\":\"b\",\"shape\":[1],\"dtype\":\"float32\",\"nbytes\":4},\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("{\"name\":\"mul_2\",\"op\":\"mul\",\"inputs\":[\"c\",\"d\"],"
                      "\"outputs\":[\"e\"]}"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.rfind("{\n  \"format\": \"memplan-graph\",\n  \"version\": 1,\n", 0), 0u);
}

TEST(GraphJson, RandomModelsRoundTrip) {
  int with_subgraphs = 0, with_index_refs = 0;
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {
    const Model m = randomModel(seed);
    ASSERT_NO_THROW(validateModel(m)) << "seed " << seed;
    const std::string text = writeGraphJson(m);
    Model back;
    ASSERT_NO_THROW(back = readGraphJson(text, "r.json")) << "seed " << seed << "\n" << text;
    ASSERT_EQ(modelDiff(m, back), "") << "seed " << seed << "\n" << text;
    ASSERT_EQ(writeGraphJson(back), text) << "seed " << seed;
    with_subgraphs += m.graphs.size() > 1;
    with_index_refs += text.find("\"inputs\":[0") != std::string::npos ||
                       text.find("\"of\":") != std::string::npos;
  }
  EXPECT_GT(with_subgraphs, 100);  // the generator really exercises nesting
  EXPECT_GT(with_index_refs, 10);
}

// Names are bytes in model files: one that is not UTF-8 is written in its
// escaped form and read back exactly, never merged with its U+FFFD look-alike.
TEST(GraphJson, NonUtf8NamesRoundTripByteExactly) {
  Model m = readTiny();
  m.tensors[0].name = "a\xff";
  m.tensors[1].name = "a\xEF\xBF\xBD";  // "a" U+FFFD: valid UTF-8
  m.tensors[2].name = "back\\slash\xc3";
  m.graphs[0].nodes[0].op = "op\x80";
  const std::string text = writeGraphJson(m);
  EXPECT_NE(text.find(R"({"name":{"bytes":"a\\xff"})"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("name":{"bytes":"back\\\\slash\\xc3"})"), std::string::npos) << text;
  const Model back = readGraphJson(text, "x.json");
  EXPECT_EQ(back.tensors[0].name, "a\xff");
  EXPECT_EQ(back.tensors[1].name, "a\xEF\xBF\xBD");
  EXPECT_EQ(back.tensors[2].name, "back\\slash\xc3");
  EXPECT_EQ(back.graphs[0].nodes[0].op, "op\x80");
  EXPECT_EQ(writeGraphJson(back), text);
  // A reference may name a tensor in the escaped form too.
  const std::string by_escape = R"({"format": "memplan-graph", "version": 1,
    "tensors": [{"name": {"bytes": "x\\xff"}, "nbytes": 4}, {"name": "x\ufffd", "nbytes": 4}],
    "graphs": [{"name": "main", "outputs": [{"bytes": "x\\xff"}, "x\ufffd"],
                "nodes": [{"op": "f", "outputs": [{"bytes": "x\\xFF"}, 1]}]}]})";
  const Model refs = readGraphJson(by_escape, "r.json");
  EXPECT_EQ(refs.graphs[0].outputs, (std::vector<TensorId>{0, 1}));
  EXPECT_EQ(refs.graphs[0].nodes[0].outputs, (std::vector<TensorId>{0, 1}));
}

TEST(GraphJson, SubgraphParentsAreDerivedFromTheRunningNode) {
  const std::string text = R"({"format": "memplan-graph", "version": 1, "name": "cf",
    "tensors": [{"name": "p", "dtype": "bool", "shape": []},
                {"name": "x", "dtype": "float32", "shape": [4]},
                {"name": "y", "dtype": "float32", "shape": [4]},
                {"name": "t", "dtype": "float32", "shape": [4], "graph": "then"}],
    "graphs": [
      {"name": "main", "inputs": ["p", "x"], "outputs": ["y"],
       "nodes": [{"name": "if", "op": "If", "kind": "cond", "inputs": ["p", "x"],
                  "outputs": ["y"], "subgraphs": ["then", 2]}]},
      {"name": "then", "outputs": ["t"], "nodes": [{"op": "Neg", "inputs": ["x"], "outputs": ["t"]}]},
      {"name": "else", "outputs": ["x"]}]})";
  const Model m = readGraphJson(text, "cf.json");
  ASSERT_EQ(m.graphs.size(), 3u);
  EXPECT_EQ(m.graphs[1].parent, 0);
  EXPECT_EQ(m.graphs[1].parent_node, 0);
  EXPECT_EQ(m.graphs[2].parent, 0);
  EXPECT_EQ(m.tensors[3].graph, 1);
  EXPECT_EQ(m.main().nodes[0].kind, NodeKind::Cond);
  EXPECT_EQ(m.main().nodes[0].subgraphs, (std::vector<GraphId>{1, 2}));
  EXPECT_EQ(m.tensors[0].nbytes, 1u);
}

std::string errorOf(const std::string& text) {
  try {
    readGraphJson(text, "g.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// Wraps tensors and a main graph into a complete file.
std::string file(const std::string& tensors, const std::string& graph) {
  return R"({"format": "memplan-graph", "version": 1, "name": "m", "tensors": [)" + tensors +
         R"(], "graphs": [)" + graph + "]}";
}
const std::string kT = R"({"name": "a", "shape": [2], "dtype": "float32"})";
const std::string kG = R"({"name": "main", "inputs": ["a"], "outputs": ["a"]})";

TEST(GraphJson, ValidFileSkeletonReads) {
  EXPECT_EQ(errorOf(file(kT, kG)), "(no error)");
}

TEST(GraphJson, ErrorsNameFileAndPlace) {
  EXPECT_EQ(errorOf("{\n  \"format\": memplan\n}"),
            "g.json:2:13: JSON syntax error: syntax error while parsing value - invalid "
            "literal; last read: '\"format\": m'");
  EXPECT_EQ(errorOf(""),
            "g.json:1:1: JSON syntax error: syntax error while parsing value - unexpected "
            "end of input; expected '[', '{', or a literal");
  EXPECT_EQ(errorOf(std::string(100, '[') + std::string(100, ']')),
            "g.json: byte 32: JSON nested deeper than 32 levels");
  EXPECT_EQ(errorOf("[]"), "g.json: expected a JSON object, got an array");
  EXPECT_EQ(errorOf(file(R"({"name": "a", "nbytes": 1e999})", kG)),
            "g.json:1:92: JSON error: number overflow parsing '1e999'");
  EXPECT_EQ(errorOf(R"({"format": "onnx", "version": 1})"),
            "g.json: format: expected \"memplan-graph\"");
  EXPECT_EQ(errorOf(R"({"format": "memplan-graph"})"),
            "g.json: version: missing (this memplan reads versions 1 and 2)");
  EXPECT_EQ(errorOf(R"({"format": "memplan-graph", "version": 3})"),
            "g.json: version: 3 is not supported (this memplan reads versions 1 and 2)");
  EXPECT_EQ(errorOf(R"({"format": "memplan-graph", "version": 1, "tensor": []})"),
            "g.json: unknown field 'tensor'");
  EXPECT_EQ(errorOf(R"({"format": "memplan-graph", "version": 1, "graphs": []})"),
            "g.json: tensors: missing");
  EXPECT_EQ(errorOf(R"({"format": "memplan-graph", "version": 1, "tensors": [], "graphs": []})"),
            "g.json: graphs: expected at least the main graph");
  EXPECT_EQ(errorOf(file(R"({"shape": [1]})", kG)), "g.json: tensors[0]: missing 'name'");
  EXPECT_EQ(errorOf(file(R"({"name": 5})", kG)),
            "g.json: tensors[0].name: expected a string or {\"bytes\": \"...\"}, got an integer");
  EXPECT_EQ(errorOf(file(kT + R"(, {"name": "b", "shape": [2, -3], "dtype": "int8"})", kG)),
            "g.json: tensors[1].shape[1]: expected an integer >= -1 (-1: unknown), got -3");
  EXPECT_EQ(errorOf(file(R"({"name": "a", "shape": [2.5], "dtype": "int8"})", kG)),
            "g.json: tensors[0].shape[0]: expected an integer >= -1 (-1: unknown), got 2.5");
  EXPECT_EQ(errorOf(file(R"({"name": "a", "shape": [2], "dtype": "float33"})", kG)),
            "g.json: tensors[0].dtype: unknown dtype 'float33'");
  EXPECT_EQ(errorOf(file(R"({"name": "a", "shape": [2], "dtype": "float32", "nbytes": 7})", kG)),
            "g.json: tensors[0].nbytes: 7 disagrees with shape and dtype (8 bytes)");
  EXPECT_EQ(errorOf(file(R"({"name": "a", "shape": [2], "dtype": "float32", "nbytes": 3,
                             "kind": "constant"})", kG)),
            "(no error)");  // a sparse or compressed weight
  EXPECT_EQ(errorOf(file(R"({"name": "a", "nbytes": -1})", kG)),
            "g.json: tensors[0].nbytes: expected a non-negative integer, got an integer -1");
  EXPECT_EQ(errorOf(file(R"({"name": "a", "nbytes": 4611686018427387905})", kG)),
            "g.json: tensors[0].nbytes: 4611686018427387905 is above the limit of "
            "4611686018427387904");
  EXPECT_EQ(errorOf(file(R"({"name": "a", "shape": [-1], "dtype": "int8"})", kG)),
            "g.json: tensors[0]: 'nbytes' is missing and shape and dtype do not give it");
  EXPECT_EQ(errorOf(file(R"({"name": "a", "shape": [4294967296, 4294967296], "dtype": "int8"})",
                         kG)),
            "g.json: tensors[0]: 'nbytes' is missing and shape and dtype do not give it");
  EXPECT_EQ(errorOf(file(R"({"name": "a", "nbytes": 4, "device": "GPU"})", kG)),
            "g.json: tensors[0].device: expected a device like \"cpu:0\" (lower-case type, "
            "index), got 'GPU'");
  EXPECT_EQ(errorOf(file(R"({"name": "a", "nbytes": 4, "kind": "weight"})", kG)),
            "g.json: tensors[0].kind: expected activation, constant, trainable_constant or "
            "mutable_buffer, got 'weight'");
  EXPECT_EQ(errorOf(file(R"({"name": "a", "nbytes": 4, "id": 3})", kG)),
            "g.json: tensors[0].id: must equal the tensor's position 0");
  EXPECT_EQ(errorOf(file(R"({"name": "a", "nbytes": 4, "nbyte": 3})", kG)),
            "g.json: tensors[0]: unknown field 'nbyte'");
  EXPECT_EQ(errorOf(file(kT + R"(, {"name": "v", "nbytes": 8, "alias": {"kind": "copy", "of": "a"}})",
                         kG)),
            "g.json: tensors[1].alias.kind: expected view, inplace or share, got 'copy'");
  EXPECT_EQ(errorOf(file(kT + R"(, {"name": "v", "nbytes": 8, "alias": {"kind": "view"}})", kG)),
            "g.json: tensors[1].alias: missing 'of'");
  EXPECT_EQ(errorOf(file(kT + R"(, {"name": "v", "nbytes": 8, "alias": {"kind": "view", "of": "zz"}})",
                         kG)),
            "g.json: tensors[1].alias.of: no tensor named 'zz'");
  EXPECT_EQ(errorOf(file(kT + R"(, {"name": "v", "nbytes": 8, "alias": {"kind": "view", "of": 1}})",
                         kG)),
            "g.json: tensors[1].alias.of: a tensor cannot alias itself");
  EXPECT_EQ(errorOf(file(kT, R"({"name": "main", "inputs": ["b"]})")),
            "g.json: graphs[0].inputs[0]: no tensor named 'b'");
  EXPECT_EQ(errorOf(file(kT, R"({"name": "main", "outputs": [7]})")),
            "g.json: graphs[0].outputs[0]: tensor index 7 out of range (1 tensors)");
  EXPECT_EQ(errorOf(file(kT + "," + kT, R"({"name": "main", "outputs": ["a"]})")),
            "g.json: graphs[0].outputs[0]: tensor name 'a' is not unique; refer to it by index");
  EXPECT_EQ(errorOf(file(kT, R"({"name": "main", "nodes": [{"op": "x", "inputs": [true]}]})")),
            "g.json: graphs[0].nodes[0].inputs[0]: expected a tensor name or index, got a "
            "boolean");
  EXPECT_EQ(errorOf(file(kT, R"({"name": "main", "nodes": [{"op": "x", "kind": "loop"}]})")),
            "g.json: graphs[0].nodes[0].kind: expected op, cond, while, map, scan or call, got "
            "'loop'");
  EXPECT_EQ(errorOf(file(kT, R"({"name": "main", "nodes": [{"op": "x", "subgraphs": ["body"]}]})")),
            "g.json: graphs[0].nodes[0].subgraphs[0]: no graph named 'body'");
  EXPECT_EQ(errorOf(file(kT, R"({"name": "main", "nodes": {}})")),
            "g.json: graphs[0].nodes: expected an array, got an object");
  std::string rank65 = "1";
  for (int i = 1; i < 65; ++i) rank65 += ",1";
  EXPECT_EQ(errorOf(file(R"({"name": "a", "dtype": "int8", "shape": [)" + rank65 + "]}", kG)),
            "g.json: tensors[0].shape: 65 entries, above the limit of 64");
}

TEST(GraphJson, ModelValidationErrorsNameTheFile) {
  EXPECT_EQ(errorOf(file(R"({"name": "a", "nbytes": 4, "alignment": 2147483648})", kG)),
            "g.json: m: tensor 0 'a': alignment 2147483648 is above the limit of 2^30");
  EXPECT_EQ(errorOf(file(kT, kG + R"(, {"name": "orphan"})")),
            "g.json: m: graph 1 'orphan': subgraph without a valid parent graph");
}

// ---- version 2: methods and fqn ----

// A two-method file: prefill and decode each keep a cache with one fqn.
std::string methodsFile(const std::string& methods, const std::string& extra_tensor = "",
                        int version = 2) {
  return R"({"format": "memplan-graph", "version": )" + std::to_string(version) +
         R"(, "name": "m", "methods": )" + methods + R"(, "tensors": [
    {"name": "p.x", "shape": [4], "dtype": "float32"},
    {"name": "p.cache", "shape": [8], "dtype": "float32", "kind": "mutable_buffer", "fqn": "kv"},
    {"name": "d.x", "shape": [4], "dtype": "float32", "graph": "decode"},
    {"name": "d.cache", "shape": [8], "dtype": "float32", "kind": "mutable_buffer", "fqn": "kv", "graph": "decode"})" +
         extra_tensor + R"(],
  "graphs": [{"name": "prefill", "inputs": ["p.x"], "nodes": [{"op": "put", "inputs": ["p.cache", "p.x"], "outputs": []}]},
             {"name": "decode", "inputs": ["d.x"], "nodes": [{"op": "put", "inputs": ["d.cache", "d.x"], "outputs": []}]}]})";
}
const std::string kMethods = R"([{"name": "prefill", "graph": "prefill"}, {"name": "decode", "graph": 1}])";

TEST(GraphJson, MethodsAndFqnRoundTrip) {
  const Model m = readGraphJson(methodsFile(kMethods), "m.json");
  EXPECT_EQ(m.methods, (std::vector<Method>{{"prefill", 0}, {"decode", 1}}));
  EXPECT_EQ(m.tensors[1].fqn, "kv");
  EXPECT_EQ(m.tensors[3].fqn, "kv");
  EXPECT_EQ(m.graphs[1].parent, kNone);  // a root, not a body
  const std::string text = writeGraphJson(m);
  EXPECT_EQ(text.rfind("{\n  \"format\": \"memplan-graph\",\n  \"version\": 2,\n  \"name\": \"m\",\n"
                       "  \"methods\": [\n    {\"name\":\"prefill\",\"graph\":\"prefill\"},\n"
                       "    {\"name\":\"decode\",\"graph\":\"decode\"}\n  ],\n",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("\"kind\":\"mutable_buffer\",\"fqn\":\"kv\""), std::string::npos) << text;
  const Model back = readGraphJson(text, "out.json");
  EXPECT_EQ(modelDiff(m, back), "");
  EXPECT_EQ(writeGraphJson(back), text);
  // The example decoder reads and writes back the same way.
  const Model decoder =
      readGraphJson(readFile(test::sourceDir() / "examples/graphs/decoder_kv.json"), "decoder_kv.json");
  EXPECT_EQ(decoder.methods.size(), 2u);
  EXPECT_EQ(modelDiff(decoder, readGraphJson(writeGraphJson(decoder), "again.json")), "");
}

TEST(GraphJson, MethodErrorsNameFileAndPlace) {
  EXPECT_EQ(errorOf(methodsFile(kMethods, "", 1)), "g.json: methods: needs \"version\": 2 (methods and fqn are version 2)");
  EXPECT_EQ(errorOf(file(R"({"name": "a", "nbytes": 4, "fqn": "s"})", kG)),
            "g.json: tensors[0].fqn: needs \"version\": 2 (methods and fqn are version 2)");
  EXPECT_EQ(errorOf(methodsFile(R"([{"name": "prefill", "graph": "encode"}])")),
            "g.json: methods[0].graph: no graph named 'encode'");
  EXPECT_EQ(errorOf(methodsFile(R"([{"name": "prefill"}])")), "g.json: methods[0].graph: missing");
  EXPECT_EQ(errorOf(methodsFile(R"([{"name": "prefill", "graph": 0, "entry": 1}])")),
            "g.json: methods[0]: unknown field 'entry'");
  EXPECT_EQ(errorOf(methodsFile(R"([{"name": "prefill", "graph": 0}, {"name": "prefill", "graph": 1}])")),
            "g.json: m: method 1 'prefill': name used twice");
  EXPECT_EQ(errorOf(methodsFile(R"([{"name": "decode", "graph": 1}])")),
            "g.json: m: graph 0 is no method's entry graph");
  // Without decode among the methods, its graph is no root: no state there.
  EXPECT_EQ(errorOf(methodsFile(R"([{"name": "prefill", "graph": 0}])")),
            "g.json: m: tensor 3 'd.cache': state 'kv' belongs to graph 1, which is not a method's "
            "entry graph");
  EXPECT_EQ(errorOf(methodsFile(kMethods, R"(, {"name": "t", "shape": [1], "dtype": "float32", "fqn": "kv"})")),
            "g.json: m: tensor 4 't': an fqn names state or a weight; this tensor is neither a mutable "
            "buffer nor a constant");
  EXPECT_EQ(errorOf(methodsFile(kMethods, R"(, {"name": "t", "shape": [2], "dtype": "float32", "kind": "constant", "fqn": "kv", "graph": 1})")),
            "g.json: m: tensor 4 't': fqn 'kv' has 8 bytes here and 32 bytes in tensor 1 'p.cache'");
  EXPECT_EQ(errorOf(methodsFile(kMethods, R"(, {"name": "t", "shape": [8], "dtype": "float32", "kind": "constant", "fqn": "kv", "graph": 1})")),
            "g.json: m: tensor 4 't': fqn 'kv' is also tensor 3 'd.cache' of the same graph");
}

// ---- files ----

TEST(FileIo, ReadFileErrorsNameTheFile) {
  const fs::path dir = test::tempDir("readfile");
  const fs::path missing = dir / "missing.json";
  try {
    readFile(missing);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), missing.string() + ": no such file");
  }
  try {
    readFile(dir);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), dir.string() + ": is a directory, expected a file");
  }
  const fs::path big = dir / "big.csv";
  std::ofstream(big) << std::string(100, 'x');
  try {
    readFile(big, 99);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              big.string() + ": file is 100 bytes, above the limit of 99 bytes");
  }
  EXPECT_EQ(readFile(big, 100), std::string(100, 'x'));
  fs::remove_all(dir);
}

TEST(FileIo, WriteFileAtomicReplacesAndCleansUp) {
  const fs::path dir = test::tempDir("writefile");
  const fs::path path = dir / "plan.json";
  writeFileAtomic(path, "first");
  ::chmod(path.c_str(), 0640);
  writeFileAtomic(path, "second, longer");
  EXPECT_EQ(readFile(path), "second, longer");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);  // permissions of the replaced file kept
  // Writing over a directory fails with the file named, and no temp is left.
  fs::create_directory(dir / "sub");
  try {
    writeFileAtomic(dir / "sub", "x");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "sub").string() + ": cannot write: is a directory");
  }
  try {
    writeFileAtomic(dir / "nodir" / "x.json", "x");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "nodir" / "x.json").string() + ": cannot write: No such file or directory");
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"plan.json", "sub"}));
  fs::remove_all(dir);
}

// ---- input detection ----

std::string detect(const std::string& path, std::string_view bytes) {
  return std::string(detectInputFormat(path, bytes).name);
}

TEST(Detect, ByExtensionAndContent) {
  EXPECT_EQ(detect("m.json", R"({"format": "memplan-graph"})"), "graph_json");
  EXPECT_EQ(detect("case.JSON", R"({"name": "c", "specs": []})"), "spec_list");
  // A tensor named "specs" does not make a graph a spec list.
  EXPECT_EQ(detect("m.json", R"({"format": "memplan-graph", "tensors": [{"name": "specs"}]})"),
            "graph_json");
  EXPECT_EQ(detect("b.csv", "whatever"), "csv");
  EXPECT_EQ(detect("m.onnx", "x"), "onnx");
  EXPECT_EQ(detect("m.tflite", "x"), "tflite");
  // Unknown extension: by content.
  EXPECT_EQ(detect("m.bin", std::string("\x1c\0\0\0TFL3", 8)), "tflite");
  EXPECT_EQ(detect("m", "  \n{\"specs\": [1]}"), "spec_list");
  EXPECT_EQ(detect("m", "{\"format\": \"memplan-graph\"}"), "graph_json");
  EXPECT_EQ(detect("m.txt", "\xEF\xBB\xBFid,lower,upper,size\n"), "csv");
  EXPECT_EQ(detect("m.txt", "lower,upper,id,size\r\n"), "csv");
  // ONNX: a protobuf ModelProto (ir_version = 8, graph = empty message).
  EXPECT_EQ(detect("model", std::string("\x08\x08\x3a\x00", 4)), "onnx");
  // A plan is recognized, to be refused where a model is expected.
  EXPECT_EQ(detect("p.json", R"({"format": "memplan-plan", "version": 3})"), "plan");
  EXPECT_EQ(detect("p", R"({"format": "memplan-plan", "version": 3})"), "plan");
  try {
    detect("notes.txt", "hello world");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "notes.txt: unknown input format (expected an ExecuTorch program, a TFLite model, "
              "an ExecuTorch spec list, a memplan graph JSON, a MiniMalloc CSV buffer list or an "
              "ONNX model)");
  }
  try {
    detect("empty.onnx", "");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "empty.onnx: empty file");
  }
}

TEST(Detect, FetchedModels) {
  const fs::path models = test::modelsDir();
  const fs::path onnx = models / "vad/silero_vad_v5.onnx";
  const fs::path tflite = models / "face_detection/face_detection_short_range.tflite";
  if (!fs::exists(onnx) || !fs::exists(tflite))
    MEMPLAN_MISSING_DATA() << "example models not fetched (scripts/fetch-models.sh)";
  // Renamed files are still recognized by content.
  EXPECT_EQ(detect("model.bin", readFile(onnx)), "onnx");
  EXPECT_EQ(detect("model.bin", readFile(tflite)), "tflite");
}

}  // namespace
}  // namespace memplan

namespace memplan {
namespace {

// Damaged files: every reader either succeeds or throws one-line InputError
// naming the file; nothing else escapes (no crash, no other exception type).
TEST(Robustness, MutatedInputsFailCleanly) {
  const std::string graph = readFile(test::sourceDir() / "examples/graphs/mlp.json");
  const std::string csv = "id,lower,upper,size,alignment,offset\na,0,3,4,1,0\nb,2,9,8,8,8\n";
  std::mt19937 rng(7);
  int rejected = 0, accepted = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text = round % 2 ? graph : csv;
    for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 4) {
        case 0: text[at] = static_cast<char>(rng()); break;
        case 1: text.erase(at, 1 + rng() % 8); break;
        case 2: text.insert(at, text.substr(rng() % text.size(), 1 + rng() % 12)); break;
        case 3: text.resize(at); break;
      }
      if (text.empty()) text = "x";
    }
    const std::string name = round % 2 ? "m.json" : "b.csv";
    try {
      if (round % 2) readGraphJson(text, name);
      else readMiniMallocCsv(text, name);
      detectInputFormat(name, text);
      ++accepted;
    } catch (const InputError& e) {
      const std::string what = e.what();
      ASSERT_EQ(what.rfind(name + ":", 0), 0u) << what;
      ASSERT_EQ(what.find('\n'), std::string::npos) << what;
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(accepted, 10);
}

}  // namespace
}  // namespace memplan

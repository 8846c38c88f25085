// memplan graph JSON reader (format: docs/graph-format.md).
//
// Steps: parse (depth capped, syntax errors with line:column) -> check the
// header (format, version 1 or 2) -> index graph and tensor names -> read
// methods (version 2) -> read tensors ->
// read graphs and nodes, resolving references -> derive missing subgraph
// parents -> validateModel. Every error names the file and the JSON path of
// the offending value, e.g. "g.json: tensors[12].shape[2]: expected ...".
#include <nlohmann/json.hpp>

#include <string>
#include <unordered_map>

#include "io/json_text.h"
#include "memplan/io.h"
#include "memplan/limits.h"

namespace memplan {
namespace {

using json = nlohmann::json;

// Caps: counts a valid model never reaches; they keep ids in range and the
// work bounded on hostile input.
using limits::kMaxGraphs;
using limits::kMaxNodes;
using limits::kMaxRank;
using limits::kMaxTensors;
constexpr std::size_t kMaxRefs = limits::kMaxTensors;  // tensors named by one list
constexpr std::int64_t kAmbiguous = -2;  // name map entry: name used twice

using jsontext::oneLine;
using jsontext::typeName;

using jsontext::item;

class Reader : public jsontext::Fields {
 public:
  Reader(std::string_view text, const std::string& source) : Fields(source), text_(text) {}

  Model read() {
    const json root = jsontext::parse(text_, source());
    if (!root.is_object()) fail("", std::string("expected a JSON object, got ") + typeName(root));
    knownKeys(root, "", {"format", "version", "name", "methods", "tensors", "graphs"});
    const json* format = root.contains("format") ? &root["format"] : nullptr;
    if (!format || !format->is_string() || format->get_ref<const std::string&>() != "memplan-graph")
      fail("format", "expected \"memplan-graph\"");
    const json* version = root.contains("version") ? &root["version"] : nullptr;
    if (!version) fail("version", "missing (this memplan reads versions 1 and 2)");
    if (!version->is_number_unsigned() || version->get<std::uint64_t>() < 1 ||
        version->get<std::uint64_t>() > 2)
      fail("version", oneLine(version->dump(), 40) +
                          " is not supported (this memplan reads versions 1 and 2)");
    version_ = version->get<std::uint64_t>();

    Model m;
    m.name = root.contains("name") ? text(root["name"], "name") : source();
    const json& tensors = array(root, "tensors", "tensors", kMaxTensors, true);
    const json& graphs = array(root, "graphs", "graphs", kMaxGraphs, true);
    if (graphs.empty()) fail("graphs", "expected at least the main graph");

    // Names first: references may point forward.
    graph_names_.reserve(graphs.size());
    for (std::size_t g = 0; g < graphs.size(); ++g) {
      const std::string at = item("graphs", g);
      object(graphs[g], at);
      if (graphs[g].contains("name"))
        addName(graph_names_, text(graphs[g]["name"], at + ".name"), static_cast<std::int64_t>(g));
    }
    tensor_names_.reserve(tensors.size());
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      const std::string at = item("tensors", t);
      object(tensors[t], at);
      if (!tensors[t].contains("name")) fail(at, "missing 'name'");
      addName(tensor_names_, text(tensors[t]["name"], at + ".name"), static_cast<std::int64_t>(t));
    }
    num_tensors_ = tensors.size();
    num_graphs_ = graphs.size();

    if (root.contains("methods")) {
      needsVersion2("methods");
      const json& methods = array(root, "methods", "methods", kMaxGraphs, false);
      for (std::size_t i = 0; i < methods.size(); ++i) {
        const std::string at = item("methods", i);
        object(methods[i], at);
        knownKeys(methods[i], at, {"name", "graph"});
        Method method;
        method.name = text(require(methods[i], at, "name"), at + ".name");
        method.graph = graphRef(require(methods[i], at, "graph"), at + ".graph");
        m.methods.push_back(std::move(method));
      }
    }

    m.tensors.resize(tensors.size());
    for (std::size_t t = 0; t < tensors.size(); ++t) readTensor(tensors[t], t, m.tensors[t]);

    m.graphs.resize(graphs.size());
    std::vector<bool> explicit_parent(graphs.size(), false);
    for (std::size_t g = 0; g < graphs.size(); ++g)
      explicit_parent[g] = readGraph(graphs[g], g, m.graphs[g]);
    deriveParents(m, explicit_parent);

    try {
      validateModel(m);
    } catch (const InputError& e) {
      // The model is named after the file unless the file names it.
      const std::string what = oneLine(e.what(), 400);
      if (what.rfind(source() + ": ", 0) == 0) throw InputError(what);
      throw InputError(source() + ": " + what);
    }
    return m;
  }

 private:
  // The array member `key` (an empty one when absent and not required).
  const json& array(const json& obj, const char* key, const std::string& at, std::size_t max,
                    bool required) const {
    static const json kEmpty = json::array();
    if (!obj.contains(key)) {
      if (required) fail(at, "missing");
      return kEmpty;
    }
    return Fields::array(obj[key], at, max);
  }
  using Fields::array;

  void addName(std::unordered_map<std::string, std::int64_t>& names, std::string name,
               std::int64_t i) {
    auto [it, fresh] = names.emplace(std::move(name), i);
    if (!fresh) it->second = kAmbiguous;
  }

  // A reference: a name (string) or an index (integer) into `count` items.
  std::int64_t ref(const json& v, const std::string& at, const char* what,
                   const std::unordered_map<std::string, std::int64_t>& names,
                   std::size_t count) const {
    if (v.is_string() || v.is_object()) {  // a name, or {"bytes": ...}
      const std::string name = text(v, at);
      const auto it = names.find(name);
      if (it == names.end()) fail(at, std::string("no ") + what + " named '" + oneLine(name, 80) + "'");
      if (it->second == kAmbiguous)
        fail(at, std::string(what) + " name '" + oneLine(name, 80) +
                     "' is not unique; refer to it by index");
      return it->second;
    }
    if (v.is_number_unsigned()) {
      const auto i = v.get<std::uint64_t>();
      if (i >= count)
        fail(at, std::string(what) + " index " + std::to_string(i) + " out of range (" +
                     std::to_string(count) + " " + what + "s)");
      return static_cast<std::int64_t>(i);
    }
    fail(at, std::string("expected a ") + what + " name or index, got " + typeName(v));
  }

  TensorId tensorRef(const json& v, const std::string& at) const {
    return static_cast<TensorId>(ref(v, at, "tensor", tensor_names_, num_tensors_));
  }
  GraphId graphRef(const json& v, const std::string& at) const {
    return static_cast<GraphId>(ref(v, at, "graph", graph_names_, num_graphs_));
  }

  std::vector<TensorId> tensorList(const json& obj, const char* key, const std::string& at) const {
    const json& list = array(obj, key, at, kMaxRefs, false);
    std::vector<TensorId> out;
    out.reserve(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) out.push_back(tensorRef(list[i], item(at, i)));
    return out;
  }

  Device device(const json& v, const std::string& at) const {
    const std::string s = str(v, at);
    const auto d = parseDevice(s);
    if (!d) fail(at, "expected a device like \"cpu:0\" (lower-case type, index), got '" +
                         oneLine(s, 60) + "'");
    return *d;
  }

  void needsVersion2(const std::string& at) const {
    if (version_ < 2) fail(at, "needs \"version\": 2 (methods and fqn are version 2)");
  }

  void readTensor(const json& v, std::size_t i, Tensor& t) const {
    const std::string at = item("tensors", i);
    knownKeys(v, at, {"id", "name", "shape", "dtype", "nbytes", "device", "alignment", "mem_id",
                      "offset", "kind", "alias", "dynamic_unbound", "graph", "gaps", "fqn"});
    if (v.contains("id") && unsignedInt(v["id"], at + ".id", kMaxTensors) != i)
      fail(at + ".id", "must equal the tensor's position " + std::to_string(i));
    t.name = text(v["name"], at + ".name");
    if (v.contains("shape")) {
      const json& shape = array(v, "shape", at + ".shape", kMaxRank, false);
      t.shape.reserve(shape.size());
      for (std::size_t d = 0; d < shape.size(); ++d) {
        const json& dim = shape[d];
        const bool ok = dim.is_number_integer() &&
                        (dim.is_number_unsigned() ? dim.get<std::uint64_t>() <= kMaxBytes
                                                  : dim.get<std::int64_t>() >= -1);
        if (!ok) fail(item(at + ".shape", d), "expected an integer >= -1 (-1: unknown), got " +
                                                   oneLine(dim.dump(), 40));
        t.shape.push_back(dim.get<std::int64_t>());
      }
    }
    if (v.contains("dtype")) {
      const std::string name = str(v["dtype"], at + ".dtype");
      const auto dt = parseDType(name);
      if (!dt) fail(at + ".dtype", "unknown dtype '" + oneLine(name, 40) + "'");
      t.dtype = *dt;
    }
    if (v.contains("kind")) {
      const std::string k = str(v["kind"], at + ".kind");
      if (k == "activation") t.kind = TensorKind::Activation;
      else if (k == "constant") t.kind = TensorKind::Constant;
      else if (k == "trainable_constant") t.kind = TensorKind::TrainableConstant;
      else if (k == "mutable_buffer") t.kind = TensorKind::MutableBuffer;
      else fail(at + ".kind", "expected activation, constant, trainable_constant or "
                              "mutable_buffer, got '" + oneLine(k, 40) + "'");
    }
    if (v.contains("fqn")) {
      needsVersion2(at + ".fqn");
      t.fqn = text(v["fqn"], at + ".fqn");
      if (t.fqn.empty()) fail(at + ".fqn", "empty (leave it out for none)");
    }
    if (v.contains("dynamic_unbound"))
      t.dynamic_unbound = boolean(v["dynamic_unbound"], at + ".dynamic_unbound");
    const std::optional<Bytes> dense = denseBytes(t.shape, t.dtype);
    if (v.contains("nbytes")) {
      t.nbytes = unsignedInt(v["nbytes"], at + ".nbytes", kMaxBytes);
      // Constants may be stored smaller than dense (sparse, compressed).
      if (v.contains("shape") && dense && *dense != t.nbytes && t.kind != TensorKind::Constant)
        fail(at + ".nbytes", std::to_string(t.nbytes) + " disagrees with shape and dtype (" +
                                 std::to_string(*dense) + " bytes)");
    } else if (dense) {
      if (*dense > kMaxBytes) fail(at + ".shape", "size above the limit of 2^62 bytes");
      t.nbytes = *dense;
    } else if (!t.dynamic_unbound) {
      fail(at, "'nbytes' is missing and shape and dtype do not give it");
    }
    if (v.contains("device")) t.device = device(v["device"], at + ".device");
    if (v.contains("alignment")) t.alignment = unsignedInt(v["alignment"], at + ".alignment", kMaxBytes);
    if (v.contains("mem_id"))
      t.mem_id = static_cast<MemId>(unsignedInt(v["mem_id"], at + ".mem_id", 0x7fffffff));
    if (v.contains("offset")) t.offset = unsignedInt(v["offset"], at + ".offset", kMaxBytes);
    if (v.contains("alias")) {
      const json& a = v["alias"];
      const std::string aat = at + ".alias";
      object(a, aat);
      knownKeys(a, aat, {"kind", "of"});
      if (!a.contains("kind")) fail(aat, "missing 'kind'");
      if (!a.contains("of")) fail(aat, "missing 'of'");
      const std::string k = str(a["kind"], aat + ".kind");
      if (k == "view") t.alias = AliasKind::View;
      else if (k == "inplace") t.alias = AliasKind::InPlace;
      else if (k == "share") t.alias = AliasKind::ShareWith;
      else fail(aat + ".kind", "expected view, inplace or share, got '" + oneLine(k, 40) + "'");
      t.alias_of = tensorRef(a["of"], aat + ".of");
      if (t.alias_of == static_cast<TensorId>(i)) fail(aat + ".of", "a tensor cannot alias itself");
    }
    if (v.contains("graph")) t.graph = graphRef(v["graph"], at + ".graph");
    if (v.contains("gaps")) readGaps(v["gaps"], at + ".gaps", t);
  }

  // [{"nodes": [from, to]}, {"nodes": [from, to], "bytes": [lo, hi]}]; the
  // order and the bounds are checked by validateModel.
  void readGaps(const json& v, const std::string& at, Tensor& t) const {
    const json& list = array(v, at, kMaxNodes);
    t.gaps.reserve(list.size());
    // [a, b] with a < b (node steps) or a <= b (bytes).
    const auto pair = [&](const json& p, const std::string& pat, std::uint64_t max, bool strict) {
      array(p, pat, 2);
      if (p.size() != 2) fail(pat, "expected two integers, got " + oneLine(p.dump(), 40));
      const std::uint64_t a = unsignedInt(p[0], item(pat, 0), max);
      const std::uint64_t b = unsignedInt(p[1], item(pat, 1), max);
      if (strict ? a >= b : a > b)
        fail(pat, std::string(strict ? "expected [from, to) with from < to" : "expected [lo, hi) with lo <= hi") +
                      ", got " + oneLine(p.dump(), 40));
      return std::pair<std::uint64_t, std::uint64_t>{a, b};
    };
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string gat = item(at, i);
      object(list[i], gat);
      knownKeys(list[i], gat, {"nodes", "bytes"});
      if (!list[i].contains("nodes")) fail(gat, "missing 'nodes'");
      Gap g;
      const auto [from, to] = pair(list[i]["nodes"], gat + ".nodes", kMaxNodes, true);
      g.start = static_cast<TimeValue>(from);
      g.end = static_cast<TimeValue>(to);
      if (list[i].contains("bytes")) g.window = pair(list[i]["bytes"], gat + ".bytes", kMaxBytes, false);
      t.gaps.push_back(g);
    }
  }

  static std::optional<NodeKind> nodeKind(std::string_view s) {
    for (NodeKind k : {NodeKind::Op, NodeKind::Cond, NodeKind::While, NodeKind::Map,
                       NodeKind::Scan, NodeKind::Call})
      if (nodeKindName(k) == s) return k;
    return std::nullopt;
  }

  // Returns whether the graph names its parent explicitly.
  bool readGraph(const json& v, std::size_t gi, Graph& g) const {
    const std::string at = item("graphs", gi);
    knownKeys(v, at, {"name", "inputs", "outputs", "nodes", "parent", "parent_node"});
    if (v.contains("name")) g.name = text(v["name"], at + ".name");
    g.inputs = tensorList(v, "inputs", at + ".inputs");
    g.outputs = tensorList(v, "outputs", at + ".outputs");
    const json& nodes = array(v, "nodes", at + ".nodes", kMaxNodes, false);
    g.nodes.resize(nodes.size());
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      const std::string nat = item(at + ".nodes", n);
      const json& nv = nodes[n];
      Node& node = g.nodes[n];
      object(nv, nat);
      knownKeys(nv, nat, {"name", "op", "kind", "inputs", "outputs", "subgraphs"});
      if (nv.contains("name")) node.name = text(nv["name"], nat + ".name");
      if (nv.contains("op")) node.op = text(nv["op"], nat + ".op");
      if (nv.contains("kind")) {
        const std::string k = str(nv["kind"], nat + ".kind");
        const auto kind = nodeKind(k);
        if (!kind) fail(nat + ".kind", "expected op, cond, while, map, scan or call, got '" +
                                           oneLine(k, 40) + "'");
        node.kind = *kind;
      }
      node.inputs = tensorList(nv, "inputs", nat + ".inputs");
      node.outputs = tensorList(nv, "outputs", nat + ".outputs");
      const json& subs = array(nv, "subgraphs", nat + ".subgraphs", kMaxGraphs, false);
      node.subgraphs.reserve(subs.size());
      for (std::size_t s = 0; s < subs.size(); ++s)
        node.subgraphs.push_back(graphRef(subs[s], item(nat + ".subgraphs", s)));
    }
    bool explicit_parent = false;
    if (v.contains("parent")) {
      explicit_parent = true;
      g.parent = v["parent"].is_null() ? kNone : graphRef(v["parent"], at + ".parent");
    }
    if (v.contains("parent_node")) {
      if (!explicit_parent) fail(at + ".parent_node", "needs 'parent'");
      g.parent_node = v["parent_node"].is_null()
                          ? kNone
                          : static_cast<NodeId>(unsignedInt(v["parent_node"], at + ".parent_node",
                                                            kMaxNodes));
    }
    return explicit_parent;
  }

  // A subgraph without an explicit parent belongs to the first node (graphs
  // in order, nodes in order) that runs it.
  void deriveParents(Model& m, const std::vector<bool>& explicit_parent) const {
    for (GraphId g = 0; g < static_cast<GraphId>(m.graphs.size()); ++g)
      for (NodeId n = 0; n < static_cast<NodeId>(m.graphs[g].nodes.size()); ++n)
        for (GraphId s : m.graphs[g].nodes[n].subgraphs)
          if (s > 0 && !explicit_parent[s] && m.graphs[s].parent == kNone) {
            m.graphs[s].parent = g;
            m.graphs[s].parent_node = n;
          }
    for (std::size_t g = 0; g < m.graphs.size(); ++g) {
      const Graph& graph = m.graphs[g];
      if (graph.parent_node == kNone || graph.parent == kNone) continue;
      if (graph.parent_node >= static_cast<NodeId>(m.graphs[graph.parent].nodes.size()))
        fail(item("graphs", g) + ".parent_node",
             std::to_string(graph.parent_node) + " is not a node of the parent graph");
    }
  }

  std::string_view text_;
  std::uint64_t version_ = 1;
  std::unordered_map<std::string, std::int64_t> tensor_names_;
  std::unordered_map<std::string, std::int64_t> graph_names_;
  std::size_t num_tensors_ = 0;
  std::size_t num_graphs_ = 0;
};

}  // namespace

Model readGraphJson(std::string_view text, const std::string& source_name) {
  return Reader(text, source_name).read();
}

}  // namespace memplan

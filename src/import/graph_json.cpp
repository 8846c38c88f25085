// memplan graph JSON reader (format: docs/graph-format.md).
//
// Steps: parse, streaming (depth capped, syntax errors with line:column):
// each element of "tensors" and of a graph's "nodes" is read into the model
// as soon as the parser completes it and then dropped, so a file's JSON
// tree is never held whole (a 2M-tensor file would need ~1.2 KB of tree a
// tensor on top of the model) -> check the header (format, version 1 or 2)
// -> index graph names -> read methods -> resolve the references that may
// point forward (aliases, tensors' graphs, subgraphs, parents) -> derive
// missing subgraph parents -> validateModel. Every error names the file and
// the JSON path of the offending value, e.g. "g.json: tensors[12].shape[2]:
// expected ...".
//
// Streaming needs the header before the first tensor and every tensor
// before the first node, as memplan writes them; a file in another order
// is read all the same, holding the elements until the end.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <unordered_map>

#include "support/json_text.h"
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

class GraphReader : public jsontext::Fields {
 public:
  GraphReader(std::string_view text, const std::string& source) : Fields(source), text_(text) {}

  Model read() {
    Sax sax(*this, text_);
    jsontext::parseWith(text_, source(), jsontext::kMaxDepth,
                        [&] { jsontext::saxParse(text_, sax.cursor(), sax); });
    const json& root = sax.root();
    checkHeader(root);  // unknown members were refused while parsing
    Model& m = m_;
    m.name = root.contains("name") ? text(root["name"], "name") : source();
    // What streaming took out of the tree is counted, not held: "tensors" and
    // the graphs' "nodes" are empty arrays here.
    array(root, "tensors", "tensors", kMaxTensors, true);
    const json& graphs = array(root, "graphs", "graphs", kMaxGraphs, true);
    if (graphs.empty()) fail("graphs", "expected at least the main graph");

    graph_names_.reserve(graphs.size());
    for (std::size_t g = 0; g < graphs.size(); ++g) {
      const std::string at = item("graphs", g);
      object(graphs[g], at);
      if (graphs[g].contains("name"))
        addName(graph_names_, text(graphs[g]["name"], at + ".name"), static_cast<std::int64_t>(g));
    }
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

    // Elements held back (a file in another order), then the references.
    for (std::size_t t = 0; t < held_tensors_.size(); ++t) readTensorElement(held_tensors_[t], t);
    held_tensors_.clear();
    tensors_done_ = true;
    num_tensors_ = m.tensors.size();
    for (const TensorRefs& r : tensor_refs_) {
      Tensor& t = m.tensors[static_cast<std::size_t>(r.tensor)];
      const std::string at = item("tensors", static_cast<std::size_t>(r.tensor));
      if (r.alias_of) {
        t.alias_of = tensorRef(*r.alias_of, at + ".alias.of");
        if (t.alias_of == r.tensor) fail(at + ".alias.of", "a tensor cannot alias itself");
      }
      if (r.graph) t.graph = graphRef(*r.graph, at + ".graph");
    }
    tensor_refs_.clear();
    for (HeldNode& h : held_nodes_) readNodeElement(h.node, h.graph, h.index);
    held_nodes_.clear();

    m.graphs.resize(graphs.size());
    std::vector<bool> explicit_parent(graphs.size(), false);
    for (std::size_t g = 0; g < graphs.size(); ++g) {
      if (g < nodes_.size()) m.graphs[g].nodes = std::move(nodes_[g]);
      explicit_parent[g] = readGraph(graphs[g], g, m.graphs[g]);
    }
    for (const SubgraphRefs& r : subgraph_refs_) {
      const std::string at = item(item("graphs", r.graph) + ".nodes", r.node) + ".subgraphs";
      Node& node = m.graphs[r.graph].nodes[r.node];
      const json& subs = array(r.subgraphs, at, kMaxGraphs);
      node.subgraphs.reserve(subs.size());
      for (std::size_t i = 0; i < subs.size(); ++i) node.subgraphs.push_back(graphRef(subs[i], item(at, i)));
    }
    deriveParents(m, explicit_parent);

    try {
      validateModel(m);
    } catch (const InputError& e) {
      // The model is named after the file unless the file names it.
      const std::string what = oneLine(e.what(), 400);
      if (what.rfind(source() + ": ", 0) == 0) throw InputError(what);
      throw InputError(source() + ": " + what);
    }
    return std::move(m_);
  }

  // ---- streaming: called by Sax as elements complete ----

  // Both return whether the element is held (read at the end).
  bool onTensor(json&& v, std::size_t i) {
    if (i >= kMaxTensors) fail("tensors", "more than " + std::to_string(kMaxTensors) + " entries, above the limit");
    if (!held_tensors_.empty() || !headerSeen()) {
      held_tensors_.push_back(std::move(v));
      return true;
    }
    readTensorElement(v, i);
    return false;
  }
  void onTensorsEnd() {
    if (!held_tensors_.empty()) return;  // read at the end
    tensors_done_ = true;
    num_tensors_ = m_.tensors.size();
  }
  bool onNode(json&& v, std::size_t g, std::size_t n) {
    if (g >= kMaxGraphs) fail("graphs", "more than " + std::to_string(kMaxGraphs) + " entries, above the limit");
    if (n >= kMaxNodes)
      fail(item("graphs", g) + ".nodes", "more than " + std::to_string(kMaxNodes) + " entries, above the limit");
    if (!tensors_done_ || !held_nodes_.empty()) {
      held_nodes_.push_back({std::move(v), g, n});
      return true;
    }
    readNodeElement(v, g, n);
    return false;
  }
  // The header, checked once as soon as the root holds it.
  bool headerSeen() {
    if (header_checked_) return true;
    const json& root = root_ ? *root_ : json();
    if (!root.is_object() || !root.contains("format") || !root.contains("version")) return false;
    checkHeader(root);
    return true;
  }
  const json* root_ = nullptr;  // the document as parsed so far

 private:
  static constexpr std::array<std::string_view, 6> kRootKeys = {"format", "version", "name",
                                                               "methods", "tensors", "graphs"};

  // Builds the document as nlohmann's DOM parser does, except that each
  // element of the root's "tensors" array and of a graph's "nodes" array is
  // handed to the reader when complete and never stored; unknown members
  // of the root and over-long arrays are refused before their values are
  // built; what is held stays within a TreeBudget.
  class Sax : public jsontext::TreeSax<Sax> {
    friend jsontext::TreeSax<Sax>;

   public:
    Sax(GraphReader& r, std::string_view text) : r_(r), text_(text), budget_(text.size()) {
      r_.root_ = &root_;
    }
    const json& root() const { return root_; }
    jsontext::Cursor& cursor() { return cursor_; }

    bool key(json::string_t& k) {
      Frame& f = stack_.back();
      // Streamed arrays given twice would be read twice.
      const bool streamed = (f.kind == Kind::Root && (k == "tensors" || k == "graphs")) ||
                            (f.kind == Kind::Graph && k == "nodes");
      if (streamed && f.value->contains(k))
        r_.fail(f.kind == Kind::Root ? "" : item("graphs", f.index), "'" + k + "' given twice");
      if (f.kind == Kind::Root && f.value->is_object() &&
          std::find(kRootKeys.begin(), kRootKeys.end(), k) == kRootKeys.end())
        r_.fail("", "unknown field '" + oneLine(k, 60) + "'");
      f.key = k;
      f.slot = &(*f.value)[k];
      return true;
    }

   private:
    enum class Kind : std::uint8_t { Root, Tensors, Graphs, Graph, Nodes, Element, Other };
    struct Frame {
      json* value;
      Kind kind;
      std::size_t index = 0;   // Graph, Nodes: the graph; Element: its position
      std::size_t count = 0;   // arrays: entries so far
      std::string key;         // objects: the last key
      json* slot = nullptr;    // objects: where the last key's value goes
    };

    // Where a new value goes, and what it is.
    Frame place(json&& v) {
      if (stack_.empty()) {
        root_ = std::move(v);
        return {&root_, Kind::Root};
      }
      Frame& parent = stack_.back();
      const bool array = v.is_array();
      const bool streamed = parent.kind == Kind::Tensors || parent.kind == Kind::Nodes;
      if (streamed) element_mark_ = budget_.used();  // given back when the element is dropped
      if (!budget_.charge(jsontext::TreeBudget::cost(v, parent.value->is_object(), parent.key.size())))
        jsontext::overBudget(text_, cursor_, r_.source(), "", budget_);
      switch (parent.kind) {
        case Kind::Tensors:
        case Kind::Nodes:
          element_ = std::move(v);
          return {&element_, Kind::Element, parent.count++};
        case Kind::Root:
          if (parent.value->is_object() && array && (parent.key == "tensors" || parent.key == "graphs")) {
            *parent.slot = std::move(v);
            return {parent.slot, parent.key == "tensors" ? Kind::Tensors : Kind::Graphs};
          }
          break;
        case Kind::Graphs: {
          if (parent.count == kMaxGraphs)
            r_.fail("graphs", "more than " + std::to_string(kMaxGraphs) + " entries, above the limit");
          const std::size_t g = parent.count++;
          const bool object = v.is_object();
          parent.value->push_back(std::move(v));
          return {&parent.value->back(), object ? Kind::Graph : Kind::Other, g};
        }
        case Kind::Graph:
          if (array && parent.key == "nodes") {
            *parent.slot = std::move(v);
            return {parent.slot, Kind::Nodes, parent.index};
          }
          break;
        case Kind::Element:
        case Kind::Other:
          break;
      }
      if (parent.value->is_array()) {
        parent.value->push_back(std::move(v));
        return {&parent.value->back(), Kind::Other};
      }
      *parent.slot = std::move(v);
      return {parent.slot, Kind::Other};
    }

    bool value(json&& v) {
      const Frame f = place(std::move(v));
      if (f.kind == Kind::Element) deliver(f);
      return true;
    }
    bool open(json&& v) {
      stack_.push_back(place(std::move(v)));
      return true;
    }
    bool close() {
      const Frame f = std::move(stack_.back());
      stack_.pop_back();
      if (f.kind == Kind::Element) deliver(f);
      if (f.kind == Kind::Tensors) r_.onTensorsEnd();
      return true;
    }
    void deliver(const Frame& f) {
      const Frame& parent = stack_.back();
      const bool held = parent.kind == Kind::Tensors ? r_.onTensor(std::move(element_), f.index)
                                                     : r_.onNode(std::move(element_), parent.index, f.index);
      element_ = json();
      if (!held) budget_.reset(element_mark_);  // a held element stays charged
    }

    GraphReader& r_;
    std::string_view text_;
    jsontext::TreeBudget budget_;
    jsontext::Cursor cursor_;
    std::size_t element_mark_ = 0;
    json root_;
    json element_;
    std::vector<Frame> stack_;
  };

  void checkHeader(const json& root) {
    if (header_checked_) return;
    if (!root.is_object()) fail("", std::string("expected a JSON object, got ") + typeName(root));
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
    header_checked_ = true;
    if (root.contains("methods")) needsVersion2("methods");  // before the tensors' fqn
  }

  void readTensorElement(const json& v, std::size_t i) {
    const std::string at = item("tensors", i);
    object(v, at);
    if (!v.contains("name")) fail(at, "missing 'name'");
    m_.tensors.emplace_back();
    readTensor(v, i, m_.tensors.back());
    addName(tensor_names_, m_.tensors.back().name, static_cast<std::int64_t>(i));
  }

  void readNodeElement(const json& nv, std::size_t g, std::size_t n) {
    const std::string nat = item(item("graphs", g) + ".nodes", n);
    if (nodes_.size() <= g) nodes_.resize(g + 1);
    nodes_[g].emplace_back();
    Node& node = nodes_[g].back();
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
    // Graphs may be named before they are read: resolved at the end.
    if (nv.contains("subgraphs")) {
      array(nv["subgraphs"], nat + ".subgraphs", kMaxGraphs);
      subgraph_refs_.push_back({nv["subgraphs"], static_cast<GraphId>(g), static_cast<NodeId>(n)});
    }
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

  void readTensor(const json& v, std::size_t i, Tensor& t) {
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
    }
    // References may point forward: resolved when every tensor is read.
    if (v.contains("alias") || v.contains("graph")) {
      TensorRefs refs{static_cast<TensorId>(i), std::nullopt, std::nullopt};
      if (v.contains("alias")) refs.alias_of = v["alias"]["of"];
      if (v.contains("graph")) refs.graph = v["graph"];
      tensor_refs_.push_back(std::move(refs));
    }
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
    array(v, "nodes", at + ".nodes", kMaxNodes, false);  // its elements were streamed
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

  // References held until what they name is read.
  struct TensorRefs {
    TensorId tensor;
    std::optional<json> alias_of, graph;
  };
  struct SubgraphRefs {
    json subgraphs;
    GraphId graph;
    NodeId node;
  };
  struct HeldNode {
    json node;
    std::size_t graph, index;
  };

  std::string_view text_;
  Model m_;
  bool header_checked_ = false;
  bool tensors_done_ = false;
  std::vector<json> held_tensors_;
  std::vector<HeldNode> held_nodes_;
  std::vector<std::vector<Node>> nodes_;  // per graph, as streamed
  std::vector<TensorRefs> tensor_refs_;
  std::vector<SubgraphRefs> subgraph_refs_;
  std::uint64_t version_ = 1;
  std::unordered_map<std::string, std::int64_t> tensor_names_;
  std::unordered_map<std::string, std::int64_t> graph_names_;
  std::size_t num_tensors_ = 0;
  std::size_t num_graphs_ = 0;
};

}  // namespace

Model readGraphJson(std::string_view text, const std::string& source_name) {
  return GraphReader(text, source_name).read();
}

}  // namespace memplan

// memplan graph JSON writer (format: docs/graph-format.md).
//
// Output is deterministic: fixed key order, one tensor or node a line, and
// fields left out exactly when they hold the reader's default, so reading
// the output back gives the same Model. References are names when the name
// is unique and non-empty, else indices.
#include <nlohmann/json.hpp>

#include <string>
#include <unordered_map>

#include "support/json_text.h"
#include "support/text.h"
#include "memplan/io.h"

namespace memplan {
namespace {

using ojson = nlohmann::ordered_json;

std::string_view tensorKindName(TensorKind k) {
  switch (k) {
    case TensorKind::Activation: return "activation";
    case TensorKind::Constant: return "constant";
    case TensorKind::TrainableConstant: return "trainable_constant";
    case TensorKind::MutableBuffer: return "mutable_buffer";
  }
  return "activation";
}

std::string_view aliasKindName(AliasKind k) {
  switch (k) {
    case AliasKind::View: return "view";
    case AliasKind::InPlace: return "inplace";
    case AliasKind::ShareWith: return "share";
    case AliasKind::None: break;
  }
  return "";
}

using jsontext::dump;
using jsontext::textJson;

// Reference by name when that name picks exactly one item and is a JSON
// string as it is (valid UTF-8); else by index.
class Refs {
 public:
  template <typename Items>
  explicit Refs(const Items& items) {
    std::unordered_map<std::string_view, int> count;
    for (const auto& x : items) ++count[x.name];
    unique_.reserve(items.size());
    for (const auto& x : items) unique_.push_back(!x.name.empty() && count[x.name] == 1 && isUtf8(x.name));
    for (const auto& x : items) names_.push_back(&x.name);
  }
  ojson operator()(std::int32_t i) const {
    if (i >= 0 && static_cast<std::size_t>(i) < unique_.size() && unique_[i]) return *names_[i];
    return i;
  }

 private:
  std::vector<bool> unique_;
  std::vector<const std::string*> names_;
};

}  // namespace

// Long (~100 lines) on purpose: the graph JSON format written top to
// bottom, one member after the other, as docs/graph-format.md lists them.
std::string writeGraphJson(const Model& m) {
  const Refs tref(m.tensors);
  const Refs gref(m.graphs);

  // Version 1 unless the model uses what version 2 added (methods, fqn).
  bool v2 = !m.methods.empty();
  for (const Tensor& t : m.tensors) v2 |= !t.fqn.empty();
  std::string out = "{\n  \"format\": \"memplan-graph\",\n  \"version\": ";
  out += v2 ? "2" : "1";
  out += ",\n  \"name\": " + dump(textJson(m.name));
  if (!m.methods.empty()) {
    out += ",\n  \"methods\": [";
    for (std::size_t i = 0; i < m.methods.size(); ++i) {
      ojson j;
      j["name"] = textJson(m.methods[i].name);
      j["graph"] = gref(m.methods[i].graph);
      out += i ? ",\n    " : "\n    ";
      out += dump(j);
    }
    out += "\n  ]";
  }
  out += ",\n  \"tensors\": [";
  for (std::size_t i = 0; i < m.tensors.size(); ++i) {
    const Tensor& t = m.tensors[i];
    ojson j;
    j["name"] = textJson(t.name);
    if (!t.shape.empty()) j["shape"] = t.shape;
    if (t.dtype != DType::Unknown) j["dtype"] = dtypeName(t.dtype);
    j["nbytes"] = t.nbytes;
    if (!t.device.isCpu0()) j["device"] = t.device.str();
    if (t.alignment != 0) j["alignment"] = t.alignment;
    if (t.mem_id) j["mem_id"] = *t.mem_id;
    if (t.offset) j["offset"] = *t.offset;
    if (t.kind != TensorKind::Activation) j["kind"] = tensorKindName(t.kind);
    if (!t.fqn.empty()) j["fqn"] = textJson(t.fqn);
    if (t.alias != AliasKind::None)
      j["alias"] = ojson{{"kind", aliasKindName(t.alias)}, {"of", tref(t.alias_of)}};
    if (t.dynamic_unbound) j["dynamic_unbound"] = true;
    if (t.graph != 0) j["graph"] = gref(t.graph);
    if (!t.gaps.empty()) {
      ojson gaps = ojson::array();
      for (const Gap& g : t.gaps) {
        ojson gap{{"nodes", {g.start, g.end}}};
        if (g.window) gap["bytes"] = {g.window->first, g.window->second};
        gaps.push_back(std::move(gap));
      }
      j["gaps"] = std::move(gaps);
    }
    out += i ? ",\n    " : "\n    ";
    out += dump(j);
  }
  out += m.tensors.empty() ? "],\n" : "\n  ],\n";

  // The reader derives a missing parent from the first node running the
  // graph; write it only when that guess would be wrong.
  std::vector<std::pair<GraphId, NodeId>> derived(m.graphs.size(), {kNone, kNone});
  for (GraphId g = 0; g < static_cast<GraphId>(m.graphs.size()); ++g)
    for (NodeId n = 0; n < static_cast<NodeId>(m.graphs[g].nodes.size()); ++n)
      for (GraphId s : m.graphs[g].nodes[n].subgraphs)
        if (s > 0 && static_cast<std::size_t>(s) < m.graphs.size() && derived[s].first == kNone)
          derived[s] = {g, n};

  const auto refs = [&](const std::vector<TensorId>& ids) {
    ojson a = ojson::array();
    for (TensorId t : ids) a.push_back(tref(t));
    return a;
  };
  out += "  \"graphs\": [";
  for (std::size_t g = 0; g < m.graphs.size(); ++g) {
    const Graph& graph = m.graphs[g];
    out += g ? ",\n    {\n" : "\n    {\n";
    out += "      \"name\": " + dump(textJson(graph.name)) + ",\n";
    if (g != 0 && std::pair(graph.parent, graph.parent_node) != derived[g]) {
      out += "      \"parent\": " +
             dump(graph.parent == kNone ? ojson(nullptr) : gref(graph.parent)) + ",\n";
      out += "      \"parent_node\": " +
             dump(graph.parent_node == kNone ? ojson(nullptr) : ojson(graph.parent_node)) + ",\n";
    }
    out += "      \"inputs\": " + dump(refs(graph.inputs)) + ",\n";
    out += "      \"outputs\": " + dump(refs(graph.outputs)) + ",\n";
    out += "      \"nodes\": [";
    for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
      const Node& node = graph.nodes[n];
      ojson j;
      if (!node.name.empty()) j["name"] = textJson(node.name);
      j["op"] = textJson(node.op);
      if (node.kind != NodeKind::Op) j["kind"] = nodeKindName(node.kind);
      j["inputs"] = refs(node.inputs);
      j["outputs"] = refs(node.outputs);
      if (!node.subgraphs.empty()) {
        ojson subs = ojson::array();
        for (GraphId s : node.subgraphs) subs.push_back(gref(s));
        j["subgraphs"] = std::move(subs);
      }
      out += n ? ",\n        " : "\n        ";
      out += dump(j);
    }
    out += graph.nodes.empty() ? "]\n    }" : "\n      ]\n    }";
  }
  out += m.graphs.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

}  // namespace memplan

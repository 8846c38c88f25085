// ONNX reader: ModelProto bytes -> memplan graph IR.
//
// Steps, in order:
//   1. Parse the bytes with protobuf under a byte limit and a recursion limit
//      (hostile files cannot blow the stack); the whole buffer must parse.
//   2. Check the opsets. An opset newer than the ONNX library this build
//      links runs with the library's newest schemas (the latest version <=
//      the opset); see opset_compat.h.
//   3. Verify every node against its operator schema (input/output counts,
//      attribute types), recursively into control-flow bodies. Shape
//      inference functions trust these, so this keeps them from reading
//      past the end of a malformed node. Under a newer opset this also
//      refuses, naming the op and both opsets, a node whose signature
//      changed after the library's version; Reduce* and Split at opset 18
//      are checked and sized by memplan's own rules instead.
//   4. Bind dynamic dimensions: --input-shape NAME=DIMS replaces the shape of
//      a graph input; --dim SYMBOL=VALUE (and symbols fixed by an input
//      shape) replace that dim_param everywhere it appears.
//   5. Run ONNX shape inference with data propagation (it also fills the
//      value_info of If/Loop/Scan bodies) on a scratch copy, alternating with
//      ShapeFolder (shape_folder.h): small integer shape arithmetic ONNX
//      cannot propagate is evaluated (fold_rules.h) and given back as
//      Constant nodes, and an If with a known condition passes on its live
//      branch's output types. A few rounds.
//   6. Walk the graphs with lexical scopes: initializers and Constant
//      outputs become constants, everything else activations; a body reading
//      an outer name refers to the outer TensorId (outer-scope capture).
//      Nodes come from the model as read, types from the scratch copy.
//   7. Size every tensor; the ones that stay unknown are reported together in
//      one error, or planned at --unknown-size-bytes. A branch that cannot
//      run for the bound shapes needs no storage (size 0). Strings and
//      sequence/map/optional values are owned by the runtime's heap, not an
//      arena: they are marked dynamic_unbound and left out of the plan.
//   8. validateModel().
//
// Views (Reshape, Flatten, Squeeze, Unsqueeze, Identity) alias their input
// only with ImportOptions::alias_views: ONNX leaves copy-vs-view to the
// runtime and many runtimes copy, so an aliasing plan would be wrong there.
//
// The folder: importer.cpp (these steps), opset_compat (opsets, schema
// checks, ops newer than the library), shape_folder + fold_rules (shape
// arithmetic, one rule per op), int_tensor (the small integer tensors it
// computes with), proto_util (helpers over the protobuf messages). No
// protobuf type leaves the folder.

#include <google/protobuf/io/coded_stream.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "import/onnx/int_tensor.h"
#include "import/onnx/node_checks.h"
#include "import/onnx/opset_compat.h"
#include "import/onnx/proto_util.h"
#include "import/onnx/shape_folder.h"
#include "memplan/import.h"

namespace memplan {
namespace onnx_import {
namespace {

// Unknown-size tensors named in the error message (when no input is left
// to bind: otherwise binding is the answer and the list is noise).
constexpr std::size_t kMaxListed = 1;
// Rounds of shape inference + folding (each can size more Shape inputs).
constexpr int kMaxFoldRounds = 8;

// Names visible at one graph level; lookups fall through to the outer scope.
struct Scope {
  const Scope* outer = nullptr;
  std::unordered_map<std::string, TensorId> names;
  std::optional<TensorId> find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->outer) {
      auto it = s->names.find(name);
      if (it != s->names.end()) return it->second;
    }
    return std::nullopt;
  }
};

// Worded as validateModel words it for every other importer.
std::string tooDeep(const ox::GraphProto& g, int depth) {
  return "graph '" + g.name() + "': control-flow bodies nested " + std::to_string(depth) +
         " deep, above the limit of " + std::to_string(kMaxGraphDepth);
}

// Bytes of a constant's TensorProto (dims are authoritative); checks that
// stored raw data matches, since shape inference reads it.
Bytes constantBytes(const std::string& source, const ox::TensorProto& tp, const std::string& where) {
  const auto fail = [&](const std::string& msg) { throw InputError(source + ": " + msg); };
  for (auto d : tp.dims())
    if (d < 0) fail(where + ": negative dimension " + std::to_string(d));
  const DType dtype = mapDType(tp.data_type());
  if (dtype == DType::String) {
    Bytes total = 0;
    for (const auto& s : tp.string_data()) {
      auto sum = checkedAdd(total, s.size());
      if (!sum) fail(where + ": size overflows");
      total = *sum;
    }
    return total;
  }
  if (dtype == DType::Unknown)
    fail(where + ": unsupported data type " + std::to_string(tp.data_type()));
  auto n = denseBytes({tp.dims().begin(), tp.dims().end()}, dtype);
  if (!n || *n > kMaxBytes) fail(where + ": size overflows");
  const bool external = tp.data_location() == ox::TensorProto::EXTERNAL;
  if (!external && tp.has_raw_data() && tp.raw_data().size() != *n)
    fail(where + ": raw_data has " + std::to_string(tp.raw_data().size()) +
         " bytes, shape and type need " + std::to_string(*n));
  return *n;
}

// Stages 1-5 on the protobuf: the model read, its opsets and nodes
// checked, dimensions bound, and a scratch twin with inferred types and
// folded constants. The graphs (stage 6 on) read what this leaves.
class ProtoPreparer {
 public:
  ProtoPreparer(const std::string& source, const ImportOptions& options)
      : source_(source), options_(options) {}

  void run(std::string_view bytes) {
    parse(bytes);
    checkOpsets();
    verifyNodes(model_.graph(), 0);
    dropWeightData(model_.mutable_graph(), 0);
    bindDimensions();
    inferShapes();
    // Before sizing: an output typed smaller than its node writes is refused.
    if (const std::string problem = checkInferredShapes(typed_.graph(), dead_bodies_);
        !problem.empty())
      fail(problem);
  }

  const ox::ModelProto& model() const { return model_; }
  const ox::ModelProto& typed() const { return typed_; }
  const std::set<const ox::GraphProto*>& deadBodies() const { return dead_bodies_; }
  const Opsets& opsets() const { return opsets_; }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw InputError(source_ + ": " + msg);
  }

  // ---- 1. parse -----------------------------------------------------------
  void parse(std::string_view bytes) {
    if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      fail("not an ONNX model (larger than 2 GiB, the protobuf limit)");
    google::protobuf::io::CodedInputStream in(
        reinterpret_cast<const std::uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
    in.SetTotalBytesLimit(static_cast<int>(bytes.size()));
    in.SetRecursionLimit(kProtoRecursionLimit);
    bool ok = false;
    try {
      ok = model_.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
    } catch (...) {
      ok = false;
    }
    if (!ok) fail("not an ONNX model (protobuf parse failed)");
    if (!model_.has_graph()) fail("not an ONNX model (no graph)");
    if (model_.graph().node_size() == 0 && model_.graph().input_size() == 0 &&
        model_.graph().output_size() == 0)
      fail("not an ONNX model (empty graph)");
  }

  // ---- 2. opsets ----------------------------------------------------------
  void checkOpsets() {
    std::set<std::string> used_domains;
    collectDomains(model_.graph(), used_domains, 0);
    if (std::string problem = readOpsets(model_, opsets_); !problem.empty()) fail(problem);
    if (!opsets_.model.count("") && used_domains.count(""))
      fail("opset_import has no entry for the default ONNX domain");
  }

  void collectDomains(const ox::GraphProto& g, std::set<std::string>& out, int depth) {
    if (depth > kMaxGraphDepth) fail(tooDeep(g, depth));
    for (const auto& n : g.node()) {
      out.insert(isDefaultDomain(n.domain()) ? "" : n.domain());
      for (const auto& a : n.attribute()) {
        if (a.has_g()) collectDomains(a.g(), out, depth + 1);
        for (const auto& sub : a.graphs()) collectDomains(sub, out, depth + 1);
      }
    }
  }

  // ---- 3. schemas ---------------------------------------------------------
  void verifyNodes(const ox::GraphProto& g, int depth) {
    for (const auto& init : g.initializer())
      constantBytes(source_, init, "initializer '" + init.name() + "'" +
                              (depth ? " in graph '" + g.name() + "'" : ""));
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& n = g.node(i);
      if (n.op_type() == "Constant")
        for (const auto& a : n.attribute())
          if (a.has_t()) constantBytes(source_, a.t(), "node '" + nodeLabel(n, i) + "' (Constant)");
      const std::string domain = isDefaultDomain(n.domain()) ? "" : n.domain();
      if (auto ver = opsets_.model.find(domain); ver != opsets_.model.end()) {
        const std::string problem = checkNode(n, nodeLabel(n, i), domain, ver->second, opsets_);
        if (!problem.empty()) fail(problem);
      }
      for (const auto& a : n.attribute()) {
        if (a.has_g()) verifyNodes(a.g(), depth + 1);
        for (const auto& sub : a.graphs()) verifyNodes(sub, depth + 1);
      }
    }
  }

  // Weight bytes are checked (verifyNodes) but never needed again: shape
  // inference reads only small shape tensors. Dropping them keeps the
  // scratch copy cheap.
  static void dropData(ox::TensorProto* t) {
    std::size_t n = 1;  // elements, saturating
    for (auto d : t->dims()) {
      if (d < 0) return;
      n = d > 0 && n > kMaxFoldElements / static_cast<std::size_t>(d)
              ? kMaxFoldElements + 1
              : n * static_cast<std::size_t>(d);
    }
    if (n <= kMaxFoldElements) return;  // small: shape inference may read it
    t->clear_raw_data();
    t->clear_float_data();
    t->clear_int32_data();
    t->clear_int64_data();
    t->clear_double_data();
    t->clear_uint64_data();
  }
  void dropWeightData(ox::GraphProto* g, int depth) {
    if (depth > kMaxGraphDepth) return;
    for (auto& init : *g->mutable_initializer()) dropData(&init);
    for (auto& n : *g->mutable_node())
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_t() && n.op_type() == "Constant") dropData(a.mutable_t());
        if (a.has_g()) dropWeightData(a.mutable_g(), depth + 1);
        for (auto& sub : *a.mutable_graphs()) dropWeightData(&sub, depth + 1);
      }
  }

  // ---- 4. dynamic dimensions ----------------------------------------------
  void bindDimensions() {
    auto* g = model_.mutable_graph();
    std::set<std::string> initializer_names;
    for (const auto& t : g->initializer()) initializer_names.insert(t.name());

    std::vector<std::string> input_names;
    for (const auto& vi : g->input())
      if (!initializer_names.count(vi.name())) input_names.push_back(vi.name());

    std::map<std::string, std::int64_t> dims = options_.dims;
    for (const auto& [name, shape] : options_.input_shapes) {
      ox::ValueInfoProto* vi = nullptr;
      for (auto& cand : *g->mutable_input())
        if (cand.name() == name && !initializer_names.count(name)) vi = &cand;
      if (!vi)
        fail("--input-shape: no graph input named '" + name + "' (inputs: " +
             joinNames(input_names) + ")");
      auto* type = vi->mutable_type();
      if (type->value_case() != ox::TypeProto::kTensorType &&
          type->value_case() != ox::TypeProto::VALUE_NOT_SET)
        fail("--input-shape: input '" + name + "' is not a tensor");
      auto* tt = type->mutable_tensor_type();
      if (tt->has_shape() && tt->shape().dim_size() != static_cast<int>(shape.size()))
        fail("--input-shape: input '" + name + "' has rank " +
             std::to_string(tt->shape().dim_size()) + ", got " + std::to_string(shape.size()) +
             " dims");
      std::vector<std::string> symbols(shape.size());
      if (tt->has_shape())
        for (std::size_t i = 0; i < shape.size(); ++i) {
          const auto& d = tt->shape().dim(static_cast<int>(i));
          symbols[i] = d.dim_param();
          // A dimension the model fixes cannot be rebound.
          if (d.has_dim_value() && d.dim_value() >= 0 && shape[i] >= 0 && d.dim_value() != shape[i])
            fail("--input-shape: input '" + name + "' dim " + std::to_string(i) + " is fixed at " +
                 std::to_string(d.dim_value()) + " by the model, got " + std::to_string(shape[i]));
        }
      tt->mutable_shape()->clear_dim();
      for (std::size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] < 0)
          fail("--input-shape: input '" + name + "' dim " + std::to_string(i) + " is negative");
        tt->mutable_shape()->add_dim()->set_dim_value(shape[i]);
        // A symbol fixed by an input shape takes that value everywhere.
        if (symbols[i].empty()) continue;
        auto [it, inserted] = dims.emplace(symbols[i], shape[i]);
        if (!inserted && it->second != shape[i])
          fail("--input-shape: input '" + name + "' sets dimension '" + symbols[i] + "' to " +
               std::to_string(shape[i]) + " but it is already " + std::to_string(it->second));
      }
    }

    std::set<std::string> seen_symbols;
    auto bind = [&](ox::TypeProto_Tensor& tt) {
      if (!tt.has_shape()) return;
      for (auto& d : *tt.mutable_shape()->mutable_dim()) {
        if (!d.has_dim_param()) continue;
        seen_symbols.insert(d.dim_param());
        auto it = dims.find(d.dim_param());
        if (it != dims.end()) d.set_dim_value(it->second);  // clears dim_param
      }
    };
    forEachGraphTensorType(g, bind);
    for (const auto& [sym, value] : options_.dims) {
      if (value < 0) fail("--dim " + sym + ": value is negative");
      if (!seen_symbols.count(sym))
        fail("--dim: no dimension named '" + sym + "' (symbols: " +
             joinNames({seen_symbols.begin(), seen_symbols.end()}) + ")");
    }
  }

  // ---- 5. shape inference -------------------------------------------------
  void inferShapes() {
    // The scratch copy takes folded values as Constant nodes; model_ keeps
    // the real nodes. Each round can size more Shape inputs, so repeat while
    // folding makes progress (bounded).
    typed_ = model_;
    if (opsets_.beyondLibrary("")) {
      auto* imp = typed_.add_opset_import();
      imp->set_domain(kNewerRuleDomain);
      imp->set_version(1);
      markNewerRules(typed_.mutable_graph(), opsets_.model.at(""));
    }
    ShapeFolder folder;
    for (int round = 0;; ++round) {
      ox::ShapeInferenceOptions opts(/*check_type=*/false, /*error_mode=*/0,
                                     /*enable_data_propagation=*/true);
      try {
        ox::shape_inference::InferShapes(typed_, ox::OpSchemaRegistry::Instance(), opts);
      } catch (const std::exception& e) {
        fail("shape inference failed: " + firstLine(e.what()));
      } catch (...) {
        fail("shape inference failed");
      }
      if (round == kMaxFoldRounds) break;
      folder.dead.clear();
      if (folder.fold(typed_.mutable_graph(), nullptr, 0) == 0) break;
    }
    dead_bodies_ = std::move(folder.dead);
  }

  const std::string& source_;
  const ImportOptions& options_;
  ox::ModelProto model_;   // as read, dimensions bound
  ox::ModelProto typed_;   // scratch twin: folded constants, inferred types
  std::set<const ox::GraphProto*> dead_bodies_;  // in typed_
  Opsets opsets_;
};

// Stages 6-7: the memplan Model built from a prepared protobuf.
class OnnxImporter {
 public:
  OnnxImporter(const std::string& source, const ImportOptions& options, const ProtoPreparer& proto)
      : source_(source),
        options_(options),
        model_(proto.model()),
        typed_(proto.typed()),
        dead_bodies_(proto.deadBodies()),
        opsets_(proto.opsets()) {}

  Model run() {
    out_.name = source_;
    Scope root;
    importGraph(model_.graph(), typed_.graph(), kNone, kNone, root, "", 0);
    sizeUnknown();
    if (options_.alias_views) markViews();
    validateModel(out_);  // names the file itself (Model::name)
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw InputError(source_ + ": " + msg);
  }

  // ---- 6. graphs ----------------------------------------------------------
  struct Unknown {
    TensorId id;
    std::string why;
  };

  TensorId addTensor(const std::string& name, GraphId graph) {
    Tensor t;
    t.name = name;
    t.graph = graph;
    out_.tensors.push_back(std::move(t));
    return static_cast<TensorId>(out_.tensors.size() - 1);
  }

  void define(Scope& scope, const std::string& name, TensorId id, const std::string& where) {
    if (!scope.names.emplace(name, id).second)
      fail("tensor '" + name + "' is defined twice (" + where + ")");
  }


  void sizeConstant(TensorId id, const ox::TensorProto& tp, const std::string& where) {
    Tensor& t = out_.tensors[id];
    t.kind = TensorKind::Constant;
    t.dtype = mapDType(tp.data_type());
    t.shape.assign(tp.dims().begin(), tp.dims().end());
    t.nbytes = constantBytes(source_, tp, where);
  }

  void sizeConstantNode(TensorId id, const ox::NodeProto& n, const std::string& where) {
    for (const auto& a : n.attribute()) {
      ox::TensorProto tp;
      const std::string& an = a.name();
      if (an == "value") {
        sizeConstant(id, a.t(), where);
        return;
      }
      if (an == "sparse_value") {
        // Sized dense: the runtime materializes the values at this shape.
        tp.mutable_dims()->CopyFrom(a.sparse_tensor().dims());
        tp.set_data_type(a.sparse_tensor().values().data_type());
      } else if (an == "value_float") {
        tp.set_data_type(1);
      } else if (an == "value_floats") {
        tp.add_dims(a.floats_size());
        tp.set_data_type(1);
      } else if (an == "value_int") {
        tp.set_data_type(7);
      } else if (an == "value_ints") {
        tp.add_dims(a.ints_size());
        tp.set_data_type(7);
      } else if (an == "value_string") {
        tp.set_data_type(8);
        tp.add_string_data(a.s());
      } else if (an == "value_strings") {
        tp.add_dims(a.strings_size());
        tp.set_data_type(8);
        for (const auto& s : a.strings()) tp.add_string_data(s);
      } else {
        continue;
      }
      sizeConstant(id, tp, where);
      return;
    }
    fail(where + ": Constant node has no value attribute");
  }

  // Sizes an activation from its (inferred) type, or records it as unknown.
  void sizeActivation(TensorId id, const ox::TypeProto* type, const std::string& producer) {
    Tensor& t = out_.tensors[id];
    std::string why;
    if (!type || type->value_case() == ox::TypeProto::VALUE_NOT_SET) {
      why = "type unknown";
    } else if (!type->has_tensor_type()) {
      // Sequence, map, optional or sparse value: the runtime's heap owns it.
      t.dynamic_unbound = true;
      return;
    } else {
      const auto& tt = type->tensor_type();
      t.dtype = mapDType(tt.elem_type());
      ShapeInfo s = shapeOf(tt);
      t.shape = s.dims;
      std::string shape_text = std::string(dtypeName(t.dtype)) + "[";
      for (std::size_t i = 0; i < s.text.size(); ++i) shape_text += (i ? "," : "") + s.text[i];
      shape_text += "]";
      if (t.dtype == DType::Unknown) {
        why = "element type unknown";
      } else if (t.dtype == DType::String) {
        t.dynamic_unbound = true;  // variable-length strings live on the runtime's heap
        return;
      } else if (!s.has_shape) {
        why = std::string(dtypeName(t.dtype)) + ", rank unknown";
        t.shape = {-1};  // unknown dims are -1; an unknown rank reads as [-1]
      } else if (!s.complete()) {
        why = shape_text;
      } else {
        auto n = denseBytes(t.shape, t.dtype);
        if (!n || *n > kMaxBytes)
          fail("tensor '" + t.name + "' " + shape_text + ": size overflows");
        t.nbytes = *n;
        return;
      }
    }
    // A branch that cannot run for these shapes needs no storage; ONNX often
    // cannot type it (a Squeeze of a dimension that is not 1).
    if (in_dead_body_) {
      t.nbytes = 0;
      return;
    }
    unknown_.push_back({id, t.name + " " + why + " from " + producer});
  }

  // Name -> best known type within one graph level. An inferred value_info
  // and a declared output may both exist; a complete shape wins.
  static std::unordered_map<std::string, const ox::TypeProto*> typeTable(
      const ox::GraphProto& g) {
    std::unordered_map<std::string, const ox::TypeProto*> types;
    auto offer = [&](const ox::ValueInfoProto& vi) {
      if (!vi.has_type()) return;
      auto [it, inserted] = types.emplace(vi.name(), &vi.type());
      if (inserted) return;
      if (!completeTensorType(it->second) && completeTensorType(&vi.type()))
        it->second = &vi.type();
    };
    for (const auto& vi : g.value_info()) offer(vi);
    for (const auto& vi : g.output()) offer(vi);
    for (const auto& vi : g.input()) offer(vi);
    return types;
  }

  // A control-flow body of a node: its attribute's name, its graph and the
  // graph's typed twin.
  struct Body {
    std::string name;
    const ox::GraphProto* g;
    const ox::GraphProto* typed;
  };
  using TypeTable = std::unordered_map<std::string, const ox::TypeProto*>;

  // `g` gives the nodes, `typed` (its scratch twin) the inferred types.
  GraphId importGraph(const ox::GraphProto& g, const ox::GraphProto& typed, GraphId parent,
                      NodeId parent_node,
                      Scope& scope, const std::string& fallback_name, int depth) {
    if (depth > kMaxGraphDepth) fail(tooDeep(g, depth));
    const GraphId gid = addGraph(g, parent, parent_node, fallback_name);
    const TypeTable types = typeTable(typed);
    const std::string in_graph = gid == 0 ? "" : " in graph '" + out_.graphs[gid].name + "'";
    importGraphInputs(g, gid, scope, in_graph);
    for (int i = 0; i < g.node_size(); ++i) importNode(g, typed, i, gid, scope, types, in_graph, depth);
    for (const auto& vi : g.output()) {
      auto id = scope.find(vi.name());
      if (!id) fail("graph output '" + vi.name() + "'" + in_graph + " is never produced");
      out_.graphs[gid].outputs.push_back(*id);
    }
    return gid;
  }

  // A new graph, named once among the model's graphs.
  GraphId addGraph(const ox::GraphProto& g, GraphId parent, NodeId parent_node,
                   const std::string& fallback_name) {
    const GraphId gid = static_cast<GraphId>(out_.graphs.size());
    Graph graph;
    graph.name = g.name().empty() ? (fallback_name.empty() ? "main" : fallback_name) : g.name();
    // Exporters reuse body names ("sub_graph" in both branches); reports
    // and graph JSON need each graph named once.
    const std::string base = graph.name;
    for (int k = 2; !graph_names_.insert(graph.name).second; ++k)
      graph.name = base + "#" + std::to_string(k);
    graph.parent = parent;
    graph.parent_node = parent_node;
    out_.graphs.push_back(std::move(graph));
    return gid;
  }

  // Initializers (dense and sparse) and the graph's inputs.
  void importGraphInputs(const ox::GraphProto& g, GraphId gid, Scope& scope, const std::string& in_graph) {
    for (const auto& init : g.initializer()) {
      const std::string where = "initializer '" + init.name() + "'" + in_graph;
      const TensorId id = addTensor(init.name(), gid);
      sizeConstant(id, init, where);
      define(scope, init.name(), id, where);
    }
    for (const auto& init : g.sparse_initializer()) {
      const std::string& name = init.values().name();
      const std::string where = "sparse initializer '" + name + "'" + in_graph;
      ox::TensorProto tp;
      tp.mutable_dims()->CopyFrom(init.dims());
      tp.set_data_type(init.values().data_type());
      const TensorId id = addTensor(name, gid);
      sizeConstant(id, tp, where);
      define(scope, name, id, where);
    }
    for (const auto& vi : g.input()) {
      if (scope.names.count(vi.name())) {
        // An input with an initializer of the same name: a constant (with a
        // default value) that is not planned as an input.
        continue;
      }
      const TensorId id = addTensor(vi.name(), gid);
      sizeActivation(id, &vi.type(), "graph input" + in_graph);
      define(scope, vi.name(), id, "graph input" + in_graph);
      out_.graphs[gid].inputs.push_back(id);
    }
  }

  // Node i of `g`, its bodies (imported in turn) and its outputs.
  void importNode(const ox::GraphProto& g, const ox::GraphProto& typed, int i, GraphId gid, Scope& scope,
                  const TypeTable& types, const std::string& in_graph, int depth) {
    const auto& n = g.node(i);
    const std::string label = nodeLabel(n, static_cast<std::size_t>(i));
    const std::string where = "node '" + label + "' (" + opName(n) + ")" + in_graph;
    Node node;
    node.name = label;
    node.op = opName(n);
    for (const auto& name : n.input()) {
      if (name.empty()) continue;  // omitted optional input
      auto id = scope.find(name);
      if (!id) fail(where + ": input '" + name + "' is not defined before it is used");
      node.inputs.push_back(*id);
    }
    const NodeId nid = static_cast<NodeId>(out_.graphs[gid].nodes.size());
    out_.graphs[gid].nodes.push_back(node);

    const std::vector<Body> bodies = bodiesOf(n, typed, i);
    const NodeKind kind = bodies.empty() ? NodeKind::Op : kindOf(n);
    std::vector<GraphId> subgraphs;
    for (const Body& body : bodies) {
      Scope inner;
      inner.outer = &scope;
      const bool was_dead = in_dead_body_;
      in_dead_body_ = was_dead || dead_bodies_.count(body.typed) > 0;
      subgraphs.push_back(importGraph(*body.g, *body.typed, gid, nid, inner,
                                      label + "." + body.name, depth + 1));
      in_dead_body_ = was_dead;
    }

    std::vector<TensorId> outputs;
    for (int k = 0; k < n.output_size(); ++k) {
      const std::string& name = n.output(k);
      if (name.empty()) continue;  // omitted optional output
      const TensorId id = addTensor(name, gid);
      if (n.op_type() == "Constant" && isDefaultDomain(n.domain())) {
        sizeConstantNode(id, n, where);
      } else {
        auto it = types.find(name);
        sizeActivation(id, it == types.end() ? nullptr : it->second, where);
      }
      define(scope, name, id, where);
      outputs.push_back(id);
    }
    Node& stored = out_.graphs[gid].nodes[nid];
    stored.kind = kind;
    stored.subgraphs = std::move(subgraphs);
    stored.outputs = std::move(outputs);
  }

  // Node i's control-flow bodies, in the order NodeKind documents.
  std::vector<Body> bodiesOf(const ox::NodeProto& n, const ox::GraphProto& typed, int i) const {
    std::vector<Body> bodies;
    // Folding never rewrites nodes with bodies, so the twin lines up.
    const ox::NodeProto* tn = i < typed.node_size() ? &typed.node(i) : nullptr;
    if (tn && (tn->op_type() != n.op_type() || tn->attribute_size() != n.attribute_size()))
      tn = nullptr;
    for (int ai = 0; ai < n.attribute_size(); ++ai) {
      const auto& a = n.attribute(ai);
      const auto* ta = tn ? &tn->attribute(ai) : nullptr;
      if (a.has_g())
        bodies.push_back({a.name(), &a.g(), ta && ta->has_g() ? &ta->g() : &a.g()});
      for (int k = 0; k < a.graphs_size(); ++k)
        bodies.push_back({a.name() + "_" + std::to_string(k), &a.graphs(k),
                          ta && ta->graphs_size() == a.graphs_size() ? &ta->graphs(k)
                                                                     : &a.graphs(k)});
    }
    if (!bodies.empty() && isDefaultDomain(n.domain()) && n.op_type() == "If")
      std::stable_sort(bodies.begin(), bodies.end(), [](const Body& a, const Body& b) {
        return (a.name == "then_branch") > (b.name == "then_branch");
      });
    return bodies;
  }

  // The kind of a node with bodies.
  static NodeKind kindOf(const ox::NodeProto& n) {
    const bool std_op = isDefaultDomain(n.domain());
    if (std_op && n.op_type() == "If") return NodeKind::Cond;
    if (std_op && n.op_type() == "Loop") return NodeKind::While;
    if (std_op && n.op_type() == "Scan") return NodeKind::Scan;
    if (std_op && n.op_type() == "SequenceMap") return NodeKind::Map;
    return NodeKind::Call;
  }

  // ---- 7. unknown sizes ---------------------------------------------------
  // One short line: what to bind (the main graph's inputs whose shape is not
  // fully known), then a hint with the flags to write. Only when every input
  // is bound does it list the tensors still unsized, and why.
  void sizeUnknown() {
    if (unknown_.empty()) return;
    if (options_.unknown_size_bytes > 0) {
      if (options_.unknown_size_bytes > kMaxBytes) fail("--unknown-size-bytes is too large");
      // Planned at the user's upper bound; the runtime must not exceed it.
      for (const auto& u : unknown_) out_.tensors[u.id].nbytes = options_.unknown_size_bytes;
      return;
    }
    std::string msg = "cannot size " + std::to_string(unknown_.size()) + " tensor" +
                      (unknown_.size() == 1 ? "" : "s") + ": ";
    const Unbound unbound = unboundInputs();
    if (!unbound.what.empty()) {
      const bool marks = unbound.flags.find('?') != std::string::npos;
      msg += "bind " + unbound.what + " (hint: " + unbound.flags +
             (marks ? ", a number for each ?" : "") + (unbound.named ? ", or --dim SYMBOL=N" : "") +
             "; --unknown-size-bytes N plans them at an upper bound instead)";
      fail(msg);
    }
    for (std::size_t i = 0; i < unknown_.size() && i < kMaxListed; ++i)
      msg += (i ? "; " : "") + unknown_[i].why;
    if (unknown_.size() > kMaxListed)
      msg += "; and " + std::to_string(unknown_.size() - kMaxListed) + " more";
    msg += " (hint: --dim SYMBOL=N binds a named dimension; --unknown-size-bytes N plans them at "
           "an upper bound)";
    if (const std::string why = strictInferenceError(); !why.empty())
      msg += "; ONNX shape inference: " + why;
    fail(msg);
  }

  // The main graph's inputs with a dimension not known (at most a few):
  // "input 'x' [N,3,?,?]", the flags that bind them
  // ("--input-shape x=?x3x?x?"), and whether any dimension has a name
  // (--dim binds those).
  struct Unbound {
    std::string what, flags;
    bool named = false;
  };
  Unbound unboundInputs() const {
    Unbound out;
    std::size_t listed = 0, more = 0;
    std::set<std::string> initializers;
    for (const auto& t : model_.graph().initializer()) initializers.insert(t.name());
    for (const auto& vi : model_.graph().input()) {
      if (initializers.count(vi.name()) || !vi.type().has_tensor_type()) continue;
      const ShapeInfo shape = shapeOf(vi.type().tensor_type());
      if (shape.complete()) continue;
      if (listed == 3) {
        ++more;
        continue;
      }
      std::string dims, example;
      for (std::size_t k = 0; k < shape.text.size(); ++k) {
        const std::string& t = shape.text[k];
        const bool known = k < shape.dims.size() && shape.dims[k] >= 0;
        out.named |= !known && t != "?";
        dims += (k ? "," : "") + t;
        example += (k ? "x" : "") + (known ? t : std::string("?"));
      }
      if (!shape.has_shape) {
        dims = "rank unknown";
        example = "DIMS";
      }
      out.what += std::string(listed ? ", " : "") + "input '" + vi.name() + "' [" + dims + "]";
      out.flags += std::string(listed ? " " : "") + "--input-shape " + vi.name() + "=" + example;
      ++listed;
    }
    if (more) out.what += " and " + std::to_string(more) + " more inputs";
    return out;
  }

  // The first error ONNX shape inference reports in strict mode (the normal
  // run skips nodes it cannot type), as one line; "" if none.
  std::string strictInferenceError() const {
    ox::ModelProto strict = typed_;
    ox::ShapeInferenceOptions opts(/*check_type=*/false, /*error_mode=*/1,
                                   /*enable_data_propagation=*/true);
    try {
      ox::shape_inference::InferShapes(strict, ox::OpSchemaRegistry::Instance(), opts);
    } catch (const std::exception& e) {
      return firstLine(e.what());
    } catch (...) {
      return "unknown error";
    }
    return "";
  }

  // Pure view ops share their input's bytes. Only an activation of the same
  // graph, of the same size, is aliased; anything else stays a copy.
  void markViews() {
    static const std::set<std::string> kViewOps = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                                   "Identity"};
    std::set<TensorId> unknown_ids;
    for (const auto& u : unknown_) unknown_ids.insert(u.id);
    for (auto& graph : out_.graphs) {
      for (const auto& node : graph.nodes) {
        if (node.kind != NodeKind::Op || !kViewOps.count(node.op)) continue;
        if (node.inputs.empty() || node.outputs.empty()) continue;
        const TensorId base = node.inputs[0];
        const TensorId view = node.outputs[0];
        const Tensor& b = out_.tensors[base];
        Tensor& v = out_.tensors[view];
        if (b.kind != TensorKind::Activation || v.kind != TensorKind::Activation) continue;
        if (b.dynamic_unbound || v.dynamic_unbound) continue;
        if (b.graph != v.graph || b.nbytes != v.nbytes || b.dtype != v.dtype) continue;
        if (unknown_ids.count(base) || unknown_ids.count(view)) continue;
        v.alias = AliasKind::View;
        v.alias_of = base;
      }
    }
  }

  const std::string& source_;
  const ImportOptions& options_;
  const ox::ModelProto& model_;  // as read, dimensions bound
  const ox::ModelProto& typed_;  // scratch twin: folded constants, inferred types
  const std::set<const ox::GraphProto*>& dead_bodies_;  // in typed_
  const Opsets& opsets_;
  bool in_dead_body_ = false;  // importing a branch that never runs
  std::set<std::string> graph_names_;
  std::vector<Unknown> unknown_;
  Model out_;
};

}  // namespace
}  // namespace onnx_import

Model importOnnx(std::string_view bytes, const std::string& source_name,
                 const ImportOptions& options) {
  onnx_import::ProtoPreparer proto(source_name, options);
  proto.run(bytes);
  return onnx_import::OnnxImporter(source_name, options, proto).run();
}

}  // namespace memplan

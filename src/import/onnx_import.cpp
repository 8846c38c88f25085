// ONNX reader: ModelProto bytes -> memplan graph IR.
//
// Steps, in order:
//   1. Parse the bytes with protobuf under a byte limit and a recursion limit
//      (hostile files cannot blow the stack); the whole buffer must parse.
//   2. Check the opsets. An opset newer than the ONNX library this build
//      links runs with the library's newest schemas (the latest version <=
//      the opset); see "Operators newer than the ONNX library" below.
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
//      ShapeFolder: small integer shape arithmetic ONNX cannot propagate is
//      evaluated and given back as Constant nodes, and an If with a known
//      condition passes on its live branch's output types. A few rounds.
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
// No protobuf type leaves this file.

#include <google/protobuf/io/coded_stream.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "memplan/import.h"

namespace memplan {
namespace {

namespace ox = ONNX_NAMESPACE;

// Message nesting allowed while parsing. A control-flow body costs three
// levels (NodeProto > AttributeProto > GraphProto); real models use < 30.
constexpr int kProtoRecursionLimit = 100;
// Nested bodies accepted (If inside Loop inside If ...).
constexpr int kMaxGraphDepth = 24;
// Unknown-size tensors named in the error message.
constexpr std::size_t kMaxListed = 10;
// Rounds of shape inference + folding (each can size more Shape inputs).
constexpr int kMaxFoldRounds = 8;

// Keeps the first line of an exception message (ONNX errors span lines).
std::string firstLine(std::string_view s) {
  const auto nl = s.find('\n');
  std::string line(s.substr(0, nl));
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

// ONNX TensorProto.DataType -> memplan DType. ONNX 1.12 headers predate the
// float8/int4 codes, so they are matched by number.
DType mapDType(std::int32_t t) {
  switch (t) {
    case 1: return DType::Float32;
    case 2: return DType::UInt8;
    case 3: return DType::Int8;
    case 4: return DType::UInt16;
    case 5: return DType::Int16;
    case 6: return DType::Int32;
    case 7: return DType::Int64;
    case 8: return DType::String;
    case 9: return DType::Bool;
    case 10: return DType::Float16;
    case 11: return DType::Float64;
    case 12: return DType::UInt32;
    case 13: return DType::UInt64;
    case 14: return DType::Complex64;
    case 15: return DType::Complex128;
    case 16: return DType::BFloat16;
    case 17: return DType::Float8E4M3;  // FLOAT8E4M3FN
    case 18: return DType::Float8E4M3;  // FLOAT8E4M3FNUZ
    case 19: return DType::Float8E5M2;  // FLOAT8E5M2
    case 20: return DType::Float8E5M2;  // FLOAT8E5M2FNUZ
    case 21: return DType::UInt4;
    case 22: return DType::Int4;
    // FLOAT4E2M1 and FLOAT8E8M0 have no DType of their own; they are sized
    // by their bit width, which is all planning needs.
    case 23: return DType::UInt4;
    case 24: return DType::UInt8;
    default: return DType::Unknown;
  }
}

bool isDefaultDomain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

std::string opName(const ox::NodeProto& n) {
  return isDefaultDomain(n.domain()) ? n.op_type() : n.domain() + "::" + n.op_type();
}

std::string nodeLabel(const ox::NodeProto& n, std::size_t index) {
  return n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
}

// A shape as far as it is known: dims < 0 are unknown.
struct ShapeInfo {
  bool has_shape = false;         // rank known
  std::vector<std::int64_t> dims;
  std::vector<std::string> text;  // per dim: value, symbol or "?"
  bool complete() const {
    return has_shape && std::all_of(dims.begin(), dims.end(), [](auto d) { return d >= 0; });
  }
};

ShapeInfo shapeOf(const ox::TypeProto_Tensor& tt) {
  ShapeInfo s;
  if (!tt.has_shape()) return s;
  s.has_shape = true;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0) {
      s.dims.push_back(d.dim_value());
      s.text.push_back(std::to_string(d.dim_value()));
    } else {
      s.dims.push_back(-1);
      s.text.push_back(d.has_dim_param() && !d.dim_param().empty() ? d.dim_param() : "?");
    }
  }
  return s;
}

// Visits every TypeProto of a graph and its bodies (inputs, outputs,
// value_info), descending into sequence/optional/map element types.
template <class F>
void forEachTensorType(ox::TypeProto* t, F& f, int depth = 0) {
  if (depth > kProtoRecursionLimit) return;
  if (t->has_tensor_type()) f(*t->mutable_tensor_type());
  if (t->has_sequence_type() && t->sequence_type().has_elem_type())
    forEachTensorType(t->mutable_sequence_type()->mutable_elem_type(), f, depth + 1);
  if (t->has_optional_type() && t->optional_type().has_elem_type())
    forEachTensorType(t->mutable_optional_type()->mutable_elem_type(), f, depth + 1);
  if (t->has_map_type() && t->map_type().has_value_type())
    forEachTensorType(t->mutable_map_type()->mutable_value_type(), f, depth + 1);
}

template <class F>
void forEachGraphTensorType(ox::GraphProto* g, F& f, int depth = 0) {
  if (depth > kMaxGraphDepth) return;
  for (auto* list : {g->mutable_input(), g->mutable_output(), g->mutable_value_info()})
    for (auto& vi : *list)
      if (vi.has_type()) forEachTensorType(vi.mutable_type(), f);
  for (auto& n : *g->mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) forEachGraphTensorType(a.mutable_g(), f, depth + 1);
      for (auto& sub : *a.mutable_graphs()) forEachGraphTensorType(&sub, f, depth + 1);
    }
}

std::string joinNames(const std::vector<std::string>& names, std::size_t max = 20) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < max; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > max) s += ", ...";
  return s.empty() ? "(none)" : s;
}

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

// ---------------------------------------------------------------------------
// Shape arithmetic folding.
//
// Exporters compute shapes at run time (Shape -> Gather -> Concat -> Reshape,
// PyTorch's pad list built with ConstantOfShape/Slice/Transpose). ONNX's data
// propagation covers only a few of these ops and does not cross into
// control-flow bodies, so tensors downstream stay unsized. This pass
// evaluates small integer tensors whose inputs are known (constants, or
// shapes already inferred) and hands the values to shape inference as
// Constant nodes in a scratch copy of the model; the import itself keeps the
// original nodes. Budgets bound the work: elements per tensor and in total.

constexpr std::size_t kMaxFoldElements = 4096;
constexpr std::size_t kFoldBudget = std::size_t{1} << 20;  // elements, whole model

bool isIntType(int t) {
  return t == 2 || t == 3 || t == 4 || t == 5 || t == 6 || t == 7 || t == 9 || t == 12 ||
         t == 13;
}

unsigned intTypeBytes(int t) {
  switch (t) {
    case 2: case 3: case 9: return 1;
    case 4: case 5: return 2;
    case 6: case 12: return 4;
    default: return 8;
  }
}

// Wraps a value to the width and signedness of ONNX integer type `t`.
std::int64_t wrapTo(int t, std::int64_t v) {
  switch (t) {
    case 2: return static_cast<std::uint8_t>(v);
    case 3: return static_cast<std::int8_t>(v);
    case 4: return static_cast<std::uint16_t>(v);
    case 5: return static_cast<std::int16_t>(v);
    case 6: return static_cast<std::int32_t>(v);
    case 9: return v != 0;
    case 12: return static_cast<std::uint32_t>(v);
    default: return v;
  }
}

struct IntTensor {
  int elem = 7;                      // ONNX data type, integer or bool
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> v;       // row-major values
};

std::optional<std::size_t> elementCount(const std::vector<std::int64_t>& dims) {
  std::size_t n = 1;
  for (auto d : dims) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > kMaxFoldElements / static_cast<std::size_t>(d)) return std::nullopt;
    n *= static_cast<std::size_t>(d);
  }
  return n;
}

std::optional<IntTensor> fromProto(const ox::TensorProto& tp) {
  if (!isIntType(tp.data_type()) || tp.data_location() == ox::TensorProto::EXTERNAL)
    return std::nullopt;
  IntTensor t;
  t.elem = tp.data_type();
  t.dims.assign(tp.dims().begin(), tp.dims().end());
  auto n = elementCount(t.dims);
  if (!n) return std::nullopt;
  if (tp.has_raw_data()) {
    const unsigned w = intTypeBytes(t.elem);
    const std::string& raw = tp.raw_data();
    if (raw.size() != *n * w) return std::nullopt;
    for (std::size_t i = 0; i < *n; ++i) {
      std::uint64_t u = 0;
      for (unsigned b = 0; b < w; ++b)
        u |= static_cast<std::uint64_t>(static_cast<unsigned char>(raw[i * w + b])) << (8 * b);
      t.v.push_back(wrapTo(t.elem, static_cast<std::int64_t>(u)));
    }
  } else if (t.elem == 7) {
    t.v.assign(tp.int64_data().begin(), tp.int64_data().end());
  } else if (t.elem == 12 || t.elem == 13) {
    for (auto u : tp.uint64_data()) t.v.push_back(wrapTo(t.elem, static_cast<std::int64_t>(u)));
  } else {
    for (auto x : tp.int32_data()) t.v.push_back(wrapTo(t.elem, x));
  }
  if (t.v.size() != *n) return std::nullopt;
  return t;
}

ox::TensorProto toProto(const IntTensor& t) {
  ox::TensorProto tp;
  tp.set_data_type(t.elem);
  for (auto d : t.dims) tp.add_dims(d);
  for (auto x : t.v) {
    if (t.elem == 7) tp.add_int64_data(x);
    else if (t.elem == 12 || t.elem == 13) tp.add_uint64_data(static_cast<std::uint64_t>(x));
    else tp.add_int32_data(static_cast<std::int32_t>(x));
  }
  return tp;
}

std::vector<std::size_t> stridesOf(const std::vector<std::int64_t>& dims) {
  std::vector<std::size_t> s(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * static_cast<std::size_t>(dims[i]);
  return s;
}

// Calls f(out_flat, index) for every multi-index of `dims`, row-major.
template <class F>
void forEachIndex(const std::vector<std::int64_t>& dims, F f) {
  auto n = elementCount(dims);
  if (!n || *n == 0) return;
  std::vector<std::int64_t> idx(dims.size(), 0);
  for (std::size_t flat = 0; flat < *n; ++flat) {
    f(flat, idx);
    for (std::size_t k = dims.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
}

// numpy broadcasting of several inputs; f(values) -> output value.
template <class F>
std::optional<IntTensor> broadcast(const std::vector<const IntTensor*>& in, int elem, F f) {
  std::size_t rank = 0;
  for (const auto* t : in) rank = std::max(rank, t->dims.size());
  IntTensor out;
  out.elem = elem;
  out.dims.assign(rank, 1);
  for (const auto* t : in)
    for (std::size_t k = 0; k < t->dims.size(); ++k) {
      auto& o = out.dims[rank - t->dims.size() + k];
      const auto d = t->dims[k];
      if (d == o || d == 1) continue;
      if (o != 1) return std::nullopt;
      o = d;
    }
  auto n = elementCount(out.dims);
  if (!n) return std::nullopt;
  std::vector<std::vector<std::size_t>> strides;
  for (const auto* t : in) {
    auto s = stridesOf(t->dims);
    std::vector<std::size_t> full(rank, 0);
    for (std::size_t k = 0; k < t->dims.size(); ++k)
      if (t->dims[k] != 1) full[rank - t->dims.size() + k] = s[k];
    strides.push_back(std::move(full));
  }
  out.v.resize(*n);
  std::vector<std::int64_t> args(in.size());
  bool ok = true;
  forEachIndex(out.dims, [&](std::size_t flat, const std::vector<std::int64_t>& idx) {
    for (std::size_t i = 0; i < in.size(); ++i) {
      std::size_t off = 0;
      for (std::size_t k = 0; k < rank; ++k) off += static_cast<std::size_t>(idx[k]) * strides[i][k];
      args[i] = in[i]->v[off];
    }
    auto r = f(args);
    if (!r) ok = false;
    else out.v[flat] = wrapTo(elem, *r);
  });
  if (!ok) return std::nullopt;
  return out;
}

std::int64_t attrInt(const ox::NodeProto& n, const std::string& name, std::int64_t fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name && a.type() == ox::AttributeProto::INT) return a.i();
  return fallback;
}
const ox::AttributeProto* attrOf(const ox::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

// Normalizes a possibly negative axis; nullopt when out of range.
std::optional<std::size_t> axisOf(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

// ---------------------------------------------------------------------------
// Operators newer than the ONNX library.
//
// A model whose opset is newer than the library runs with the newest schemas
// the library has. That is right for ops whose newer versions only added
// types; a node using a signature added later fails the schema check and is
// refused with a hint. Reduce* and Split changed at opset 18 in ways the old
// shape inference would get silently wrong (axes moved to an input;
// num_outputs), so their nodes never reach it: the scratch copy marks them
// with kNewerRuleDomain, which ONNX skips, and ShapeFolder sizes their
// outputs by the opset-18 rule. A few ops added after opset 17 whose output
// is shaped like their input (Gelu, Mish, GroupNormalization, BitwiseNot)
// take the same path; other unknown ops are refused by name.

constexpr const char* kNewerRuleDomain = "memplan.newer";
constexpr int kNewerRuleOpset = 18;

bool isReduceWithAxesInput(const std::string& op) {
  static const std::set<std::string> kOps = {
      "ReduceL1",  "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
      "ReduceMean", "ReduceMin", "ReduceProd",  "ReduceSumSquare"};
  return kOps.count(op) > 0;
}

// Ops added after opset 17 whose output has the shape and type of input 0.
struct SameShapeOp {
  const char* op;
  int since;          // opset that added the op
  int min_inputs, max_inputs;
  const char* attrs;  // "name:TYPE,..." allowed attributes
  const char* form;   // for the error text
};
constexpr SameShapeOp kSameShapeOps[] = {
    {"Mish", 18, 1, 1, "", "must have one input, one output and no attributes"},
    {"BitwiseNot", 18, 1, 1, "", "must have one input, one output and no attributes"},
    {"GroupNormalization", 18, 3, 3, "epsilon:FLOAT,num_groups:INT,stash_type:INT",
     "must have inputs (X, scale, bias), one output and attributes epsilon, num_groups, "
     "stash_type"},
    {"Gelu", 20, 1, 1, "approximate:STRING",
     "must have one input, one output and a STRING attribute approximate"},
};

const SameShapeOp* sameShapeOp(const ox::NodeProto& n, int opset) {
  for (const auto& op : kSameShapeOps)
    if (n.op_type() == op.op && opset >= op.since) return &op;
  return nullptr;
}

// Sized by memplan's own rule at this default-domain opset.
bool newerOpRule(const ox::NodeProto& n, int opset) {
  return (opset >= kNewerRuleOpset &&
          (isReduceWithAxesInput(n.op_type()) || n.op_type() == "Split")) ||
         sameShapeOp(n, opset) != nullptr;
}

// Every attribute of `n` is one of `allowed` ("name:TYPE,..."), with that type.
bool attrsAllowed(const ox::NodeProto& n, std::string_view allowed) {
  for (const auto& a : n.attribute()) {
    const std::string entry =
        a.name() + ":" + ox::AttributeProto::AttributeType_Name(a.type());
    bool ok = false;
    for (std::size_t pos = 0; pos <= allowed.size() && !ok;) {
      const auto end = std::min(allowed.find(',', pos), allowed.size());
      ok = allowed.substr(pos, end - pos) == entry;
      pos = end + 1;
    }
    if (!ok) return false;
  }
  return true;
}

// Why a default-domain node of an opset newer than the library cannot be
// taken; nullptr when it can (as far as this check goes).
const char* newerOpProblem(const ox::NodeProto& n, int opset) {
  if (opset >= 20 && n.op_type() == "DFT")
    return "takes 'axis' as an input with a new default; memplan's ONNX library knows this op "
           "only up to opset 17, whose shape rule differs";
  if (!newerOpRule(n, opset)) return nullptr;
  if (const SameShapeOp* op = sameShapeOp(n, opset)) {
    if (n.input_size() < op->min_inputs || n.input_size() > op->max_inputs ||
        n.output_size() != 1 || !attrsAllowed(n, op->attrs))
      return op->form;
    return nullptr;
  }
  if (n.op_type() == "Split") {
    if (n.input_size() < 1 || n.input_size() > 2 || n.output_size() < 1 ||
        !attrsAllowed(n, "axis:INT,num_outputs:INT"))
      return "must have inputs (input, split?), outputs and INT attributes axis, num_outputs";
    if (n.input_size() == 2 && !n.input(1).empty() && attrOf(n, "num_outputs"))
      return "sets both the 'split' input and 'num_outputs'";
    return nullptr;
  }
  if (n.input_size() < 1 || n.input_size() > 2 || n.output_size() != 1 ||
      !attrsAllowed(n, "keepdims:INT,noop_with_empty_axes:INT"))
    return "takes 'axes' as an input: it must have inputs (data, axes?), one output and INT "
           "attributes keepdims, noop_with_empty_axes";
  return nullptr;
}

// Attributes added after opset 17 that leave the output shape as the older
// version computes it: a node using them is checked without them.
bool shapeNeutralNewAttr(const ox::NodeProto& n, const ox::AttributeProto& a, int opset) {
  const std::string& op = n.op_type();
  if (op == "Resize" && opset >= 18) {
    if (a.name() == "antialias") return a.type() == ox::AttributeProto::INT;
    if (a.name() == "keep_aspect_ratio_policy")  // the default keeps the old rule
      return a.type() == ox::AttributeProto::STRING && a.s() == "stretch";
  }
  if ((op == "Cast" || op == "CastLike" || op == "QuantizeLinear") && opset >= 19)
    return a.name() == "saturate" && a.type() == ox::AttributeProto::INT;
  return false;
}

// What changed in an op after the library's version, for the error text
// ("" when memplan does not know).
std::string changeHint(const std::string& op) {
  if (op == "Pad") return "takes 'axes' as an input";
  if (op == "Resize") return "takes new attributes (antialias, axes, keep_aspect_ratio_policy)";
  if (op == "Cast" || op == "CastLike" || op == "QuantizeLinear")
    return "takes new attributes (saturate, output_dtype, block_size)";
  if (op == "DequantizeLinear") return "takes a new attribute (block_size)";
  if (op == "AveragePool" || op == "LpPool") return "takes new attributes (ceil_mode, dilations)";
  return "";
}

class ShapeFolder {
 public:
  struct Scope {
    const Scope* outer = nullptr;
    std::unordered_map<std::string, IntTensor> values;
    std::unordered_map<std::string, const ox::TypeProto*> types;
    const IntTensor* value(const std::string& name) const {
      for (const Scope* s = this; s; s = s->outer) {
        auto it = s->values.find(name);
        if (it != s->values.end()) return &it->second;
        if (s->types.count(name)) return nullptr;  // defined here, not constant
      }
      return nullptr;
    }
    const ox::TypeProto* type(const std::string& name) const {
      for (const Scope* s = this; s; s = s->outer) {
        auto it = s->types.find(name);
        if (it != s->types.end()) return it->second;
      }
      return nullptr;
    }
  };

  // Folds what it can in `g` (and its bodies); returns how many nodes became
  // Constant nodes.
  std::size_t fold(ox::GraphProto* g, const Scope* outer, int depth) {
    if (depth > kMaxGraphDepth) return 0;
    Scope scope;
    scope.outer = outer;
    for (const auto* list : {&g->input(), &g->value_info(), &g->output()})
      for (const auto& vi : *list)
        if (vi.has_type()) scope.types.emplace(vi.name(), &vi.type());
    for (const auto& init : g->initializer()) {
      scope.types.emplace(init.name(), nullptr);
      if (auto t = fromProto(init)) remember(scope, init.name(), std::move(*t));
    }
    std::size_t changed = 0;
    for (auto& n : *g->mutable_node()) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) changed += fold(a.mutable_g(), &scope, depth + 1);
        for (auto& sub : *a.mutable_graphs()) changed += fold(&sub, &scope, depth + 1);
      }
      if (isDefaultDomain(n.domain()) && n.op_type() == "If") changed += selectBranch(g, n, scope);
      for (const auto& o : n.output()) scope.types.emplace(o, nullptr);
      if (n.domain() == kNewerRuleDomain) {
        changed += newerOpTypes(g, n, scope);
        continue;
      }
      if (!isDefaultDomain(n.domain()) || n.output_size() != 1 || n.output(0).empty()) continue;
      if (n.op_type() == "Constant") {
        std::optional<IntTensor> t;
        if (const auto* a = attrOf(n, "value"); a && a->has_t()) t = fromProto(a->t());
        if (const auto* a = attrOf(n, "value_int")) t = IntTensor{7, {}, {a->i()}};
        if (const auto* a = attrOf(n, "value_ints"); a && a->ints_size() <= int(kMaxFoldElements))
          t = IntTensor{7, {a->ints_size()}, {a->ints().begin(), a->ints().end()}};
        if (t) remember(scope, n.output(0), std::move(*t));
        continue;
      }
      std::optional<IntTensor> r;
      try {
        r = eval(n, scope);
      } catch (...) {
        r.reset();  // a malformed node is simply not folded
      }
      if (!r || !remember(scope, n.output(0), *r)) continue;
      // The scratch copy gets a Constant node in its place.
      const std::string out = n.output(0);
      const std::string name = n.name();
      n.Clear();
      n.set_name(name);
      n.set_op_type("Constant");
      n.add_output(out);
      auto* a = n.add_attribute();
      a->set_name("value");
      a->set_type(ox::AttributeProto::TENSOR);
      *a->mutable_t() = toProto(*r);
      ++changed;
    }
    return changed;
  }

 private:
  bool remember(Scope& scope, const std::string& name, IntTensor t) {
    if (budget_ < t.v.size()) return false;
    budget_ -= t.v.size();
    scope.values[name] = std::move(t);
    return true;
  }

  // Fully known shape of `name`, from the inferred types.
  static std::optional<std::vector<std::int64_t>> knownShape(const Scope& s,
                                                             const std::string& name) {
    const auto* t = s.type(name);
    if (!t || !t->has_tensor_type()) return std::nullopt;
    ShapeInfo info = shapeOf(t->tensor_type());
    if (!info.complete()) return std::nullopt;
    return info.dims;
  }

  // An If whose condition is known yields its live branch's outputs. ONNX
  // merges both branches and loses the shape when they differ (PyTorch's
  // "squeeze if the dim is 1" pattern), so the live branch's output types are
  // given to the parent as value_info for the next round.
  std::size_t selectBranch(ox::GraphProto* g, const ox::NodeProto& n, Scope& scope) {
    if (n.input_size() < 1) return 0;
    const IntTensor* cond = scope.value(n.input(0));
    if (!cond || cond->v.size() != 1) return 0;
    const auto* live = attrOf(n, cond->v[0] ? "then_branch" : "else_branch");
    if (const auto* other = attrOf(n, cond->v[0] ? "else_branch" : "then_branch");
        other && other->has_g())
      dead.insert(&other->g());
    if (!live || !live->has_g() || live->g().output_size() != n.output_size()) return 0;
    std::size_t added = 0;
    auto complete = [](const ox::TypeProto* t) {
      return t && t->has_tensor_type() && t->tensor_type().elem_type() != 0 &&
             shapeOf(t->tensor_type()).complete();
    };
    const ox::GraphProto& body = live->g();
    for (int k = 0; k < n.output_size(); ++k) {
      // The body's declared output, else what inference recorded for that
      // name inside the body, else an outer value the body passes through.
      const std::string& inner = body.output(k).name();
      const ox::TypeProto* bt = &body.output(k).type();
      for (const auto& vi : body.value_info())
        if (!complete(bt) && vi.name() == inner) bt = &vi.type();
      if (!complete(bt)) bt = scope.type(inner);
      if (n.output(k).empty() || !complete(bt)) continue;
      const auto* have = scope.type(n.output(k));
      if (have && have->has_tensor_type() && shapeOf(have->tensor_type()).complete()) continue;
      ox::ValueInfoProto* vi = nullptr;
      for (auto& cand : *g->mutable_value_info())
        if (cand.name() == n.output(k)) vi = &cand;
      if (!vi) {
        vi = g->add_value_info();
        vi->set_name(n.output(k));
      }
      *vi->mutable_type() = *bt;
      scope.types[n.output(k)] = &vi->type();
      ++added;
    }
    return added;
  }

  // Gives `name` (an output of a node in `g`) the type `t` as value_info,
  // unless a complete type is already known. Returns 1 when it did.
  static std::size_t giveType(ox::GraphProto* g, Scope& scope, const std::string& name,
                              const ox::TypeProto& t) {
    const auto* have = scope.type(name);
    if (have && have->has_tensor_type() && shapeOf(have->tensor_type()).complete()) return 0;
    ox::ValueInfoProto* vi = nullptr;
    for (auto& cand : *g->mutable_value_info())
      if (cand.name() == name) vi = &cand;
    if (!vi) {
      vi = g->add_value_info();
      vi->set_name(name);
    }
    *vi->mutable_type() = t;
    scope.types[name] = &vi->type();
    return 1;
  }

  // Output types of a Reduce* or Split node at opset 18+, or of an op newer
  // than the library that keeps its input's shape (see "Operators newer than
  // the ONNX library"). Nothing when any input that decides the shape is
  // unknown, or the node is invalid: the outputs stay unsized.
  std::size_t newerOpTypes(ox::GraphProto* g, const ox::NodeProto& n, Scope& scope) {
    if (n.input_size() < 1) return 0;
    const auto* xt = scope.type(n.input(0));
    if (!xt || !xt->has_tensor_type() || xt->tensor_type().elem_type() == 0) return 0;
    const auto xs = knownShape(scope, n.input(0));
    if (!xs) return 0;
    const std::size_t r = xs->size();
    const bool same_shape = n.op_type() != "Split" && !isReduceWithAxesInput(n.op_type());
    const IntTensor* arg = nullptr;  // axes (Reduce) or split sizes (Split)
    if (!same_shape && n.input_size() > 1 && !n.input(1).empty()) {
      arg = scope.value(n.input(1));
      if (!arg) return 0;  // computed at run time
    }
    std::vector<std::vector<std::int64_t>> outs;
    if (same_shape) {
      outs.push_back(*xs);  // kSameShapeOps
    } else if (n.op_type() == "Split") {
      const auto axis = axisOf(attrInt(n, "axis", 0), r);
      if (!axis) return 0;
      const std::int64_t d = (*xs)[*axis];
      const auto k = static_cast<std::int64_t>(n.output_size());
      std::vector<std::int64_t> sizes;
      if (arg) {
        __int128 sum = 0;
        for (auto v : arg->v) {
          if (v < 0) return 0;
          sum += v;
        }
        if (arg->dims.size() != 1 || static_cast<std::int64_t>(arg->v.size()) != k || sum != d)
          return 0;
        sizes = arg->v;
      } else if (const auto* a = attrOf(n, "num_outputs")) {
        // Chunks of ceil(d / k); the last one is smaller when k does not divide d.
        if (a->i() != k) return 0;
        const std::int64_t chunk = d / k + (d % k != 0);
        const __int128 last = static_cast<__int128>(d) - static_cast<__int128>(chunk) * (k - 1);
        if (last < 0) return 0;
        sizes.assign(static_cast<std::size_t>(k - 1), chunk);
        sizes.push_back(static_cast<std::int64_t>(last));
      } else {
        if (d % k) return 0;
        sizes.assign(static_cast<std::size_t>(k), d / k);
      }
      for (auto size : sizes) {
        outs.push_back(*xs);
        outs.back()[*axis] = size;
      }
    } else {
      // Empty or absent axes: all axes, or none with noop_with_empty_axes.
      std::vector<bool> reduce(r, attrInt(n, "noop_with_empty_axes", 0) == 0);
      if (arg && !arg->v.empty()) {
        if (arg->dims.size() > 1) return 0;
        reduce.assign(r, false);
        for (auto a : arg->v) {
          const auto ax = axisOf(a, r);
          if (!ax || reduce[*ax]) return 0;
          reduce[*ax] = true;
        }
      }
      const bool keep = attrInt(n, "keepdims", 1) != 0;
      std::vector<std::int64_t> out;
      for (std::size_t k = 0; k < r; ++k)
        if (!reduce[k]) out.push_back((*xs)[k]);
        else if (keep) out.push_back(1);
      outs.push_back(std::move(out));
    }
    if (outs.size() != static_cast<std::size_t>(n.output_size())) return 0;
    std::size_t added = 0;
    for (int k = 0; k < n.output_size(); ++k) {
      if (n.output(k).empty()) continue;
      ox::TypeProto t;
      auto* tt = t.mutable_tensor_type();
      tt->set_elem_type(xt->tensor_type().elem_type());
      auto* shape = tt->mutable_shape();
      for (auto d : outs[static_cast<std::size_t>(k)]) shape->add_dim()->set_dim_value(d);
      added += giveType(g, scope, n.output(k), t);
    }
    return added;
  }

  static std::vector<std::int64_t> intsAttr(const ox::NodeProto& n, const std::string& name) {
    const auto* a = attrOf(n, name);
    if (!a) return {};
    return {a->ints().begin(), a->ints().end()};
  }

  std::optional<IntTensor> eval(const ox::NodeProto& n, const Scope& s) {
    const std::string& op = n.op_type();
    std::vector<const IntTensor*> in;
    bool all = true;
    for (const auto& name : n.input()) {
      const IntTensor* t = name.empty() ? nullptr : s.value(name);
      if (!t) all = false;
      in.push_back(t);
    }
    auto input = [&](std::size_t i) -> const IntTensor* { return i < in.size() ? in[i] : nullptr; };

    if (op == "Shape" || op == "Size") {
      if (n.input_size() < 1) return std::nullopt;
      auto shape = knownShape(s, n.input(0));
      if (!shape) return std::nullopt;
      if (op == "Size") {
        std::uint64_t p = 1;
        for (auto d : *shape) {
          auto next = checkedMul(p, static_cast<std::uint64_t>(d));
          if (!next) return std::nullopt;
          p = *next;
        }
        return IntTensor{7, {}, {static_cast<std::int64_t>(p)}};
      }
      const auto r = static_cast<std::int64_t>(shape->size());
      std::int64_t start = attrInt(n, "start", 0), end = attrInt(n, "end", r);
      if (start < 0) start += r;
      if (end < 0) end += r;
      start = std::clamp<std::int64_t>(start, 0, r);
      end = std::clamp<std::int64_t>(end, start, r);
      IntTensor t{7, {end - start}, {shape->begin() + start, shape->begin() + end}};
      return t;
    }
    if (op == "ConstantOfShape") {
      if (!input(0) || input(0)->dims.size() != 1) return std::nullopt;
      IntTensor t{7, input(0)->v, {}};
      std::int64_t fill = 0;
      if (const auto* a = attrOf(n, "value"); a && a->has_t()) {
        auto v = fromProto(a->t());
        if (!v || v->v.size() != 1) return std::nullopt;
        t.elem = v->elem;
        fill = v->v[0];
      } else {
        return std::nullopt;  // default is float 0
      }
      auto count = elementCount(t.dims);
      if (!count) return std::nullopt;
      t.v.assign(*count, fill);
      return t;
    }
    if (op == "Range") {
      if (!all || in.size() != 3) return std::nullopt;
      for (auto* t : in)
        if (t->v.size() != 1) return std::nullopt;
      const __int128 start = in[0]->v[0], limit = in[1]->v[0], delta = in[2]->v[0];
      if (delta == 0) return std::nullopt;
      const __int128 diff = limit - start;
      __int128 count = 0;  // ceil(diff / delta) when positive
      if (diff != 0 && (diff > 0) == (delta > 0)) count = (diff + delta - (delta > 0 ? 1 : -1)) / delta;
      if (count > static_cast<__int128>(kMaxFoldElements)) return std::nullopt;
      IntTensor t{in[0]->elem, {}, {}};
      for (__int128 i = 0; i < count; ++i)
        t.v.push_back(wrapTo(t.elem, static_cast<std::int64_t>(start + i * delta)));
      t.dims = {static_cast<std::int64_t>(t.v.size())};
      return t;
    }
    if (!input(0)) return std::nullopt;
    const IntTensor& x = *in[0];

    if (op == "Identity") return x;
    if (op == "Cast") {
      const int to = static_cast<int>(attrInt(n, "to", 0));
      if (!isIntType(to)) return std::nullopt;
      IntTensor t = x;
      t.elem = to;
      for (auto& v : t.v) v = wrapTo(to, v);
      return t;
    }
    if (op == "Neg" || op == "Abs" || op == "Not") {
      IntTensor t = x;
      for (auto& v : t.v) {
        const auto neg = static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(v));
        v = op == "Neg" ? wrapTo(t.elem, neg) : op == "Abs" ? wrapTo(t.elem, v < 0 ? neg : v) : !v;
      }
      return t;
    }
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Equal" ||
        op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" ||
        op == "And" || op == "Or" || op == "Max" || op == "Min" || op == "Where") {
      if (!all || in.size() < 2) return std::nullopt;
      const bool cmp = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                       op == "GreaterOrEqual" || op == "And" || op == "Or";
      const int elem = cmp ? 9 : (op == "Where" ? (in.size() == 3 ? in[1]->elem : 7) : x.elem);
      if (op == "Where" && in.size() != 3) return std::nullopt;
      if ((op == "Max" || op == "Min") && in.size() != 2) return std::nullopt;
      auto u = [](std::int64_t a) { return static_cast<std::uint64_t>(a); };
      return broadcast(in, elem, [&](const std::vector<std::int64_t>& a) -> std::optional<std::int64_t> {
        if (op == "Add") return static_cast<std::int64_t>(u(a[0]) + u(a[1]));
        if (op == "Sub") return static_cast<std::int64_t>(u(a[0]) - u(a[1]));
        if (op == "Mul") return static_cast<std::int64_t>(u(a[0]) * u(a[1]));
        if (op == "Div") {
          if (a[1] == 0 || (a[1] == -1 && a[0] == std::numeric_limits<std::int64_t>::min()))
            return std::nullopt;
          return a[0] / a[1];
        }
        if (op == "Equal") return a[0] == a[1];
        if (op == "Less") return a[0] < a[1];
        if (op == "Greater") return a[0] > a[1];
        if (op == "LessOrEqual") return a[0] <= a[1];
        if (op == "GreaterOrEqual") return a[0] >= a[1];
        if (op == "And") return a[0] && a[1];
        if (op == "Or") return a[0] || a[1];
        if (op == "Max") return std::max(a[0], a[1]);
        if (op == "Min") return std::min(a[0], a[1]);
        return a[0] ? a[1] : a[2];  // Where
      });
    }
    if (op == "Reshape") {
      if (!input(1)) return std::nullopt;
      const bool allowzero = attrInt(n, "allowzero", 0) != 0;
      std::vector<std::int64_t> dims = in[1]->v;
      int infer = -1;
      __int128 known = 1;
      for (std::size_t k = 0; k < dims.size(); ++k) {
        if (dims[k] == 0 && !allowzero) {
          if (k >= x.dims.size()) return std::nullopt;
          dims[k] = x.dims[k];
        }
        if (dims[k] == -1) {
          if (infer >= 0) return std::nullopt;
          infer = static_cast<int>(k);
        } else if (dims[k] < 0) {
          return std::nullopt;
        } else {
          known *= dims[k];
          if (known > static_cast<__int128>(kMaxBytes)) return std::nullopt;
        }
      }
      const auto total = static_cast<std::int64_t>(x.v.size());
      if (infer >= 0) {
        if (known == 0 || total % known) return std::nullopt;
        dims[static_cast<std::size_t>(infer)] = static_cast<std::int64_t>(total / known);
      }
      auto count = elementCount(dims);
      if (!count || *count != x.v.size()) return std::nullopt;
      return IntTensor{x.elem, dims, x.v};
    }
    if (op == "Flatten") {
      auto axis = axisOf(attrInt(n, "axis", 1), x.dims.size() + 1);
      if (!axis) return std::nullopt;
      __int128 a = 1, b = 1;  // dims of a tensor of <= kMaxFoldElements
      for (std::size_t k = 0; k < x.dims.size(); ++k) {
        if (x.dims[k] == 0) return std::nullopt;
        (k < *axis ? a : b) *= x.dims[k];
      }
      return IntTensor{x.elem, {static_cast<std::int64_t>(a), static_cast<std::int64_t>(b)}, x.v};
    }
    if (op == "Unsqueeze" || op == "Squeeze") {
      std::vector<std::int64_t> axes = intsAttr(n, "axes");
      if (!attrOf(n, "axes") && input(1)) axes = in[1]->v;
      else if (!attrOf(n, "axes") && n.input_size() > 1 && !n.input(1).empty()) return std::nullopt;
      IntTensor t = x;
      if (op == "Unsqueeze") {
        const std::size_t rank = x.dims.size() + axes.size();
        std::vector<bool> is_new(rank, false);
        for (auto a : axes) {
          auto ax = axisOf(a, rank);
          if (!ax || is_new[*ax]) return std::nullopt;
          is_new[*ax] = true;
        }
        t.dims.clear();
        std::size_t src = 0;
        for (std::size_t k = 0; k < rank; ++k) t.dims.push_back(is_new[k] ? 1 : x.dims[src++]);
      } else {
        std::vector<bool> drop(x.dims.size(), false);
        for (std::size_t k = 0; k < x.dims.size(); ++k) drop[k] = axes.empty() && x.dims[k] == 1;
        for (auto a : axes) {
          auto ax = axisOf(a, x.dims.size());
          if (!ax || x.dims[*ax] != 1) return std::nullopt;
          drop[*ax] = true;
        }
        t.dims.clear();
        for (std::size_t k = 0; k < x.dims.size(); ++k)
          if (!drop[k]) t.dims.push_back(x.dims[k]);
      }
      return t;
    }
    if (op == "Concat") {
      if (!all) return std::nullopt;
      auto axis = axisOf(attrInt(n, "axis", 0), x.dims.size());
      if (!axis) return std::nullopt;
      IntTensor t{x.elem, x.dims, {}};
      t.dims[*axis] = 0;
      for (const auto* p : in) {
        if (p->dims.size() != x.dims.size() || p->elem != x.elem) return std::nullopt;
        for (std::size_t k = 0; k < x.dims.size(); ++k)
          if (k != *axis && p->dims[k] != x.dims[k]) return std::nullopt;
        t.dims[*axis] += p->dims[*axis];
      }
      auto count = elementCount(t.dims);
      if (!count) return std::nullopt;
      // Outer blocks before the axis, each the concatenation of the inputs' rows.
      std::size_t outer = 1;
      for (std::size_t k = 0; k < *axis; ++k) outer *= static_cast<std::size_t>(x.dims[k]);
      for (std::size_t o = 0; o < outer; ++o)
        for (const auto* p : in) {
          const std::size_t block = outer ? p->v.size() / outer : 0;
          t.v.insert(t.v.end(), p->v.begin() + static_cast<std::ptrdiff_t>(o * block),
                     p->v.begin() + static_cast<std::ptrdiff_t>((o + 1) * block));
        }
      if (t.v.size() != *count) return std::nullopt;
      return t;
    }
    if (op == "Gather") {
      if (!input(1)) return std::nullopt;
      auto axis = axisOf(attrInt(n, "axis", 0), x.dims.size());
      if (!axis) return std::nullopt;
      const IntTensor& idx = *in[1];
      IntTensor t{x.elem, {}, {}};
      t.dims.assign(x.dims.begin(), x.dims.begin() + static_cast<std::ptrdiff_t>(*axis));
      t.dims.insert(t.dims.end(), idx.dims.begin(), idx.dims.end());
      t.dims.insert(t.dims.end(), x.dims.begin() + static_cast<std::ptrdiff_t>(*axis) + 1, x.dims.end());
      auto count = elementCount(t.dims);
      if (!count) return std::nullopt;
      const auto xs = stridesOf(x.dims);
      const std::int64_t extent = x.dims[*axis];
      bool ok = true;
      t.v.resize(*count);
      const std::size_t q = idx.dims.size();
      forEachIndex(t.dims, [&](std::size_t flat, const std::vector<std::int64_t>& oi) {
        std::size_t ii = 0;
        for (std::size_t k = 0; k < q; ++k)
          ii = ii * static_cast<std::size_t>(idx.dims[k]) + static_cast<std::size_t>(oi[*axis + k]);
        std::int64_t j = idx.v[ii];
        if (j < 0) j += extent;
        if (j < 0 || j >= extent) {
          ok = false;
          return;
        }
        std::size_t off = 0;
        for (std::size_t k = 0; k < x.dims.size(); ++k) {
          const std::int64_t c = k < *axis ? oi[k] : k == *axis ? j : oi[k + q - 1];
          off += static_cast<std::size_t>(c) * xs[k];
        }
        t.v[flat] = x.v[off];
      });
      if (!ok) return std::nullopt;
      return t;
    }
    if (op == "Slice") {
      std::vector<std::int64_t> starts, ends, axes, steps;
      if (attrOf(n, "starts")) {
        starts = intsAttr(n, "starts");
        ends = intsAttr(n, "ends");
        axes = intsAttr(n, "axes");
      } else {
        if (!input(1) || !input(2)) return std::nullopt;
        if (n.input_size() > 3 && !n.input(3).empty() && !input(3)) return std::nullopt;
        if (n.input_size() > 4 && !n.input(4).empty() && !input(4)) return std::nullopt;
        starts = in[1]->v;
        ends = in[2]->v;
        if (input(3)) axes = in[3]->v;
        if (input(4)) steps = in[4]->v;
      }
      if (axes.empty())
        for (std::size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<std::int64_t>(k));
      if (steps.empty()) steps.assign(starts.size(), 1);
      if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
        return std::nullopt;
      const std::size_t r = x.dims.size();
      std::vector<std::int64_t> b(r, 0), st(r, 1), len = x.dims;
      for (std::size_t i = 0; i < starts.size(); ++i) {
        auto ax = axisOf(axes[i], r);
        if (!ax || steps[i] == 0) return std::nullopt;
        const std::int64_t d = x.dims[*ax];
        const __int128 step = steps[i];
        auto clampIdx = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) {
          if (v < 0) v += d;
          return std::clamp(v, lo, hi);
        };
        std::int64_t s0, e0;
        if (step > 0) {
          s0 = clampIdx(starts[i], 0, d);
          e0 = clampIdx(ends[i], 0, d);
          len[*ax] = e0 > s0 ? static_cast<std::int64_t>((e0 - s0 + step - 1) / step) : 0;
        } else {
          s0 = clampIdx(starts[i], -1, d - 1);
          e0 = clampIdx(ends[i], -1, d - 1);
          if (ends[i] < -d) e0 = -1;
          len[*ax] = s0 > e0 ? static_cast<std::int64_t>((s0 - e0 - step - 1) / -step) : 0;
        }
        b[*ax] = s0;
        st[*ax] = steps[i];
      }
      IntTensor t{x.elem, len, {}};
      auto count = elementCount(len);
      if (!count) return std::nullopt;
      t.v.resize(*count);
      const auto xs = stridesOf(x.dims);
      forEachIndex(len, [&](std::size_t flat, const std::vector<std::int64_t>& oi) {
        std::size_t off = 0;
        for (std::size_t k = 0; k < r; ++k) off += static_cast<std::size_t>(b[k] + oi[k] * st[k]) * xs[k];
        t.v[flat] = x.v[off];
      });
      return t;
    }
    if (op == "Transpose") {
      const std::size_t r = x.dims.size();
      std::vector<std::int64_t> perm = intsAttr(n, "perm");
      if (perm.empty())
        for (std::size_t k = 0; k < r; ++k) perm.push_back(static_cast<std::int64_t>(r - 1 - k));
      if (perm.size() != r) return std::nullopt;
      std::vector<bool> seen(r, false);
      for (auto p : perm) {
        if (p < 0 || p >= static_cast<std::int64_t>(r) || seen[static_cast<std::size_t>(p)])
          return std::nullopt;
        seen[static_cast<std::size_t>(p)] = true;
      }
      IntTensor t{x.elem, {}, std::vector<std::int64_t>(x.v.size())};
      for (auto p : perm) t.dims.push_back(x.dims[static_cast<std::size_t>(p)]);
      const auto xs = stridesOf(x.dims);
      forEachIndex(t.dims, [&](std::size_t flat, const std::vector<std::int64_t>& oi) {
        std::size_t off = 0;
        for (std::size_t k = 0; k < r; ++k)
          off += static_cast<std::size_t>(oi[k]) * xs[static_cast<std::size_t>(perm[k])];
        t.v[flat] = x.v[off];
      });
      return t;
    }
    return std::nullopt;
  }

  std::size_t budget_ = kFoldBudget;

 public:
  // Branches of an If whose condition is known not to hold: they never run
  // for the bound shapes (filled by the last fold()).
  std::set<const ox::GraphProto*> dead;
};

class OnnxImporter {
 public:
  OnnxImporter(const std::string& source, const ImportOptions& options)
      : source_(source), options_(options) {}

  Model run(std::string_view bytes) {
    parse(bytes);
    checkOpsets();
    verifyNodes(model_.graph(), 0);
    dropWeightData(model_.mutable_graph(), 0);
    bindDimensions();
    inferShapes();
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
    const auto& known = ox::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    std::set<std::string> used_domains;
    collectDomains(model_.graph(), used_domains, 0);
    for (const auto& imp : model_.opset_import()) {
      const std::string domain = isDefaultDomain(imp.domain()) ? "" : imp.domain();
      if (imp.version() < 1 || imp.version() > std::numeric_limits<int>::max())
        fail("opset_import '" + imp.domain() + "': invalid version " +
             std::to_string(imp.version()));
      opsets_[domain] = static_cast<int>(imp.version());
      // A newer opset runs with the newest schemas the library has (the
      // registry resolves the latest version <= the opset); verifyNodes()
      // then refuses the nodes whose signature changed since.
      auto it = known.find(domain);
      if (it != known.end() && imp.version() > it->second.second)
        library_max_[domain] = it->second.second;
    }
    if (!opsets_.count("") && used_domains.count(""))
      fail("opset_import has no entry for the default ONNX domain");
  }

  void collectDomains(const ox::GraphProto& g, std::set<std::string>& out, int depth) {
    if (depth > kMaxGraphDepth)
      fail("control-flow bodies nested deeper than " + std::to_string(kMaxGraphDepth));
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
      constantBytes(init, "initializer '" + init.name() + "'" +
                              (depth ? " in graph '" + g.name() + "'" : ""));
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& n = g.node(i);
      if (n.op_type() == "Constant")
        for (const auto& a : n.attribute())
          if (a.has_t()) constantBytes(a.t(), "node '" + nodeLabel(n, i) + "' (Constant)");
      const std::string domain = isDefaultDomain(n.domain()) ? "" : n.domain();
      auto ver = opsets_.find(domain);
      if (ver != opsets_.end()) verifyNode(n, nodeLabel(n, i), domain, ver->second);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) verifyNodes(a.g(), depth + 1);
        for (const auto& sub : a.graphs()) verifyNodes(sub, depth + 1);
      }
    }
  }

  void verifyNode(const ox::NodeProto& n, const std::string& label, const std::string& domain,
                  int opset) {
    const std::string where = "node '" + label + "' (" + opName(n) + ")";
    const auto newer = library_max_.find(domain);
    const bool beyond = newer != library_max_.end();
    const std::string at = "op " + n.op_type() + " at opset " + std::to_string(opset);
    if (beyond && domain.empty()) {
      if (const char* why = newerOpProblem(n, opset)) fail(where + ": " + at + " " + why);
      if (newerOpRule(n, opset)) return;  // verified above, sized by ShapeFolder
    }
    const auto* schema = ox::OpSchemaRegistry::Schema(n.op_type(), opset, domain);
    if (!schema) {
      if (beyond)
        fail(where + ": " + at + " is newer than memplan's ONNX library, which knows " +
             (domain.empty() ? "ai.onnx" : domain) + " only up to opset " +
             std::to_string(newer->second));
      if (domain.empty())
        fail("node '" + label + "': unknown operator " + n.op_type() + " in opset " +
             std::to_string(opset));
      return;
    }
    try {
      if (beyond && domain.empty() &&
          std::any_of(n.attribute().begin(), n.attribute().end(),
                                [&](const auto& a) { return shapeNeutralNewAttr(n, a, opset); })) {
        ox::NodeProto older = n;
        older.clear_attribute();
        for (const auto& a : n.attribute())
          if (!shapeNeutralNewAttr(n, a, opset)) *older.add_attribute() = a;
        schema->Verify(older);
      } else {
        schema->Verify(n);
      }
    } catch (const std::exception& e) {
      if (!beyond) fail(where + ": " + firstLine(e.what()));
      // The op may have changed after the version the library knows.
      const std::string known = std::to_string(schema->since_version());
      const std::string hint = domain.empty() ? changeHint(n.op_type()) : "";
      fail(where + ": " + at + " " +
           (hint.empty() ? "does not match opset " + known + ", the newest version of this op "
                               "memplan's ONNX library knows"
                         : hint + "; memplan's ONNX library knows this op only up to opset " +
                               known) +
           ": " + firstLine(e.what()));
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
    if (library_max_.count("")) {
      auto* imp = typed_.add_opset_import();
      imp->set_domain(kNewerRuleDomain);
      imp->set_version(1);
      markNewerRules(typed_.mutable_graph(), opsets_.at(""), 0);
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

  // Hides Reduce*/Split nodes of opset 18+ from ONNX shape inference (its
  // opset-13 rules would read them wrongly); ShapeFolder sizes them.
  static void markNewerRules(ox::GraphProto* g, int opset, int depth) {
    if (depth > kMaxGraphDepth) return;
    for (auto& n : *g->mutable_node()) {
      if (isDefaultDomain(n.domain()) && newerOpRule(n, opset)) n.set_domain(kNewerRuleDomain);
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) markNewerRules(a.mutable_g(), opset, depth + 1);
        for (auto& sub : *a.mutable_graphs()) markNewerRules(&sub, opset, depth + 1);
      }
    }
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

  // Bytes of a constant's TensorProto (dims are authoritative); checks that
  // stored raw data matches, since shape inference reads it.
  Bytes constantBytes(const ox::TensorProto& tp, const std::string& where) const {
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

  void sizeConstant(TensorId id, const ox::TensorProto& tp, const std::string& where) {
    Tensor& t = out_.tensors[id];
    t.kind = TensorKind::Constant;
    t.dtype = mapDType(tp.data_type());
    t.shape.assign(tp.dims().begin(), tp.dims().end());
    t.nbytes = constantBytes(tp, where);
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
        if (!n || *n > kMaxBytes) fail("tensor '" + t.name + "' " + shape_text + ": size overflows");
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
      const auto& old = *it->second;
      const auto& cand = vi.type();
      const bool old_ok = old.has_tensor_type() && shapeOf(old.tensor_type()).complete() &&
                          old.tensor_type().elem_type() != 0;
      const bool cand_ok = cand.has_tensor_type() && shapeOf(cand.tensor_type()).complete() &&
                           cand.tensor_type().elem_type() != 0;
      if (!old_ok && cand_ok) it->second = &cand;
    };
    for (const auto& vi : g.value_info()) offer(vi);
    for (const auto& vi : g.output()) offer(vi);
    for (const auto& vi : g.input()) offer(vi);
    return types;
  }

  // `g` gives the nodes, `typed` (its scratch twin) the inferred types.
  GraphId importGraph(const ox::GraphProto& g, const ox::GraphProto& typed, GraphId parent,
                      NodeId parent_node,
                      Scope& scope, const std::string& fallback_name, int depth) {
    if (depth > kMaxGraphDepth)
      fail("control-flow bodies nested deeper than " + std::to_string(kMaxGraphDepth));
    const GraphId gid = static_cast<GraphId>(out_.graphs.size());
    {
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
    }
    const auto types = typeTable(typed);
    const std::string in_graph = gid == 0 ? "" : " in graph '" + out_.graphs[gid].name + "'";

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

    for (int i = 0; i < g.node_size(); ++i) {
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

      // Control-flow bodies, in the order NodeKind documents.
      struct Body {
        std::string name;
        const ox::GraphProto* g;
        const ox::GraphProto* typed;
      };
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
      NodeKind kind = NodeKind::Op;
      if (!bodies.empty()) {
        const bool std_op = isDefaultDomain(n.domain());
        if (std_op && n.op_type() == "If") {
          kind = NodeKind::Cond;
          std::stable_sort(bodies.begin(), bodies.end(), [](const Body& a, const Body& b) {
            return (a.name == "then_branch") > (b.name == "then_branch");
          });
        } else if (std_op && n.op_type() == "Loop") {
          kind = NodeKind::While;
        } else if (std_op && n.op_type() == "Scan") {
          kind = NodeKind::Scan;
        } else if (std_op && n.op_type() == "SequenceMap") {
          kind = NodeKind::Map;
        } else {
          kind = NodeKind::Call;
        }
      }
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

    for (const auto& vi : g.output()) {
      auto id = scope.find(vi.name());
      if (!id) fail("graph output '" + vi.name() + "'" + in_graph + " is never produced");
      out_.graphs[gid].outputs.push_back(*id);
    }
    return gid;
  }

  // ---- 7. unknown sizes ---------------------------------------------------
  void sizeUnknown() {
    if (unknown_.empty()) return;
    if (options_.unknown_size_bytes > 0) {
      if (options_.unknown_size_bytes > kMaxBytes) fail("--unknown-size-bytes is too large");
      // Planned at the user's upper bound; the runtime must not exceed it.
      for (const auto& u : unknown_) out_.tensors[u.id].nbytes = options_.unknown_size_bytes;
      return;
    }
    std::string msg = "cannot size " + std::to_string(unknown_.size()) + " tensor" +
                      (unknown_.size() == 1 ? "" : "s");
    // What to bind first: inputs whose shape is not fully known.
    const std::string unbound = unboundInputs();
    msg += unbound.empty() ? ": " : "; bind " + unbound + "; unsized: ";
    for (std::size_t i = 0; i < unknown_.size() && i < kMaxListed; ++i)
      msg += (i ? "; " : "") + unknown_[i].why;
    if (unknown_.size() > kMaxListed)
      msg += "; and " + std::to_string(unknown_.size() - kMaxListed) + " more";
    msg += " (bind dimensions with --input-shape NAME=DIMS or --dim SYMBOL=VALUE, "
           "or plan them at an upper bound with --unknown-size-bytes N)";
    if (const std::string why = strictInferenceError(); !why.empty())
      msg += "; ONNX shape inference: " + why;
    fail(msg);
  }

  // "input 'x' float32[N,3,H,W] (--input-shape x=... or --dim N=...)", for
  // each main-graph input with a dimension not known (at most a few).
  std::string unboundInputs() const {
    std::string out;
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
      std::string symbols;
      for (const std::string& t : shape.text)
        if (t != "?" && !std::isdigit(static_cast<unsigned char>(t[0])))
          symbols += (symbols.empty() ? "" : ", ") + t;
      std::string dims;
      for (const std::string& t : shape.text) dims += (dims.empty() ? "" : ",") + t;
      out += std::string(listed ? ", " : "") + "input '" + vi.name() + "' [" +
             (shape.has_shape ? dims : std::string("rank unknown")) + "]" +
             (symbols.empty() ? "" : " (symbols " + symbols + ")");
      ++listed;
    }
    if (more) out += " and " + std::to_string(more) + " more inputs";
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
  ox::ModelProto model_;   // as read, dimensions bound
  ox::ModelProto typed_;   // scratch twin: folded constants, inferred types
  std::set<const ox::GraphProto*> dead_bodies_;  // in typed_
  bool in_dead_body_ = false;  // importing a branch that never runs
  std::set<std::string> graph_names_;
  std::map<std::string, int> opsets_;
  std::map<std::string, int> library_max_;  // domains whose opset the library lacks
  std::vector<Unknown> unknown_;
  Model out_;
};

}  // namespace

Model importOnnx(std::string_view bytes, const std::string& source_name,
                 const ImportOptions& options) {
  OnnxImporter importer(source_name, options);
  return importer.run(bytes);
}

}  // namespace memplan

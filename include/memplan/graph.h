// The graph IR: the only structure the pipeline stages share.
//
//   import -> Model (this file) -> lifetimes/specs -> partition -> algorithm
//          -> Plan -> verify -> export/report
//
// A Model owns every tensor of every graph in one table; graphs (the main
// graph and the bodies of control-flow nodes) hold nodes in execution order
// that name tensors by TensorId. A subgraph's nodes may read tensors of an
// enclosing graph (outer-scope capture): those stay owned by the outer graph.
// A model may have several methods (entry points such as an LLM's prefill
// and decode), each a root graph with its own bodies; methods share state
// (a KV cache) through mutable buffers that carry the same fqn.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "memplan/types.h"

namespace memplan {

enum class DType : std::uint8_t {
  Unknown, Bool, Int4, UInt4, Int8, UInt8, Int16, UInt16, Int32, UInt32,
  Int64, UInt64, Float8E4M3, Float8E5M2, Float16, BFloat16, Float32, Float64,
  Complex64, Complex128, String, Resource, Variant,
};

// Bits per element (4 for Int4); 0 for Unknown/String/Resource/Variant.
unsigned dtypeBits(DType t);
std::string_view dtypeName(DType t);  // "float32", "int8", ...
std::optional<DType> parseDType(std::string_view name);

// Bytes of a dense tensor: prod(shape) * bits / 8, rounded up; a 0-d tensor
// is one element. nullopt on a negative dimension or on overflow.
std::optional<Bytes> denseBytes(const std::vector<std::int64_t>& shape, DType t);

// Where a device type sorts among devices: ExecuTorch's DeviceType values
// (cpu 0, cuda 1); every type ExecuTorch has no value for ("npu", "dsp",
// ...) after those (2), among themselves by name.
int deviceTypeRank(std::string_view type);

struct Device {
  std::string type = "cpu";  // "cpu", "cuda", "npu", ... (lower case)
  std::int32_t index = 0;
  bool isCpu0() const { return type == "cpu" && index == 0; }
  bool isCpu() const { return type == "cpu"; }
  std::string str() const { return type + ":" + std::to_string(index); }
  friend bool operator==(const Device&, const Device&) = default;
  // ExecuTorch's partition order: CPU:0 first, then by (type's rank, type,
  // index): cpu:1, cuda:0, cuda:1, then the types ExecuTorch does not know.
  friend bool operator<(const Device& a, const Device& b) {
    if (a.isCpu0() != b.isCpu0()) return a.isCpu0();
    const int ra = deviceTypeRank(a.type), rb = deviceTypeRank(b.type);
    if (ra != rb) return ra < rb;
    if (a.type != b.type) return a.type < b.type;
    return a.index < b.index;
  }
};

// "cuda:1", "cpu" (index 0), "npu:0": a lower-case type of letters, digits
// and '_', an optional ":index" (at most 9 digits). nullopt otherwise.
std::optional<Device> parseDevice(std::string_view text);

// What a tensor's storage is, independent of whether it is a graph input or
// output (that is given by Graph::inputs / Graph::outputs).
enum class TensorKind : std::uint8_t {
  Activation,         // produced or consumed while the graph runs
  Constant,           // weight; lives in the constant segment, never planned
  TrainableConstant,  // weight with a gradient: planned like an activation
  MutableBuffer,      // state kept between calls (KV cache): lives to the end
};

// How a tensor shares storage with `alias_of`.
enum class AliasKind : std::uint8_t {
  None,
  View,       // same bytes as its base (reshape, slice view): one storage
  InPlace,    // result of an op that mutated `alias_of`: one storage
  ShareWith,  // out-variant result annotated "reuse argument's allocation"
              // (ExecuTorch `inplace_base`): own lifetime, base's offset
};

struct Tensor {
  std::string name;
  std::vector<std::int64_t> shape;   // empty = scalar
  DType dtype = DType::Unknown;
  Bytes nbytes = 0;                  // dense size; set by the importer
  Device device;
  Bytes alignment = 0;               // 0 = the planning alignment
  std::optional<MemId> mem_id;       // preset pool
  std::optional<Offset> offset;      // pinned offset inside the preset pool
  TensorKind kind = TensorKind::Activation;
  AliasKind alias = AliasKind::None;
  TensorId alias_of = kNone;
  bool dynamic_unbound = false;      // size unknown: the runtime allocates it
  GraphId graph = 0;                 // graph that owns (declares) the tensor
  // Windows in which the tensor holds no bytes (or, with a window, only
  // those bytes): while nodes [start, end) of its graph run (Gap in node
  // indices; the lifetime stage turns them into steps). Its content after
  // a gap is written anew. Sorted, disjoint; only on a tensor that aliases
  // none (its views and in-place results share its storage and its gaps;
  // no ShareWith result may name it), never at a node that uses the storage.
  std::vector<Gap> gaps;
  // Fully qualified name of the state this tensor holds ("layers.0.k_cache"):
  // methods share a mutable buffer by fqn. Only on mutable buffers (state
  // the method mutates) and constants (state it only reads, or a weight).
  std::string fqn;
};

enum class NodeKind : std::uint8_t {
  Op,     // ordinary operator
  Cond,   // runs one of its subgraphs (then, else)
  While,  // subgraphs: cond, body
  Map,    // subgraph: body, run per slice (its inputs are planned)
  Scan,   // subgraph: body, run per slice (its inputs are planned)
  Call,   // runs its subgraph once (TFLite CALL_ONCE, delegate call)
};
std::string_view nodeKindName(NodeKind k);

struct Node {
  std::string name;
  std::string op;                    // operator type: "Conv", "aten::add", ...
  NodeKind kind = NodeKind::Op;
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  std::vector<GraphId> subgraphs;    // control flow bodies, in the kind's order
};

struct Graph {
  std::string name;
  std::vector<TensorId> inputs;      // placeholders, in order
  std::vector<TensorId> outputs;     // returned tensors, in order
  std::vector<Node> nodes;           // execution order
  GraphId parent = kNone;            // enclosing graph (kNone for main)
  NodeId parent_node = kNone;        // control-flow node in `parent`
};

// An entry point of a model (ExecuTorch: an ExecutionPlan; an LLM's
// "prefill" and "decode").
struct Method {
  std::string name;
  GraphId graph = 0;                 // its entry graph, a root (no parent)
  friend bool operator==(const Method&, const Method&) = default;
};

// How messages name a method: "method 'decode'"; a nameless one by its
// index ("method 2"), or "the model" (the one implicit method of a model
// without methods, index kNone).
inline std::string methodLabel(std::string_view name, GraphId index = kNone) {
  if (!name.empty()) return "method '" + std::string(name) + "'";
  return index == kNone ? std::string("the model") : "method " + std::to_string(index);
}

struct Model {
  std::string name;                  // e.g. the file it was read from
  std::vector<Tensor> tensors;
  std::vector<Graph> graphs;         // graphs[0] is the main graph
  // Entry points in planning order; empty: one method, graphs[0].
  std::vector<Method> methods;

  const Graph& main() const { return graphs.at(0); }
  // The methods, or the one implicit method {"", 0}.
  std::vector<Method> entryPoints() const {
    return methods.empty() ? std::vector<Method>{Method{}} : methods;
  }
};

// Throws InputError naming the first problem: dangling ids, alias cycles,
// aliases across devices, subgraph cycles, sizes above kMaxBytes,
// alignment above 2^30, gaps that are unsorted, overlapping, outside a
// window's bytes, or on a tensor that aliases another, methods that are not
// distinct root graphs, an fqn on an activation, one fqn with two sizes,
// state owned by a control-flow body.
void validateModel(const Model& model);

}  // namespace memplan

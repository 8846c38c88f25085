// Lifetimes and planning specs (reference: ExecuTorch's memory planning).
//
// Time is the index of a node in the graph's node list, where the list is:
// one placeholder per graph input (in Graph::inputs order), then the
// graph's nodes, then one output node. Lifetimes are closed intervals
// [first, last]: an op's inputs and outputs always overlap. Graph inputs
// start at 0; mutable buffers live to the last index. Views and in-place
// results share their base's spec (one storage, merged lifetime); a
// ShareWith result gets its own spec whose `inplace_base` names the base.
// A control-flow node uses every outer tensor its bodies read.
//
// Shared state (several methods, or options.share_mutable_buffers): a
// method's mutable buffers are state kept across methods, named by fqn (a
// mutable buffer without one is known by its name). Their specs are marked
// `shared`: planned, but placed once for all methods in the state pool
// instead of the graph's own pools. A constant whose fqn is mutable in some
// method is that state too (a method that only reads it).
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "memplan/graph.h"

namespace memplan {

struct PlanOptions {
  bool alloc_graph_input = true;
  bool alloc_graph_output = true;
  bool alloc_mutable_buffers = true;
  Bytes alignment = 0;               // planning alignment; 0 = the input's
                                     // default (16 for models)
  bool per_device = false;           // partition by device, [0, cpu, dev...]
  // Shared state placed exactly as ExecuTorch's share_mutable_buffers does
  // (pool 2, offsets bumped in order, its errors); without it, a model with
  // several methods still shares its state, in memplan's own way.
  bool share_mutable_buffers = false;
  std::vector<std::optional<Bytes>> capacities;  // per mem_id, if limited
  std::vector<MemId> spill_order;    // pool overflowing -> next in this list
  // Pinned tensors (Tensor::offset) may share bytes while alive together:
  // TensorFlow Lite Micro's offline plans may overlap on purpose. Off: such
  // pins are refused (checkPins) and the verifier reports them.
  bool allow_pinned_overlap = false;
};

struct Spec {
  SpecId id = 0;
  TensorId tensor = kNone;           // representative tensor (the base)
  std::vector<TensorId> members;     // every tensor sharing this storage
  Bytes nbytes = 0;
  Bytes alignment = 16;              // effective alignment
  TimeValue first = 0, last = 0;     // closed lifetime
  Device device;
  std::optional<MemId> mem_id;       // preset pool
  std::optional<Offset> offset;      // pinned offset
  std::optional<Offset> hint;        // preferred offset (algorithms may ignore it)
  std::vector<Gap> gaps;             // windows of [first, last + 1) holding fewer bytes
  SpecId inplace_base = kNone;       // ExecuTorch inplace_base (ShareWith)
  bool is_input = false, is_output = false, is_mutable = false;
  bool is_constant = false;          // untrainable weight
  bool dynamic_unbound = false;
  bool planned = false;              // selected by the alloc_* options
  bool shared = false;               // state placed in the model's state pool
  std::string name;
  std::string fqn;                   // state's name (shared specs)
};

// TensorId -> SpecId for the tensors of one graph; kNone for every other
// id. It holds only the graph's own tensors, sorted: a table over all of
// the model's tensors in every graph would make a model of many small
// bodies cost graphs x tensors of memory.
class TensorSpecMap {
 public:
  using Entry = std::pair<TensorId, SpecId>;

  TensorSpecMap() = default;
  // From entries in any order, one per tensor.
  explicit TensorSpecMap(std::vector<Entry> entries) : entries_(std::move(entries)) {
    std::sort(entries_.begin(), entries_.end());
  }

  // The spec of tensor `t`; kNone when it has none here (any id is valid).
  SpecId operator[](std::size_t t) const {
    const auto it = std::lower_bound(entries_.begin(), entries_.end(), t,
                                     [](const Entry& e, std::size_t v) {
                                       return static_cast<std::size_t>(e.first) < v;
                                     });
    return it != entries_.end() && static_cast<std::size_t>(it->first) == t ? it->second : kNone;
  }
  SpecId at(std::size_t t) const { return (*this)[t]; }

  // Ids in increasing order append in O(1); others insert in O(entries).
  void set(TensorId t, SpecId s) {
    if (entries_.empty() || entries_.back().first < t) {
      entries_.emplace_back(t, s);
      return;
    }
    const auto it = std::lower_bound(entries_.begin(), entries_.end(), Entry{t, kNone},
                                     [](const Entry& a, const Entry& b) { return a.first < b.first; });
    if (it != entries_.end() && it->first == t)
      it->second = s;
    else
      entries_.insert(it, {t, s});
  }

  // One past the largest tensor id with a spec: a bound callers may check
  // ids against before looking them up, as with a dense table.
  std::size_t size() const {
    return entries_.empty() ? 0 : static_cast<std::size_t>(entries_.back().first) + 1;
  }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;  // sorted by tensor id, each id once
};

struct GraphSpecs {
  GraphId graph = 0;
  TimeValue steps = 0;               // length of the node list
  std::vector<Spec> specs;           // every spec, first-appearance order
  TensorSpecMap tensor_spec;         // TensorId -> SpecId (kNone: not here)
  // Specs to plan, in first-appearance order (indices into `specs`).
  std::vector<SpecId> planned() const;
};

// Computes lifetimes and specs of one graph. `submodule_inputs_planned`
// overrides alloc_graph_input for control-flow bodies (true for map/scan).
GraphSpecs collectSpecs(const Model& model, GraphId graph,
                        const PlanOptions& options);

// Whether the model's methods share state: with several methods, or when
// asked for ExecuTorch's share_mutable_buffers.
inline bool sharesState(const Model& model, const PlanOptions& options) {
  return options.share_mutable_buffers || model.methods.size() > 1;
}

// The planning alignment `options` ask for: 16 when left at 0.
inline Bytes planningAlignment(const PlanOptions& options) {
  return options.alignment ? options.alignment : 16;
}

// The options graph `g` is planned with when the model is planned with
// `root`: control-flow bodies plan their inputs only for map/scan (the
// others' inputs are the parent's tensors) and always plan their outputs.
// O(nodes of g's parent); graphsPlanOptions gives every graph's in one pass.
PlanOptions graphPlanOptions(const Model& model, GraphId g, const PlanOptions& root);
std::vector<PlanOptions> graphsPlanOptions(const Model& model, const PlanOptions& root);

// Time at which node `n` of a graph runs (inputs.size() + n).
inline TimeValue nodeTime(const Graph& g, NodeId n) {
  return static_cast<TimeValue>(g.inputs.size()) + n;
}

}  // namespace memplan

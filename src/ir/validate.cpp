// Structural checks every importer runs before a model enters the pipeline.
#include <algorithm>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "memplan/graph.h"
#include "memplan/limits.h"
#include "ir/storage_root.h"

namespace memplan {
namespace {

std::string tensorLabel(const Model& m, TensorId t) {
  return fmt::format("tensor {} '{}'", t, m.tensors[t].name);
}

[[noreturn]] void fail(const Model& m, const std::string& what) {
  throw InputError(fmt::format("{}: {}", m.name.empty() ? "model" : m.name, what));
}

void checkLimits(const Model& m) {
  // memplan's limits (memplan/limits.h), the same for every importer: what
  // is accepted here can be written as graph JSON and read back.
  if (m.tensors.size() > limits::kMaxTensors)
    fail(m, fmt::format("{} tensors, above the limit of {}", m.tensors.size(), limits::kMaxTensors));
  if (m.graphs.size() > limits::kMaxGraphs)
    fail(m, fmt::format("{} graphs, above the limit of {}", m.graphs.size(), limits::kMaxGraphs));
  for (std::size_t g = 0; g < m.graphs.size(); ++g)
    if (m.graphs[g].nodes.size() > limits::kMaxNodes)
      fail(m, fmt::format("graph {} '{}': {} nodes, above the limit of {}", g, m.graphs[g].name,
                          m.graphs[g].nodes.size(), limits::kMaxNodes));
}

void checkTensor(const Model& m, TensorId t) {
  const auto num_tensors = static_cast<TensorId>(m.tensors.size());
  const auto num_graphs = static_cast<GraphId>(m.graphs.size());
  const Tensor& x = m.tensors[t];
  if (x.shape.size() > limits::kMaxRank)
    fail(m, fmt::format("{}: rank {} is above the limit of {}", tensorLabel(m, t), x.shape.size(),
                        limits::kMaxRank));
  for (std::int64_t d : x.shape)
    if (d < -1 || (d > 0 && static_cast<std::uint64_t>(d) > kMaxBytes))
      fail(m, fmt::format("{}: dimension {} is not in [-1, 2^62] (-1: unknown)", tensorLabel(m, t), d));
  if (x.graph < 0 || x.graph >= num_graphs)
    fail(m, fmt::format("{}: graph {} does not exist", tensorLabel(m, t), x.graph));
  if (x.nbytes > kMaxBytes)
    fail(m, fmt::format("{}: size {} bytes exceeds the limit of 2^62", tensorLabel(m, t), x.nbytes));
  // Any alignment works (0: the planning alignment); powers of two are usual.
  if (x.alignment > limits::kMaxAlignment)
    fail(m, fmt::format("{}: alignment {} is above the limit of 2^30", tensorLabel(m, t), x.alignment));
  if (x.mem_id && *x.mem_id < 1)
    fail(m, fmt::format("{}: mem_id {} invalid (pools are numbered from 1)", tensorLabel(m, t), *x.mem_id));
  if (x.offset && !x.mem_id)
    fail(m, fmt::format("{}: a pinned offset needs a preset mem_id", tensorLabel(m, t)));
  if (x.offset && *x.offset > kMaxBytes)
    fail(m, fmt::format("{}: offset {} exceeds the limit of 2^62", tensorLabel(m, t), *x.offset));
  if (x.device.index < 0)
    fail(m, fmt::format("{}: device index {} is negative", tensorLabel(m, t), x.device.index));
  if ((x.alias == AliasKind::None) != (x.alias_of == kNone))
    fail(m, fmt::format("{}: alias kind and alias target disagree", tensorLabel(m, t)));
  if (x.alias_of != kNone) {
    if (x.alias_of < 0 || x.alias_of >= num_tensors)
      fail(m, fmt::format("{}: aliases tensor {} which does not exist", tensorLabel(m, t), x.alias_of));
    if (!(m.tensors[x.alias_of].device == x.device))
      fail(m, fmt::format("{}: aliases {} on another device", tensorLabel(m, t),
                          tensorLabel(m, x.alias_of)));
  }
}

// Whether any tensor has gaps.
bool checkGaps(const Model& m) {
  const auto num_tensors = static_cast<TensorId>(m.tensors.size());
  // Gaps: node windows of the owning graph, sorted and disjoint, on the
  // tensor that owns a storage (its views and in-place results share them).
  for (TensorId t = 0; t < num_tensors; ++t) {
    const Tensor& x = m.tensors[t];
    if (x.gaps.empty()) continue;
    const auto nodes = static_cast<TimeValue>(m.graphs[x.graph].nodes.size());
    TimeValue prev_end = 0;
    for (std::size_t i = 0; i < x.gaps.size(); ++i) {
      const Gap& g = x.gaps[i];
      const auto where = fmt::format("{}: gap {} (nodes [{}, {}))", tensorLabel(m, t), i, g.start, g.end);
      if (g.start < 0 || g.start >= g.end || g.end > nodes)
        fail(m, fmt::format("{} is not a window of its graph's {} nodes", where, nodes));
      if (i > 0 && g.start < prev_end)
        fail(m, fmt::format("{} overlaps or precedes the gap before it (gaps are sorted and disjoint)",
                            where));
      if (g.window && (g.window->first > g.window->second || g.window->second > x.nbytes))
        fail(m, fmt::format("{}: bytes [{}, {}) are not inside its {} bytes", where, g.window->first,
                            g.window->second, x.nbytes));
      prev_end = g.end;
    }
    if (x.alias != AliasKind::None)
      fail(m, fmt::format("{}: a tensor with gaps cannot alias another", tensorLabel(m, t)));
  }
  bool any_gaps = false;
  for (TensorId t = 0; t < num_tensors; ++t) {
    any_gaps |= !m.tensors[t].gaps.empty();
    const TensorId base = m.tensors[t].alias_of;
    if (m.tensors[t].alias == AliasKind::ShareWith && base >= 0 && base < num_tensors &&
        !m.tensors[base].gaps.empty())
      fail(m, fmt::format("{}: shares the allocation of {}, which has gaps (its views and in-place "
                          "results may share its storage, nothing else)",
                          tensorLabel(m, t), tensorLabel(m, base)));
  }
  return any_gaps;
}

void checkAliasChains(const Model& m) {
  const auto num_tensors = static_cast<TensorId>(m.tensors.size());
  // Alias chains must end. Each tensor is walked once: a walk stops at a
  // tensor already known to reach a root, so 10^6 chained views are O(n).
  {
    enum : char { kUnseen, kOnPath, kEnds };
    std::vector<char> state(m.tensors.size(), kUnseen);
    std::vector<TensorId> path;
    for (TensorId t = 0; t < num_tensors; ++t) {
      path.clear();
      TensorId cur = t;
      while (cur != kNone && state[cur] == kUnseen) {
        state[cur] = kOnPath;
        path.push_back(cur);
        cur = m.tensors[cur].alias_of;
      }
      if (cur != kNone && state[cur] == kOnPath) fail(m, fmt::format("{}: alias cycle", tensorLabel(m, cur)));
      for (TensorId p : path) state[p] = kEnds;
    }
  }
}

// The graphs methods enter (graph 0 alone without methods).
std::vector<char> methodEntries(const Model& m) {
  const auto num_graphs = static_cast<GraphId>(m.graphs.size());
  // Methods: distinct names and distinct root graphs, graph 0 among them.
  std::vector<char> entry(m.graphs.size(), 0);
  entry[0] = 1;
  if (!m.methods.empty()) {
    entry[0] = 0;
    std::unordered_map<std::string_view, std::size_t> names;
    for (std::size_t i = 0; i < m.methods.size(); ++i) {
      const Method& method = m.methods[i];
      const std::string at = fmt::format("method {} '{}'", i, method.name);
      if (method.name.empty()) fail(m, fmt::format("method {}: empty name", i));
      if (!names.emplace(method.name, i).second) fail(m, at + ": name used twice");
      if (method.graph < 0 || method.graph >= num_graphs)
        fail(m, fmt::format("{}: graph {} does not exist", at, method.graph));
      if (entry[method.graph])
        fail(m, fmt::format("{}: graph {} is already an entry point", at, method.graph));
      if (m.graphs[method.graph].parent != kNone)
        fail(m, fmt::format("{}: graph {} is a control-flow body, not a root graph", at, method.graph));
      entry[method.graph] = 1;
    }
    if (!entry[0]) fail(m, "graph 0 is no method's entry graph");
  }
  return entry;
}

void checkState(const Model& m, const std::vector<char>& entry) {
  const auto num_tensors = static_cast<TensorId>(m.tensors.size());
  // State named by fqn: one tensor per fqn in a graph, one size per fqn,
  // owned by an entry graph; an activation is not state.
  {
    std::unordered_map<std::string_view, TensorId> size_of;
    std::unordered_map<std::string, TensorId> in_graph;
    for (TensorId t = 0; t < num_tensors; ++t) {
      const Tensor& x = m.tensors[t];
      if (x.fqn.empty()) continue;
      if (x.kind != TensorKind::MutableBuffer && x.kind != TensorKind::Constant)
        fail(m, fmt::format("{}: an fqn names state or a weight; this tensor is neither a mutable "
                            "buffer nor a constant", tensorLabel(m, t)));
      if (x.kind == TensorKind::MutableBuffer && !entry[x.graph])
        fail(m, fmt::format("{}: state '{}' belongs to graph {}, which is not a method's entry graph",
                            tensorLabel(m, t), x.fqn, x.graph));
      const auto [it, fresh] = size_of.emplace(x.fqn, t);
      if (!fresh && m.tensors[it->second].nbytes != x.nbytes)
        fail(m, fmt::format("{}: fqn '{}' has {} bytes here and {} bytes in {}", tensorLabel(m, t),
                            x.fqn, x.nbytes, m.tensors[it->second].nbytes, tensorLabel(m, it->second)));
      const auto [jt, first] = in_graph.emplace(fmt::format("{}/{}", x.graph, x.fqn), t);
      if (!first)
        fail(m, fmt::format("{}: fqn '{}' is also {} of the same graph", tensorLabel(m, t), x.fqn,
                            tensorLabel(m, jt->second)));
    }
  }
}

// Depths of graphs below their method's entry graph, memoized across calls.
struct Depths {
  static constexpr std::int64_t kUnknown = -1, kOnPath = -2;
  std::vector<std::int64_t> depth;
  std::vector<GraphId> path;
};

void checkAncestry(const Model& m, GraphId g, const std::vector<char>& entry, Depths& depths) {
  const auto num_graphs = static_cast<GraphId>(m.graphs.size());
  const Graph& graph = m.graphs[g];
  const auto where = [&](const std::string& what) {
    fail(m, fmt::format("graph {} '{}': {}", g, graph.name, what));
  };
  if (entry[g] && graph.parent != kNone)
    where(g == 0 ? "the main graph cannot have a parent" : "a method's entry graph cannot have a parent");
  if (!entry[g] && (graph.parent < 0 || graph.parent >= num_graphs))
    where("subgraph without a valid parent graph");
  constexpr std::int64_t kUnknownDepth = Depths::kUnknown, kOnPath = Depths::kOnPath;
  std::vector<std::int64_t>& depth = depths.depth;
  std::vector<GraphId>& path = depths.path;
  // Ancestry must be acyclic and reach a root (an entry graph), at most
  // kMaxControlFlowDepth bodies deep: every walk up from here on is short.
  // Depths are remembered, so each graph is walked once.
  {
    path.clear();
    GraphId cur = g;
    while (!entry[cur] && depth[cur] == kUnknownDepth) {
      depth[cur] = kOnPath;
      path.push_back(cur);
      cur = m.graphs[cur].parent;
      if (cur < 0 || cur >= num_graphs || depth[cur] == kOnPath) where("subgraph nesting is cyclic");
    }
    const std::size_t base = entry[cur] ? 0 : static_cast<std::size_t>(depth[cur]);
    for (std::size_t k = 0; k < path.size(); ++k)
      depth[path[k]] = static_cast<std::int64_t>(base + path.size() - k);
    if (!entry[g] && static_cast<std::size_t>(depth[g]) > limits::kMaxControlFlowDepth)
      where(fmt::format("control-flow bodies nested {} deep, above the limit of {}", depth[g],
                        limits::kMaxControlFlowDepth));
  }
}

void checkReferences(const Model& m, GraphId g, const std::vector<char>& entry,
                     std::optional<StorageRoots>& owner) {
  const auto num_tensors = static_cast<TensorId>(m.tensors.size());
  const auto num_graphs = static_cast<GraphId>(m.graphs.size());
  const Graph& graph = m.graphs[g];
  const auto where = [&](const std::string& what) {
    fail(m, fmt::format("graph {} '{}': {}", g, graph.name, what));
  };
  // A graph may reference tensors it owns or that an ancestor owns.
  const auto visible = [&](TensorId t) {
    if (t < 0 || t >= num_tensors) return false;
    for (GraphId a = g; a != kNone; a = m.graphs[a].parent)
      if (m.tensors[t].graph == a) return true;
    return false;
  };
  const auto check = [&](TensorId t, const std::string& ctx) {
    if (t < 0 || t >= num_tensors) where(fmt::format("{}: tensor {} does not exist", ctx, t));
    if (!visible(t))
      where(fmt::format("{}: {} belongs to graph {}, not visible here", ctx, tensorLabel(m, t),
                        m.tensors[t].graph));
  };
  // A node may not use a tensor of its graph inside one of its storage's gaps.
  const auto inGap = [&](TensorId t, NodeId n, const std::string& ctx) {
    if (!owner) return;
    const Tensor& x = m.tensors[(*owner)(t)];
    if (x.gaps.empty() || x.graph != g) return;
    const auto after = std::upper_bound(x.gaps.begin(), x.gaps.end(), TimeValue{n},
                                        [](TimeValue v, const Gap& gap) { return v < gap.start; });
    if (after == x.gaps.begin() || n >= std::prev(after)->end) return;
    const Gap& gap = *std::prev(after);
    where(fmt::format("{} uses {} inside its gap {} (nodes [{}, {}))", ctx, tensorLabel(m, t),
                      std::prev(after) - x.gaps.begin(), gap.start, gap.end));
  };
  for (TensorId t : graph.inputs) check(t, "inputs");
  for (TensorId t : graph.outputs) check(t, "outputs");
  for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes.size()); ++n) {
    const Node& node = graph.nodes[n];
    const std::string ctx = fmt::format("node {} '{}'", n, node.name);
    for (const auto* list : {&node.inputs, &node.outputs})
      for (TensorId t : *list) {
        check(t, ctx);
        inGap(t, n, ctx);
      }
    for (GraphId s : node.subgraphs) {
      if (s <= 0 || s >= num_graphs) where(fmt::format("{}: subgraph {} does not exist", ctx, s));
      if (entry[s]) where(fmt::format("{}: subgraph {} is a method's entry graph", ctx, s));
      // A body may be shared by several nodes (TFLite), but never run itself.
      for (GraphId a = g; a != kNone; a = m.graphs[a].parent)
        if (a == s) where(fmt::format("{}: subgraph {} encloses this node (recursion)", ctx, s));
    }
    if (node.kind == NodeKind::Op && !node.subgraphs.empty())
      where(fmt::format("{}: an ordinary op cannot own subgraphs", ctx));
  }
}

}  // namespace

void validateModel(const Model& m) {
  if (m.graphs.empty()) fail(m, "no graphs");
  checkLimits(m);
  for (TensorId t = 0; t < static_cast<TensorId>(m.tensors.size()); ++t) checkTensor(m, t);
  const bool any_gaps = checkGaps(m);
  checkAliasChains(m);
  // The tensor owning each storage, asked only when some tensor has gaps.
  std::optional<StorageRoots> owner;
  if (any_gaps) owner.emplace(m);
  const std::vector<char> entry = methodEntries(m);
  checkState(m, entry);
  Depths depths;
  depths.depth.assign(m.graphs.size(), Depths::kUnknown);
  for (GraphId g = 0; g < static_cast<GraphId>(m.graphs.size()); ++g) {
    checkAncestry(m, g, entry, depths);
    checkReferences(m, g, entry, owner);
  }
}

}  // namespace memplan

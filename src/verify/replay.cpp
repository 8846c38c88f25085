// Replay of a plan on shadow arenas (see memplan/replay.h).
#include "memplan/replay.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "memplan/verify.h"

namespace memplan {
namespace {

using WriteId = std::uint32_t;  // index into the write log; 0 = never written
constexpr WriteId kUnwritten = 0;

// One pool's shadow: which write last touched each byte. Dense mode keeps one
// id per granule (every range is a multiple of it); sparse mode keeps
// disjoint runs [start, end) -> id in an ordered map.
class Shadow {
 public:
  void initDense(Bytes size, Bytes granule) {
    dense_ = true;
    granule_ = granule;
    cells_.assign(static_cast<std::size_t>(size / granule + (size % granule != 0)), kUnwritten);
  }
  void initSparse() { dense_ = false; }
  bool dense() const { return dense_; }

  void write(Offset off, Bytes n, WriteId id) {
    if (n == 0) return;
    if (dense_) {
      std::fill(cells_.begin() + static_cast<std::ptrdiff_t>(off / granule_),
                cells_.begin() + static_cast<std::ptrdiff_t>((off + n) / granule_), id);
      return;
    }
    const Offset end = off + n;
    auto it = runs_.lower_bound(off);
    if (it != runs_.begin()) {
      auto prev = std::prev(it);
      if (prev->second.end > off) {  // a run straddles `off`: keep its head
        const Run tail = prev->second;
        prev->second.end = off;
        if (tail.end > end) runs_.emplace(end, tail);
      }
    }
    it = runs_.lower_bound(off);
    while (it != runs_.end() && it->first < end) {
      if (it->second.end > end) {  // keep the part past `end`
        const Run tail = it->second;
        runs_.erase(it);
        runs_.emplace(end, tail);
        break;
      }
      it = runs_.erase(it);
    }
    runs_.emplace(off, Run{end, id});
  }

  struct Mismatch {
    Offset offset;
    WriteId found;
  };
  // First byte of [off, off + n) whose owner `accept` refuses.
  template <typename Accept>
  std::optional<Mismatch> check(Offset off, Bytes n, const Accept& accept) const {
    if (n == 0) return std::nullopt;
    if (dense_) {
      for (std::size_t c = off / granule_, e = (off + n) / granule_; c < e; ++c)
        if (!accept(cells_[c])) return Mismatch{c * granule_, cells_[c]};
      return std::nullopt;
    }
    const Offset end = off + n;
    Offset pos = off;
    while (pos < end) {
      auto it = runs_.upper_bound(pos);
      if (it == runs_.begin() || std::prev(it)->second.end <= pos) {
        if (!accept(kUnwritten)) return Mismatch{pos, kUnwritten};
        pos = it == runs_.end() ? end : std::min(end, it->first);
        continue;
      }
      const Run& run = std::prev(it)->second;
      if (!accept(run.id)) return Mismatch{pos, run.id};
      pos = run.end;
    }
    return std::nullopt;
  }

 private:
  struct Run {
    Offset end;
    WriteId id;
  };
  bool dense_ = true;
  Bytes granule_ = 1;
  std::vector<WriteId> cells_;
  std::map<Offset, Run> runs_;
};

// Builds the shadows of `sizes` (index = mem_id): dense while the budget
// lasts, in mem_id order, sparse beyond. `granules[m]` divides every range.
std::vector<Shadow> makeShadows(const std::vector<Bytes>& sizes, const std::vector<Bytes>& granules,
                                const ReplayOptions& options, ReplayResult& result) {
  std::vector<Shadow> shadows(sizes.size());
  std::uint64_t budget = options.force_sparse ? 0 : options.max_dense_bytes;
  for (std::size_t m = 1; m < sizes.size(); ++m) {
    const Bytes g = std::max<Bytes>(granules[m], 1);
    const std::uint64_t cells = sizes[m] / g + (sizes[m] % g != 0);
    const std::uint64_t cost = cells * sizeof(WriteId);  // sizes <= kMaxBytes: no overflow
    if (cells <= budget / sizeof(WriteId) && cost <= budget) {
      budget -= cost;
      shadows[m].initDense(sizes[m], g);
      ++result.dense_pools;
    } else {
      shadows[m].initSparse();
      ++result.sparse_pools;
    }
  }
  return shadows;
}

std::string stepName(const std::string& node, bool end) {
  if (!node.empty()) return fmt::format("node '{}'", node);
  return end ? "graph end" : "graph start";
}

// ---------------------------------------------------------------------------
// Model replay.
class ModelReplay {
 public:
  ModelReplay(const Model& model, const Plan& plan, const ReplayOptions& options)
      : m_(model), p_(plan), options_(options) {}

  ReplayResult run() {
    if (!prepare()) return std::move(r_);
    active_.assign(m_.graphs.size(), 0);
    runGraph(0);
    // What needs no running (pools, presets, pins, bounds, the reserved
    // prefix, alignment) is then checked as the verifier checks it.
    if (!failed()) {
      const VerifyResult structure = checkPlanStructure(p_, 1);
      if (!structure.ok())
        fail(ReplayIssue::BadPlan, "replay: graph " + std::to_string(structure.violations[0].graph) +
                                       ": " + structure.violations[0].message);
    }
    return std::move(r_);
  }

 private:
  struct Event {
    TensorId tensor = kNone;
    GraphId graph = 0;
    std::string node;  // "" = graph start / first use
    TimeValue step = 0;
  };
  struct Storage {
    GraphId graph = 0;
    SpecId spec = kNone;
    const Allocation* alloc = nullptr;  // null: not planned
    Bytes need = 0;                     // largest member tensor
    WriteId version = kUnwritten;       // the write its bytes must hold
  };

  void fail(ReplayIssue issue, std::string message) {
    if (r_.issue != ReplayIssue::None) return;
    r_.issue = issue;
    r_.message = std::move(message);
  }
  bool failed() const { return r_.issue != ReplayIssue::None; }

  // Storage of tensor `t`: its spec in the plan of the graph that owns it,
  // following views and in-place results to their base when that spec is
  // kept elsewhere (a view of an outer-scope tensor).
  std::int64_t findStorage(TensorId t) const {
    const auto ntensors = static_cast<TensorId>(m_.tensors.size());
    for (std::size_t hops = 0; t >= 0 && t < ntensors && hops <= m_.tensors.size(); ++hops) {
      const Tensor& x = m_.tensors[t];
      if (x.graph >= 0 && x.graph < static_cast<GraphId>(p_.graphs.size())) {
        const GraphSpecs& specs = p_.graphs[x.graph].specs;
        if (static_cast<std::size_t>(t) < specs.tensor_spec.size()) {
          const SpecId s = specs.tensor_spec[t];
          if (s >= 0 && static_cast<std::size_t>(s) < specs.specs.size())
            return static_cast<std::int64_t>(base_[x.graph]) + s;
        }
      }
      if (x.alias != AliasKind::View && x.alias != AliasKind::InPlace) break;
      t = x.alias_of;
    }
    return -1;
  }

  bool prepare() {
    if (p_.graphs.size() != m_.graphs.size() || m_.graphs.empty()) {
      fail(ReplayIssue::BadPlan, fmt::format("replay: the plan has {} graphs, the model {}",
                                             p_.graphs.size(), m_.graphs.size()));
      return false;
    }
    base_.resize(p_.graphs.size());
    std::size_t total = 0;
    for (std::size_t g = 0; g < p_.graphs.size(); ++g) {
      base_[g] = total;
      total += p_.graphs[g].specs.specs.size();
    }
    storages_.resize(total);
    for (std::size_t g = 0; g < p_.graphs.size(); ++g)
      for (std::size_t s = 0; s < p_.graphs[g].specs.specs.size(); ++s) {
        storages_[base_[g] + s].graph = static_cast<GraphId>(g);
        storages_[base_[g] + s].spec = static_cast<SpecId>(s);
      }
    for (std::size_t g = 0; g < p_.graphs.size(); ++g) {
      const GraphPlan& gp = p_.graphs[g];
      for (const Allocation& a : gp.allocations) {
        if (a.spec < 0 || static_cast<std::size_t>(a.spec) >= gp.specs.specs.size()) {
          fail(ReplayIssue::BadPlan,
               fmt::format("replay: graph {} has an allocation for spec {}, which does not exist",
                           g, a.spec));
          return false;
        }
        storages_[base_[g] + a.spec].alloc = &a;
      }
    }
    tensor_storage_.resize(m_.tensors.size());
    for (TensorId t = 0; t < static_cast<TensorId>(m_.tensors.size()); ++t) {
      const std::int64_t s = findStorage(t);
      tensor_storage_[t] = s;
      if (s >= 0 && !m_.tensors[t].dynamic_unbound)
        storages_[s].need = std::max(storages_[s].need, m_.tensors[t].nbytes);
    }

    // Every pool lives in the main graph's arenas; bodies use their prefix.
    const std::vector<Bytes>& sizes = p_.graphs[0].bufsizes;
    std::vector<Bytes> granules(sizes.size(), 0);
    for (const Storage& s : storages_) {
      if (!s.alloc || s.need == 0) continue;
      const Allocation& a = *s.alloc;
      const GraphPlan& gp = p_.graphs[s.graph];
      const std::string& name = gp.specs.specs[s.spec].name;
      if (a.size < s.need) {
        fail(ReplayIssue::ShortAllocation,
             fmt::format("replay: graph {} tensor '{}' needs {} bytes but its allocation holds {}",
                         s.graph, name, s.need, a.size));
        return false;
      }
      // A tensor owns its whole allocation, alignment padding included (the
      // verifier's rule): writes and checks cover all of it.
      const auto end = checkedAdd(a.offset, a.size);
      const auto mid = static_cast<std::size_t>(std::max(a.mem_id, 0));
      const Bytes own = mid < gp.bufsizes.size() ? gp.bufsizes[mid] : 0;
      const Bytes arena = mid < sizes.size() ? sizes[mid] : 0;
      if (a.mem_id < 1 || !end || *end > own || *end > arena) {
        fail(ReplayIssue::OutOfArena,
             fmt::format("replay: graph {} tensor '{}' at mem_id {} [{}, +{}) lies outside its "
                         "pool ({} bytes in its graph, {} in the arena)",
                         s.graph, name, a.mem_id, a.offset, a.size, own, arena));
        return false;
      }
      granules[mid] = std::gcd(granules[mid], std::gcd(a.offset, *end));
    }
    shadows_ = makeShadows(sizes, granules, options_, r_);
    events_.emplace_back();  // WriteId 0: never written
    return true;
  }

  bool planned(std::int64_t s) const { return s >= 0 && storages_[s].alloc && storages_[s].need; }

  // Does producing `t` write bytes? A view of its own storage does not.
  bool writes(TensorId t) const {
    const std::int64_t s = tensor_storage_[t];
    if (s < 0) return false;
    const Tensor& x = m_.tensors[t];
    if (x.alias == AliasKind::View && x.alias_of >= 0 && tensor_storage_[x.alias_of] == s)
      return false;
    return true;
  }

  void write(std::int64_t s, TensorId t, GraphId g, const std::string& node, TimeValue step) {
    if (!planned(s)) return;
    Storage& st = storages_[s];
    if (events_.size() >= std::numeric_limits<WriteId>::max()) {
      fail(ReplayIssue::BadPlan, "replay: more than 2^32 writes");
      return;
    }
    const auto id = static_cast<WriteId>(events_.size());
    events_.push_back(Event{t, g, node, step});
    shadows_[st.alloc->mem_id].write(st.alloc->offset, st.alloc->size, id);
    st.version = id;
    ++r_.writes;
  }

  // Checks that `t` holds its last write; reports the first clobber.
  void read(TensorId t, GraphId g, const std::string& node, TimeValue step, bool end) {
    if (failed() || t < 0 || static_cast<std::size_t>(t) >= m_.tensors.size()) return;
    const std::int64_t s = tensor_storage_[t];
    if (!planned(s)) return;
    Storage& st = storages_[s];
    if (st.version == kUnwritten) {  // loaded at first use (weights, stray reads)
      write(s, t, g, "", step);
      return;
    }
    ++r_.reads;
    const WriteId want = st.version;
    const auto bad = shadows_[st.alloc->mem_id].check(st.alloc->offset, st.alloc->size,
                                                      [want](WriteId id) { return id == want; });
    if (!bad) return;
    const Event& w = events_[bad->found];
    r_.graph = g;
    r_.victim = m_.tensors[t].name;
    r_.writer = w.tensor >= 0 ? m_.tensors[w.tensor].name : "";
    r_.writer_node = w.node;
    r_.write_step = w.step;
    r_.reader_node = node;
    r_.read_step = step;
    r_.mem_id = st.alloc->mem_id;
    r_.offset = bad->offset;
    fail(ReplayIssue::Clobber,
         fmt::format("replay: tensor '{}' (graph {}) was clobbered at mem_id {} offset {}: "
                     "overwritten by '{}' at {} (graph {}, step {}), found at {} (step {})",
                     r_.victim, g, r_.mem_id, r_.offset, r_.writer,
                     stepName(w.node, false), w.graph, w.step, stepName(node, end), step));
  }

  // Inputs of `node` whose bytes its outputs may legitimately overwrite.
  bool overwrittenByNode(TensorId in, const Node& node) const {
    const std::int64_t s = tensor_storage_[in];
    for (TensorId o : node.outputs) {
      if (tensor_storage_[o] == s) return true;  // in-place result
      const Tensor& x = m_.tensors[o];
      // An out-variant reusing its argument's allocation: where it sits.
      if (x.alias == AliasKind::ShareWith && x.alias_of >= 0 && tensor_storage_[x.alias_of] == s &&
          sameAllocation(tensor_storage_[o], s))
        return true;
    }
    return false;
  }

  // Tensors from outside `body` that it (or a body inside it) uses: for
  // the node that runs it they are inputs like its own.
  void captured(GraphId body, GraphId root, std::vector<TensorId>& out, int depth = 0) const {
    if (depth > 64 || body < 0 || static_cast<std::size_t>(body) >= m_.graphs.size()) return;
    const auto outside = [&](TensorId t) {
      if (t < 0 || static_cast<std::size_t>(t) >= m_.tensors.size()) return false;
      for (GraphId a = m_.tensors[t].graph, hops = 0;
           a >= 0 && static_cast<std::size_t>(a) < m_.graphs.size() && hops <= 64;
           a = m_.graphs[a].parent, ++hops)
        if (a == root) return false;
      return true;
    };
    const Graph& graph = m_.graphs[body];
    for (const Node& node : graph.nodes) {
      for (TensorId t : node.inputs)
        if (outside(t)) out.push_back(t);
      for (TensorId t : node.outputs)
        if (outside(t)) out.push_back(t);
      for (GraphId s : node.subgraphs) captured(s, root, out, depth + 1);
    }
    for (TensorId t : graph.outputs)
      if (outside(t)) out.push_back(t);
  }

  bool sameAllocation(std::int64_t a, std::int64_t b) const {
    if (!planned(a) || !planned(b)) return false;
    return storages_[a].alloc->mem_id == storages_[b].alloc->mem_id &&
           storages_[a].alloc->offset == storages_[b].alloc->offset;
  }

  void runGraph(GraphId g) {
    if (failed() || g < 0 || static_cast<std::size_t>(g) >= m_.graphs.size() || active_[g]) return;
    active_[g] = 1;
    const Graph& graph = m_.graphs[g];
    // Start: copy planned inputs in, load mutable state.
    for (std::size_t i = 0; i < graph.inputs.size(); ++i)
      write(tensor_storage_[graph.inputs[i]], graph.inputs[i], g, "", static_cast<TimeValue>(i));
    for (TensorId t = 0; t < static_cast<TensorId>(m_.tensors.size()); ++t)
      if (m_.tensors[t].graph == g && m_.tensors[t].kind == TensorKind::MutableBuffer &&
          !storages_.empty() && tensor_storage_[t] >= 0 &&
          storages_[tensor_storage_[t]].version == kUnwritten)
        write(tensor_storage_[t], t, g, "", 0);
    // Every input is in place before the first node runs (the placeholders
    // come first), used or not.
    const TimeValue first_node = nodeTime(graph, 0);
    for (TensorId t : graph.inputs) read(t, g, "", first_node, false);
    for (TensorId t = 0; t < static_cast<TensorId>(m_.tensors.size()); ++t)
      if (m_.tensors[t].graph == g && m_.tensors[t].kind == TensorKind::MutableBuffer)
        read(t, g, "", first_node, false);

    for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes.size()) && !failed(); ++n) {
      const Node& node = graph.nodes[n];
      const TimeValue step = nodeTime(graph, n);
      ++r_.steps;
      for (TensorId t : node.inputs) read(t, g, node.name, step, false);
      for (GraphId sub : node.subgraphs) runGraph(sub);
      if (failed()) break;
      for (TensorId t : node.outputs)
        if (writes(t)) write(tensor_storage_[t], t, g, node.name, step);
      for (TensorId t : node.outputs) read(t, g, node.name, step, false);
      for (TensorId t : node.inputs)
        if (!overwrittenByNode(t, node)) read(t, g, node.name, step, false);
      if (!node.subgraphs.empty()) {
        std::vector<TensorId> outer;
        for (GraphId sub : node.subgraphs) captured(sub, sub, outer);
        for (TensorId t : outer)
          if (!overwrittenByNode(t, node)) read(t, g, node.name, step, false);
      }
    }
    const TimeValue end = nodeTime(graph, static_cast<NodeId>(graph.nodes.size()));
    for (TensorId t : graph.outputs) read(t, g, "", end, true);
    for (TensorId t = 0; t < static_cast<TensorId>(m_.tensors.size()); ++t)
      if (m_.tensors[t].graph == g && m_.tensors[t].kind == TensorKind::MutableBuffer)
        read(t, g, "", end, true);
    active_[g] = 0;
  }

  const Model& m_;
  const Plan& p_;
  const ReplayOptions& options_;
  ReplayResult r_;
  std::vector<std::size_t> base_;            // graph -> first storage index
  std::vector<Storage> storages_;            // one per spec of every graph
  std::vector<std::int64_t> tensor_storage_; // tensor -> storage (-1: none)
  std::vector<Shadow> shadows_;              // index = mem_id
  std::vector<Event> events_;                // index = WriteId
  std::vector<char> active_;                 // graphs on the call stack
};

}  // namespace

ReplayResult replayPlan(const Model& model, const Plan& plan, const ReplayOptions& options) {
  return ModelReplay(model, plan, options).run();
}

// ---------------------------------------------------------------------------
// Spec list replay.
namespace {
ReplayResult replaySpecsRun(const GraphPlan& plan, const ReplayOptions& options);
}  // namespace

ReplayResult replaySpecs(const GraphPlan& plan, const ReplayOptions& options) {
  ReplayResult r = replaySpecsRun(plan, options);
  if (!r.ok()) return r;
  // What needs no running is checked as the verifier checks it.
  if (const VerifyResult structure = checkGraphStructure(plan, PlanOptions{}, 1); !structure.ok()) {
    r.issue = ReplayIssue::BadPlan;
    r.message = "replay: " + structure.violations[0].message;
  }
  return r;
}

namespace {

ReplayResult replaySpecsRun(const GraphPlan& plan, const ReplayOptions& options) {
  ReplayResult r;
  const std::vector<Spec>& specs = plan.specs.specs;
  std::vector<const Allocation*> alloc(specs.size(), nullptr);
  for (const Allocation& a : plan.allocations) {
    if (a.spec < 0 || static_cast<std::size_t>(a.spec) >= specs.size()) {
      r.issue = ReplayIssue::BadPlan;
      r.message = fmt::format("replay: allocation for spec {}, which does not exist", a.spec);
      return r;
    }
    alloc[a.spec] = &a;
  }
  std::vector<Bytes> reserved(plan.bufsizes.size(), 0);
  for (const PoolInfo& pool : plan.pools)
    if (pool.mem_id >= 1 && static_cast<std::size_t>(pool.mem_id) < reserved.size())
      reserved[pool.mem_id] = std::min(pool.reserved, plan.bufsizes[pool.mem_id]);

  std::vector<Bytes> granules(plan.bufsizes.size(), 0);
  for (std::size_t m = 1; m < reserved.size(); ++m) granules[m] = reserved[m];
  struct Op {
    TimeValue time;
    bool read;
    SpecId spec;
  };
  std::vector<Op> ops;
  for (std::size_t s = 0; s < specs.size(); ++s) {
    const Allocation* a = alloc[s];
    if (!a || specs[s].nbytes == 0 || a->size == 0) continue;
    const Spec& spec = specs[s];
    const auto end = checkedAdd(a->offset, a->size);  // padding included
    const auto mid = static_cast<std::size_t>(std::max(a->mem_id, 0));
    const Bytes pool = mid < plan.bufsizes.size() ? plan.bufsizes[mid] : 0;
    if (a->size < spec.nbytes) {
      r.issue = ReplayIssue::ShortAllocation;
      r.message = fmt::format("replay: spec '{}' needs {} bytes but its allocation holds {}",
                              spec.name, spec.nbytes, a->size);
      return r;
    }
    if (a->mem_id < 1 || !end || *end > pool) {
      r.issue = ReplayIssue::OutOfArena;
      r.message = fmt::format("replay: spec '{}' at mem_id {} [{}, +{}) lies outside its pool "
                              "({} bytes)", spec.name, a->mem_id, a->offset, a->size, pool);
      return r;
    }
    if (spec.first > spec.last) {
      r.issue = ReplayIssue::BadPlan;
      r.message = fmt::format("replay: spec '{}' has lifetime [{}, {}]", spec.name, spec.first,
                              spec.last);
      return r;
    }
    granules[mid] = std::gcd(granules[mid], std::gcd(a->offset, *end));
    ops.push_back({spec.first, false, static_cast<SpecId>(s)});
    ops.push_back({spec.last, true, static_cast<SpecId>(s)});
  }
  // Writes of a step before its reads; stable by spec order otherwise.
  std::stable_sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) {
    if (a.time != b.time) return a.time < b.time;
    return a.read < b.read;
  });
  std::vector<Shadow> shadows = makeShadows(plan.bufsizes, granules, options, r);

  // Write ids: 1 + spec for specs, `reserved_id` for the prefixes.
  const WriteId reserved_id = static_cast<WriteId>(specs.size()) + 1;
  for (std::size_t m = 1; m < reserved.size(); ++m) shadows[m].write(0, reserved[m], reserved_id);
  const auto specOfId = [&](WriteId id) -> SpecId {
    return id >= 1 && id <= specs.size() ? static_cast<SpecId>(id - 1) : kNone;
  };
  TimeValue last_time = std::numeric_limits<TimeValue>::min();
  for (const Op& op : ops) {
    if (op.time != last_time) ++r.steps, last_time = op.time;
    const Allocation& a = *alloc[op.spec];
    const Bytes n = a.size;
    const WriteId id = static_cast<WriteId>(op.spec) + 1;
    if (!op.read) {
      shadows[a.mem_id].write(a.offset, n, id);
      ++r.writes;
      continue;
    }
    ++r.reads;
    // A ShareWith pair at one offset may overwrite each other (the
    // verifier's exception).
    const auto accept = [&](WriteId found) {
      if (found == id) return true;
      const SpecId other = specOfId(found);
      return other != kNone && alloc[other] && alloc[other]->mem_id == a.mem_id &&
             alloc[other]->offset == a.offset &&
             (specs[other].inplace_base == op.spec || specs[op.spec].inplace_base == other);
    };
    if (const auto bad = shadows[a.mem_id].check(a.offset, n, accept)) {
      const SpecId other = specOfId(bad->found);
      r.issue = ReplayIssue::Clobber;
      r.graph = plan.graph;
      r.victim = specs[op.spec].name;
      r.writer = other != kNone ? specs[other].name : "";
      r.write_step = other != kNone ? specs[other].first : 0;
      r.read_step = op.time;
      r.mem_id = a.mem_id;
      r.offset = bad->offset;
      r.message = fmt::format("replay: spec '{}' [{}, {}] was clobbered at mem_id {} offset {}: "
                              "overwritten by '{}' (written at step {})",
                              r.victim, specs[op.spec].first, specs[op.spec].last, r.mem_id,
                              r.offset, other != kNone ? r.writer : "nothing", r.write_step);
      return r;
    }
  }
  for (std::size_t m = 1; m < reserved.size(); ++m) {
    const auto bad = shadows[m].check(0, reserved[m],
                                      [&](WriteId found) { return found == reserved_id; });
    if (!bad) continue;
    const SpecId other = specOfId(bad->found);
    r.issue = ReplayIssue::Clobber;
    r.graph = plan.graph;
    r.victim = fmt::format("reserved prefix of mem_id {}", m);
    r.writer = other != kNone ? specs[other].name : "";
    r.write_step = other != kNone ? specs[other].first : 0;
    r.mem_id = static_cast<MemId>(m);
    r.offset = bad->offset;
    r.message = fmt::format("replay: the reserved prefix of mem_id {} ({} bytes) was overwritten "
                            "at offset {} by '{}' (written at step {})",
                            m, reserved[m], r.offset, r.writer, r.write_step);
    return r;
  }
  return r;
}

}  // namespace

}  // namespace memplan

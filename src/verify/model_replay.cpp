// Replay of a plan on a model (replay.h): the graphs run node by
// node on shadow arenas (verify/shadow.h), each output written with a write
// id of its own and each read checked to find the write its tensor last
// had.
//
// What it tracks, on x --n1--> y, (x, y) --n2--> z, with z planned over x:
//
//   plan         mem_id 1: x [0, 64)  y [64, 128)  z [0, 64)
//
//   step    runs                         events_ (writes)  shadow of mem_id 1
//   start   write x; read x: w1 ok       w1: x, start      [0,64) w1
//   n1      read x: w1 ok; write y;      w2: y, n1         [0,64) w1 [64,128) w2
//           read y: w2 ok; read x: ok
//   n2      read x, y: ok; write z;      w3: z, n2         [0,64) w3 [64,128) w2
//           read z: w3 ok; read x: finds w3, not w1
//           -> "tensor 'x' was clobbered at mem_id 1 offset 0:
//               overwritten by 'z' at node 'n2'"
//
//   storages_[s]      one per spec of every graph (base_[graph] + spec):
//                     its allocation and `version`, the write id its bytes
//                     must hold (x: w1 until n2 reads it)
//   tensor_storage_   tensor -> storage; views and in-place results share
//                     their base's, and producing them writes nothing new
//   traces_           per body (a graph a node runs), its first run's
//                     operations, kept to replay later calls (see below)
#include "verify/replay.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "ir/body_walk.h"
#include "memplan/verify.h"
#include "verify/pieces.h"
#include "verify/shadow.h"

namespace memplan {
namespace {

using shadow::bump;
using shadow::Clobber;
using shadow::kUnwritten;
using shadow::PoolShape;
using shadow::reportClobber;
using shadow::saturatingCount;
using shadow::Shadow;
using shadow::shadowWork;
using shadow::WriteId;

std::string stepName(const std::string& node, bool end) {
  if (!node.empty()) return fmt::format("node '{}'", node);
  return end ? "graph end" : "graph start";
}

// A body's captured tensors, computed once per body.
class CapturedUses {
 public:
  explicit CapturedUses(const Model& m)
      : m_(m), captured_(m.graphs.size()), walked_(m.graphs.size(), 0) {}

  struct Use {
    TensorId tensor;
    std::uint64_t times;
  };
  // Tensors from outside `body` that it (or a body inside it) uses: for
  // the node that runs it they are inputs like its own. Each once, in the
  // order a depth-first walk first meets them, with the number of times a
  // walk that enters a body at every node running it would meet it (each
  // is a read; the first decides, the others find the same bytes).
  // Computed once per body, each graph below it walked once.
  const std::vector<Use>& of(GraphId body) {
    if (captured_[body]) return *captured_[body];
    std::vector<Use>& out = captured_[body].emplace();
    const auto outside = [&](TensorId t) {
      if (t < 0 || static_cast<std::size_t>(t) >= m_.tensors.size()) return false;
      for (GraphId a = m_.tensors[t].graph, hops = 0;
           a >= 0 && static_cast<std::size_t>(a) < m_.graphs.size() && hops <= 64;
           a = m_.graphs[a].parent, ++hops)
        if (a == body) return false;
      return true;
    };
    // 1. The graphs below `body`, depth first; tensors in first-meeting order.
    std::map<GraphId, std::size_t> order;  // graph -> position in `walk`
    std::vector<GraphId> walk, finished;
    std::map<TensorId, std::size_t> index;  // tensor -> position in `out`
    walkBodiesOnce(
        m_, body, walked_,
        [&](GraphId x) {
          order.emplace(x, walk.size());
          walk.push_back(x);
        },
        [&](const std::vector<TensorId>& list) {
          for (TensorId t : list)
            if (outside(t) && index.emplace(t, out.size()).second) out.push_back({t, 0});
        },
        [&](GraphId x) { finished.push_back(x); });
    for (GraphId x : walk) walked_[x] = 0;
    // 2. How many ways each graph is entered from `body` (callers first:
    // reverse finishing order), and each use counted that many times.
    std::vector<std::uint64_t> paths(walk.size(), 0);
    paths[0] = 1;
    const auto count = [&](const std::vector<TensorId>& list, std::uint64_t times) {
      for (TensorId t : list)
        if (const auto it = index.find(t); it != index.end())
          out[it->second].times = saturatingCount(out[it->second].times, times);
    };
    for (auto it = finished.rbegin(); it != finished.rend(); ++it) {
      const std::uint64_t times = paths[order.at(*it)];
      const Graph& graph = m_.graphs[*it];
      for (const Node& node : graph.nodes) {
        count(node.inputs, times);
        count(node.outputs, times);
        for (GraphId s : node.subgraphs)
          if (const auto at = order.find(s); at != order.end() && s != body)
            paths[at->second] = saturatingCount(paths[at->second], times);
      }
      count(graph.outputs, times);
    }
    return out;
  }

 private:
  const Model& m_;
  std::vector<std::optional<std::vector<Use>>> captured_;  // by body
  std::vector<char> walked_;  // walkBodiesOnce's marks, cleared after each walk
};

// Body traces.
//
// A body run by several nodes (bodies form a DAG: graph i may run graph i+1
// from two nodes, 2^depth runs in all) is stepped through once; its trace
// is kept, compressed, and every later call of the body replays the trace
// instead of the body:
//  - a read of a storage the body has not written before in this run is
//    kept: it is the only kind of check whose outcome depends on the bytes
//    the body finds (every other read sees only the body's own writes,
//    which are the same at every call, and passed the first time);
//  - writes between two kept reads are kept once per storage and byte
//    range, the last one: the bytes they leave are the same;
//  - the counts (writes, reads, steps) of the dropped operations are added
//    as they were.
// Replaying the trace is the body's run exactly: same checks on the same
// bytes, same verdict, same message, same counts; each distinct body costs
// its own size once and its trace's size per call.

// One operation of a body's trace: the arguments of write() or read().
enum class OpKind : std::uint8_t { Write, Read, LoadIfUnwritten };
struct Op {
  OpKind kind = OpKind::Write;
  std::int64_t storage = -1;         // write / load: the storage written
  TensorId tensor = kNone;
  GraphId graph = 0;
  const std::string* node = nullptr;
  TimeValue step = 0;
  bool end = false;                  // read: at the graph's end
  Bytes begin = 0;
  std::optional<Bytes> until;        // bytes [begin, until) of the storage
  bool counted_write = false;        // when recorded: counted as a write
  // As recorded: the counters before it ran. In a trace: what the
  // operations dropped since the kept one before it counted.
  std::uint64_t writes = 0, reads = 0, steps = 0;
};
struct Trace {
  std::vector<Op> ops;
  std::uint64_t writes = 0, reads = 0, steps = 0;  // dropped after the last op
};
struct Recorder {
  std::vector<Op> ops;               // as run (bodies inside: their kept operations)
  std::uint64_t writes = 0, reads = 0, steps = 0;  // counters at the start
};

// The operations of a body's run that its trace keeps (see above), in
// order, as recorded. `touched` (by storage, all 0) is scratch.
template <typename StorageSize>
std::vector<Op> keptOps(const Recorder& run, std::vector<char>& touched, const StorageSize& size) {
  std::vector<Op> out;
  std::vector<std::size_t> touchedlist;
  std::vector<const Op*> segment;  // writes since the last kept read
  const auto flush = [&] {
    // The last write of each (storage, bytes), in order.
    std::set<std::tuple<std::int64_t, Bytes, Bytes>> seen;
    std::vector<const Op*> last;
    for (auto it = segment.rbegin(); it != segment.rend(); ++it) {
      const Op& w = **it;
      const Bytes until = w.until.value_or(size(w.storage));
      if (seen.emplace(w.storage, w.begin, until).second) last.push_back(&w);
    }
    for (auto it = last.rbegin(); it != last.rend(); ++it) out.push_back(**it);
    segment.clear();
  };
  for (const Op& op : run.ops) {
    const auto s = static_cast<std::size_t>(op.storage);
    const bool first = !touched[s];
    if (first) touchedlist.push_back(s);
    touched[s] = 1;
    if (op.kind == OpKind::Write) {
      segment.push_back(&op);
    } else if (op.kind == OpKind::LoadIfUnwritten || first) {
      flush();
      out.push_back(op);
    }
  }
  flush();
  for (std::size_t t : touchedlist) touched[t] = 0;
  return out;
}

// The trace of kept operations: each carries what the operations dropped
// before it counted, so a trace that stops at a failed check has counted
// what the body's run would have counted up to there. `now`: the counters
// after the run.
Trace traceOf(std::vector<Op> ops, const Recorder& run, const ReplayResult& now) {
  const auto less = [](std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; };
  std::uint64_t w = run.writes, r = run.reads, st = run.steps;  // counted so far
  for (Op& op : ops) {
    const std::uint64_t ow = op.writes, orr = op.reads, os = op.steps;
    op.writes = less(ow, w);
    op.reads = less(orr, r);
    op.steps = less(os, st);
    const bool own_write = op.kind == OpKind::Write || op.counted_write;
    const bool own_read = op.kind == OpKind::Read && !op.counted_write;
    w = saturatingCount(ow, own_write);
    r = saturatingCount(orr, own_read);
    st = os;
  }
  Trace out;
  out.ops = std::move(ops);
  out.writes = less(now.writes, w);
  out.reads = less(now.reads, r);
  out.steps = less(now.steps, st);
  return out;
}

// Model replay: the graphs run node by node (see the top of the file);
// bodies run by several nodes replay their traces.
class ModelReplay {
 public:
  ModelReplay(const Model& model, const Plan& plan, const ReplayOptions& options)
      : m_(model), p_(plan), options_(options) {}

  ReplayResult run() {
    if (!prepare()) return std::move(r_);
    active_.assign(m_.graphs.size(), 0);
    // Methods run one after the other on the same arenas (ExecuTorch's
    // share_memory_arenas); with several, the first runs once more, so
    // every method's state is read by a method after it.
    std::vector<GraphId> sequence;
    for (const MethodPlan& m : p_.methods) sequence.push_back(m.graph);
    if (sequence.empty()) sequence.push_back(0);
    if (sequence.size() > 1) sequence.push_back(sequence.front());
    for (GraphId entry : sequence) {
      if (failed()) break;
      runMethod(entry);
    }
    r_.shadow_work = shadowWork(shadows_);
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
    std::int64_t storage = -1;
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

  // Records an operation about to run into the body being traced.
  void record(Op op) {
    if (!recorder_) return;
    op.writes = r_.writes;
    op.reads = r_.reads;
    op.steps = r_.steps;
    recorder_->ops.push_back(op);
  }

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

  // Indexes the plan's storages and the model's tensors, sizes the arenas
  // and shapes their shadows. False (r_ says why) when the plan cannot be
  // replayed.
  bool prepare() {
    if (p_.graphs.size() != m_.graphs.size() || m_.graphs.empty()) {
      fail(ReplayIssue::BadPlan, fmt::format("replay: the plan has {} graphs, the model {}",
                                             p_.graphs.size(), m_.graphs.size()));
      return false;
    }
    if (!indexStorages()) return false;
    findRoots();
    std::vector<Bytes> sizes;
    if (!arenaSizes(sizes)) return false;
    std::vector<PoolShape> pools;
    if (!shapePools(sizes, pools)) return false;
    shadows_ = shadow::makeShadows(pools, options_, r_);
    gap_events_.resize(p_.graphs.size());  // filled as graphs run; never resized after
    traces_.resize(m_.graphs.size());
    touched_.assign(storages_.size(), 0);
    state_of_.resize(m_.graphs.size());
    for (TensorId t = 0; t < static_cast<TensorId>(m_.tensors.size()); ++t)
      if (m_.tensors[t].kind == TensorKind::MutableBuffer && m_.tensors[t].graph >= 0 &&
          static_cast<std::size_t>(m_.tensors[t].graph) < m_.graphs.size())
        state_of_[m_.tensors[t].graph].push_back(t);
    events_.emplace_back();  // WriteId 0: never written
    return true;
  }

  // One storage per spec of every graph, its allocation, and the bytes its
  // largest tensor needs.
  bool indexStorages() {
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
    return true;
  }

  // Each graph's method: the entry graph above it.
  void findRoots() {
    root_.assign(p_.graphs.size(), kNone);
    for (GraphId g = 0; g < static_cast<GraphId>(p_.graphs.size()); ++g) {
      GraphId r = g;
      for (std::size_t hops = 0; hops <= m_.graphs.size() && m_.graphs[r].parent >= 0 &&
                                 m_.graphs[r].parent < static_cast<GraphId>(m_.graphs.size());
           ++hops)
        r = m_.graphs[r].parent;
      root_[g] = r;
    }
  }

  // Every pool lives in the methods' arenas (one per mem_id, as large as
  // the largest method's); bodies use their prefix.
  bool arenaSizes(std::vector<Bytes>& sizes) {
    std::vector<GraphId> entries;
    for (const MethodPlan& m : p_.methods) entries.push_back(m.graph);
    if (entries.empty()) entries.push_back(0);
    for (GraphId e : entries) {
      if (e < 0 || static_cast<std::size_t>(e) >= p_.graphs.size()) {
        fail(ReplayIssue::BadPlan, fmt::format("replay: method graph {} does not exist", e));
        return false;
      }
      const std::vector<Bytes>& b = p_.graphs[e].bufsizes;
      if (sizes.size() < b.size()) sizes.resize(b.size(), 0);
      for (std::size_t m = 0; m < b.size(); ++m) sizes[m] = std::max(sizes[m], b[m]);
    }
    return true;
  }

  // The ranges each arena's shadow will see; false when an allocation is
  // too short for its tensor or lies outside its pool.
  bool shapePools(const std::vector<Bytes>& sizes, std::vector<PoolShape>& pools) {
    pools.resize(sizes.size());
    for (std::size_t m = 0; m < sizes.size(); ++m) pools[m].size = sizes[m];
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
      pools[mid].add(a.offset, a.size);
      if (gp.specs.specs[s.spec].gaps.empty()) continue;
      piece::piecesOf(gp.specs.specs[s.spec], a.size, pieces_);
      for (const piece::Piece& p : pieces_) pools[mid].add(a.offset + p.begin, p.end - p.begin);
    }
    return true;
  }

  bool planned(std::int64_t s) const { return s >= 0 && storages_[s].alloc && storages_[s].need; }

  // Pinned tensors the plan lets share bytes (allow_pinned_overlap) may
  // overwrite each other, as the verifier lets them; nothing else may.
  bool mayOverlapPinned(std::int64_t s) const {
    return p_.options.allow_pinned_overlap && s >= 0 && specOf(storages_[s]).offset.has_value();
  }

  const Spec& specOf(const Storage& st) const { return p_.graphs[st.graph].specs.specs[st.spec]; }

  // One call of a method: its own tensors start afresh; the state it shares
  // must hold what the last method that wrote it left there.
  void runMethod(GraphId entry) {
    for (Storage& st : storages_)
      if (root_[st.graph] == entry && !specOf(st).shared) st.version = kUnwritten;
    const TimeValue start = 0;
    for (std::size_t i = base_[entry]; i < base_[entry] + p_.graphs[entry].specs.specs.size(); ++i) {
      Storage& st = storages_[i];
      const Spec& spec = specOf(st);
      if (!spec.shared || !planned(static_cast<std::int64_t>(i))) continue;
      const auto last = state_version_.find(spec.fqn);
      if (last == state_version_.end()) continue;  // first method to use it: loaded
      st.version = last->second;
      read(spec.tensor, entry, kStart, start, false);
    }
    runGraph(entry);
    for (std::size_t i = base_[entry]; i < base_[entry] + p_.graphs[entry].specs.specs.size(); ++i) {
      const Storage& st = storages_[i];
      if (specOf(st).shared && st.version != kUnwritten) state_version_[specOf(st).fqn] = st.version;
    }
  }

  // Does producing `t` write bytes? A view of its own storage does not.
  bool writes(TensorId t) const {
    const std::int64_t s = tensor_storage_[t];
    if (s < 0) return false;
    const Tensor& x = m_.tensors[t];
    if (x.alias == AliasKind::View && x.alias_of >= 0 && tensor_storage_[x.alias_of] == s)
      return false;
    return true;
  }

  // Writes storage `s` (bytes [begin, end) of it: a piece of a tensor with
  // gaps; all of it by default) with a new pattern.
  void write(std::int64_t s, TensorId t, GraphId g, const std::string& node, TimeValue step,
             Bytes begin = 0, std::optional<Bytes> end = std::nullopt) {
    if (!planned(s)) return;
    record({OpKind::Write, s, t, g, &node, step, false, begin, end, true});
    doWrite(s, t, g, node, step, begin, end);
  }

  void doWrite(std::int64_t s, TensorId t, GraphId g, const std::string& node, TimeValue step,
               Bytes begin = 0, std::optional<Bytes> end = std::nullopt) {
    Storage& st = storages_[s];
    if (events_.size() >= std::numeric_limits<WriteId>::max()) {
      fail(ReplayIssue::BadPlan, "replay: more than 2^32 writes");
      return;
    }
    const auto id = static_cast<WriteId>(events_.size());
    events_.push_back(Event{s, t, g, node, step});
    const Bytes until = end.value_or(st.alloc->size);
    shadows_[st.alloc->mem_id].write(st.alloc->offset + begin, until - begin, id);
    st.version = id;
    bump(r_.writes);
  }

  // Checks that `t` holds its last write (in bytes [begin, end) of its
  // storage; all of it by default); reports the first clobber.
  void read(TensorId t, GraphId g, const std::string& node, TimeValue step, bool end,
            Bytes begin = 0, std::optional<Bytes> end_byte = std::nullopt) {
    if (failed() || t < 0 || static_cast<std::size_t>(t) >= m_.tensors.size()) return;
    const std::int64_t s = tensor_storage_[t];
    if (!planned(s)) return;
    const bool load = storages_[s].version == kUnwritten;
    record({OpKind::Read, s, t, g, &node, step, end, begin, end_byte, load});
    if (load) {  // loaded at first use (weights, stray reads)
      doWrite(s, t, g, kStart, step);
      return;
    }
    Storage& st = storages_[s];
    bump(r_.reads);
    const WriteId want = st.version;
    const Bytes until = end_byte.value_or(st.alloc->size);
    const bool pinned = mayOverlapPinned(s);
    const auto accept = [&](WriteId id) {
      return id == want || (pinned && id != kUnwritten && mayOverlapPinned(events_[id].storage));
    };
    const auto bad = shadows_[st.alloc->mem_id].check(st.alloc->offset + begin, until - begin, accept);
    if (!bad) return;
    Clobber c;
    c.graph = g;
    c.victim = m_.tensors[t].name;
    c.reader_node = node;
    c.read_step = step;
    c.mem_id = st.alloc->mem_id;
    c.offset = bad->offset;
    if (bad->found == kUnwritten) {
      // Bytes nothing wrote: the tensor was moved (state at another place
      // than where the last method left it).
      c.message = fmt::format("replay: tensor '{}' (graph {}) at mem_id {} offset {} holds bytes nothing "
                              "wrote, found at {} (step {})",
                              c.victim, g, c.mem_id, c.offset, stepName(node, end), step);
    } else {
      const Event& w = events_[bad->found];
      c.writer = w.tensor >= 0 ? m_.tensors[w.tensor].name : "";
      c.writer_node = w.node;
      c.write_step = w.step;
      c.message = fmt::format("replay: tensor '{}' (graph {}) was clobbered at mem_id {} offset {}: "
                              "overwritten by '{}' at {} (graph {}, step {}), found at {} (step {})",
                              c.victim, g, c.mem_id, c.offset, c.writer, stepName(w.node, false),
                              w.graph, w.step, stepName(node, end), step);
    }
    reportClobber(r_, std::move(c));
  }

  // A mutable buffer of a graph is loaded at its start unless already there.
  void loadIfUnwritten(TensorId t, GraphId g) {
    const std::int64_t s = tensor_storage_[t];
    if (s < 0 || !planned(s)) return;
    const bool load = storages_[s].version == kUnwritten;
    record({OpKind::LoadIfUnwritten, s, t, g, &kStart, 0, false, 0, std::nullopt, load});
    if (load) doWrite(s, t, g, kStart, 0);
  }

  // Runs an operation of a trace as it ran first (recorded again when a
  // body around it is being traced).
  void apply(const Op& op) {
    switch (op.kind) {
      case OpKind::Write: write(op.storage, op.tensor, op.graph, *op.node, op.step, op.begin, op.until); break;
      case OpKind::Read: read(op.tensor, op.graph, *op.node, op.step, op.end, op.begin, op.until); break;
      case OpKind::LoadIfUnwritten: loadIfUnwritten(op.tensor, op.graph); break;
    }
  }

  // Runs body `g` where a node runs it: the first time step by step (its
  // trace kept), then by its trace.
  void runBody(GraphId g) {
    if (failed() || g < 0 || static_cast<std::size_t>(g) >= m_.graphs.size()) return;
    const auto add = [&](std::uint64_t w, std::uint64_t r, std::uint64_t st) {
      r_.writes = saturatingCount(r_.writes, w);
      r_.reads = saturatingCount(r_.reads, r);
      r_.steps = saturatingCount(r_.steps, st);
    };
    if (const std::optional<Trace>& trace = traces_[g]) {
      for (const Op& op : trace->ops) {
        if (failed()) return;
        add(op.writes, op.reads, op.steps);
        apply(op);
      }
      if (!failed()) add(trace->writes, trace->reads, trace->steps);
      return;
    }
    Recorder run;
    run.writes = r_.writes;
    run.reads = r_.reads;
    run.steps = r_.steps;
    Recorder* outer = recorder_;
    recorder_ = &run;
    runGraph(g);
    recorder_ = outer;
    if (failed()) return;
    std::vector<Op> ops =
        keptOps(run, touched_, [&](std::int64_t st) { return storages_[st].alloc->size; });
    // The caller's run holds the body's kept operations, as if it had been
    // replayed by its trace.
    if (outer) outer->ops.insert(outer->ops.end(), ops.begin(), ops.end());
    traces_[g] = traceOf(std::move(ops), run, r_);
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
      write(tensor_storage_[graph.inputs[i]], graph.inputs[i], g, kStart, static_cast<TimeValue>(i));
    for (TensorId t : state_of_[g]) loadIfUnwritten(t, g);
    // Every input is in place before the first node runs (the placeholders
    // come first), used or not.
    const TimeValue first_node = nodeTime(graph, 0);
    const std::vector<GapEvent>& gap_events = gapEvents(g);
    std::size_t next_gap = 0;
    const auto gapsUntil = [&](TimeValue step, const std::string& node) {
      for (; next_gap < gap_events.size() && gap_events[next_gap].time <= step && !failed(); ++next_gap) {
        const GapEvent& e = gap_events[next_gap];
        if (e.write) write(tensor_storage_[e.tensor], e.tensor, g, node, e.time, e.begin, e.end);
        else read(e.tensor, g, node, e.time, false, e.begin, e.end);
      }
    };
    for (TensorId t : graph.inputs) read(t, g, kStart, first_node, false);
    for (TensorId t : state_of_[g]) read(t, g, kStart, first_node, false);

    for (NodeId n = 0; n < static_cast<NodeId>(graph.nodes.size()) && !failed(); ++n) {
      const Node& node = graph.nodes[n];
      const TimeValue step = nodeTime(graph, n);
      gapsUntil(step, node.name);
      if (failed()) break;
      bump(r_.steps);
      for (TensorId t : node.inputs) read(t, g, node.name, step, false);
      for (GraphId sub : node.subgraphs) runBody(sub);
      if (failed()) break;
      for (TensorId t : node.outputs)
        if (writes(t)) write(tensor_storage_[t], t, g, node.name, step);
      for (TensorId t : node.outputs) read(t, g, node.name, step, false);
      for (TensorId t : node.inputs)
        if (!overwrittenByNode(t, node)) read(t, g, node.name, step, false);
      for (GraphId sub : node.subgraphs)
        if (sub >= 0 && static_cast<std::size_t>(sub) < m_.graphs.size())
          for (const CapturedUses::Use& use : captured_.of(sub)) {
            if (overwrittenByNode(use.tensor, node)) continue;
            const auto done = std::pair(r_.reads, r_.writes);
            read(use.tensor, g, node.name, step, false);
            if (!failed() && std::pair(r_.reads, r_.writes) != done)
              r_.reads = saturatingCount(r_.reads, use.times - 1);
          }
    }
    const TimeValue end = nodeTime(graph, static_cast<NodeId>(graph.nodes.size()));
    gapsUntil(end, kStart);
    for (TensorId t : graph.outputs) read(t, g, kStart, end, true);
    for (TensorId t : state_of_[g]) read(t, g, kStart, end, true);
    active_[g] = 0;
  }

  // A tensor with gaps holds a piece (pieces.h) at a time: when a piece
  // ends its bytes are checked, when the next one starts they are written
  // anew (the content after a gap is new), checks first at a step.
  struct GapEvent {
    TimeValue time;
    bool write;
    TensorId tensor;
    Bytes begin, end;
    bool operator<(const GapEvent& o) const {
      return std::tie(time, write, tensor) < std::tie(o.time, o.write, o.tensor);
    }
  };
  // Computed once per graph (a body may run many times).
  const std::vector<GapEvent>& gapEvents(GraphId g) {
    if (gap_events_[g]) return *gap_events_[g];
    std::vector<GapEvent>& out = gap_events_[g].emplace();
    const GraphPlan& gp = p_.graphs[g];
    for (const Spec& spec : gp.specs.specs) {
      if (spec.gaps.empty()) continue;
      const std::int64_t s = static_cast<std::int64_t>(base_[g]) + spec.id;
      if (!planned(s) || spec.tensor < 0 || static_cast<std::size_t>(spec.tensor) >= m_.tensors.size() ||
          tensor_storage_[spec.tensor] != s)
        continue;
      piece::piecesOf(spec, storages_[s].alloc->size, pieces_);
      for (std::size_t i = 0; i < pieces_.size(); ++i) {
        const piece::Piece& p = pieces_[i];
        if (i > 0) out.push_back({p.first, true, spec.tensor, p.begin, p.end});
        if (i + 1 < pieces_.size()) out.push_back({p.last + 1, false, spec.tensor, p.begin, p.end});
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<std::optional<std::vector<GapEvent>>> gap_events_;  // by graph

  static inline const std::string kStart;  // node name of a graph's start and end
  Recorder* recorder_ = nullptr;                            // the body being traced
  std::vector<std::optional<Trace>> traces_;                // by body
  std::vector<std::vector<TensorId>> state_of_;             // by graph: its mutable buffers
  std::vector<char> touched_;                               // scratch of kept(), by storage

  const Model& m_;
  const Plan& p_;
  const ReplayOptions& options_;
  CapturedUses captured_{m_};
  std::vector<piece::Piece> pieces_;         // scratch
  ReplayResult r_;
  std::vector<std::size_t> base_;            // graph -> first storage index
  std::vector<Storage> storages_;            // one per spec of every graph
  std::vector<std::int64_t> tensor_storage_; // tensor -> storage (-1: none)
  std::vector<Shadow> shadows_;              // index = mem_id
  std::vector<Event> events_;                // index = WriteId
  std::vector<char> active_;                 // graphs on the call stack
  std::vector<GraphId> root_;                // graph -> its method's entry graph
  std::map<std::string, WriteId> state_version_;  // fqn -> last write of the state
};

}  // namespace

ReplayResult replayPlan(const Model& model, const Plan& plan, const ReplayOptions& options) {
  return ModelReplay(model, plan, options).run();
}

}  // namespace memplan

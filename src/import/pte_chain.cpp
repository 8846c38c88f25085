// ExecuTorch program importer, part 2: instruction chains -> lifetimes,
// storage groups and state -> the graph IR (one graph per method).
//
// Time: method inputs are written before the first instruction (START),
// instruction i runs at step i, outputs are read after the last (END).
//
//  1. Uses: each tensor's first and last instruction, and whether its first
//     instruction only writes it (its places there are all result places).
//  2. Storage groups, in order of first use. A planned tensor that holds
//     bytes and has the same (memory_id, offset) as the group last placed
//     there joins that group when
//       - the group is still in use and the instruction names it too (an
//         in-place result, a view made by a kernel), or the tensor is not
//         written there (an elided view used beside its base); or
//       - the group is no longer in use, the tensor is not written where it
//         first appears (it is read: ExecuTorch elides static views, whose
//         tensors carry their base's place), it has the group's size, and
//         no other tensor touched those bytes in between.
//     Otherwise it starts its own group: a tensor written where a group that
//     is still in use lies is an overlap the verifier reports; one written
//     after the group's last use merely reuses the bytes and may move.
//  3. Moves: after `move_to = move_from` the destination is the source's
//     tensor, so every use of either keeps both storages alive: groups
//     linked by moves share one lifetime.
//  4. State: a group is kept between calls (it lives the whole method)
//     when its tensors carry initial data or a fully qualified name
//     (ExecuTorch names mutable buffers), or when it is read before it is
//     written (not only written where it first appears), is updated in place
//     there or named by more than one instruction (a kernel's scratch space
//     is named once), is not an input, and has its bytes to itself in the
//     file's plan (ExecuTorch plans mutable buffers over the whole method).
//     A group at the same (memory_id, offset, size) as state in another
//     method is that state, shared: its offset is kept (pinned) in every
//     method.
//  5. Loops: a jump to an earlier instruction makes [destination, jump] a
//     loop; a lifetime that meets it covers all of it, unless the loop
//     writes the value first and nothing outside the loop uses it (then no
//     value crosses an iteration). Applied until nothing changes.
//  6. Branches: in a method whose chain branches (a JumpFalseCall on a value
//     computed at run time) and never jumps back, one path runs. ExecuTorch
//     lays a torch.cond out as
//         jump_false(pred) -> F; true branch; jump_false(constant false) -> J
//         F: false branch;  J: the join
//     and plans each branch on its own. There a group is alive at an
//     instruction when a path through it uses the group at or before it and
//     at or after it: its first to its last use, with gaps (Tensor::gaps)
//     where only another branch runs. Moves are followed along each path
//     (after `to = from`, a use of `to` uses the storage `from` held), in
//     place of step 3: the true branch's result is alive at the join but
//     not in the false branch. Groups that may reach one use from different
//     branches at the same (memory_id, offset, size) are one storage (one
//     value on two paths). A list moved, or a loop: steps 3 and 5 instead.
//  7. The graph: one node per instruction (op from the operator table,
//     "delegate:<id>", "move", "jump_false", "free"), inputs = what it reads
//     or whose role is unknown, outputs = what it writes; a lifetime that
//     steps 3, 5 and 6 extended is kept by naming the group's tensor as an
//     input of the node where it must still (or already) be alive.
#include <algorithm>
#include <iterator>
#include <map>
#include <numeric>
#include <tuple>

#include "import/pte_format.h"
#include "import/pte_raw.h"

namespace memplan::pte {
namespace {

constexpr std::int64_t kStart = -1;
constexpr std::uint64_t kWorkBudget = std::uint64_t{1} << 28;

struct Group {
  std::int32_t root = -1;
  std::vector<std::int32_t> members;
  std::int64_t first = 0, last = 0;  // uses of the members
  Bytes size = 0;                    // largest member
  bool first_write = true;
  bool first_update = false;         // read and written where it first appears
  std::size_t instructions = 0;      // naming a member
  bool input = false, output = false;
  bool state = false, shared = false;
};

// Groups by root tensor, in the order they were made.
class GroupTable {
 public:
  void init(std::size_t tensors) { slot_.assign(tensors, -1); }
  Group& emplace(std::int32_t root) {
    slot_[static_cast<std::size_t>(root)] = static_cast<std::int32_t>(items_.size());
    items_.emplace_back();
    items_.back().root = root;
    return items_.back();
  }
  Group& at(std::int32_t root) { return items_[static_cast<std::size_t>(slot_[static_cast<std::size_t>(root)])]; }
  const Group& at(std::int32_t root) const {
    return items_[static_cast<std::size_t>(slot_[static_cast<std::size_t>(root)])];
  }
  std::vector<Group>::iterator begin() { return items_.begin(); }
  std::vector<Group>::iterator end() { return items_.end(); }
  std::vector<Group>::const_iterator begin() const { return items_.begin(); }
  std::vector<Group>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<Group> items_;
  std::vector<std::int32_t> slot_;
};

struct Analysis {
  std::vector<std::int32_t> group_of;   // tensor -> group root (-1: unplanned or unused)
  std::vector<char> first_write;        // tensor -> its first instruction only writes it
  GroupTable groups;
  std::vector<std::int32_t> klass;      // tensor root -> class representative (union-find)
  std::vector<std::pair<std::int64_t, std::int64_t>> lifetime;  // group root -> final [a, b]
  std::size_t loops = 0;
  // Step 6 (branch-aware lifetimes), when it applies: by group root, the
  // instruction windows inside its lifetime where it holds no bytes, and
  // whether the group was merged into another.
  bool branches = false;
  std::vector<std::vector<Gap>> gaps;
  std::vector<char> absorbed;
};

// The representative of `x` in a union-find forest (`parent`: each entry
// its parent, roots their own), halving the path as it goes.
std::int32_t findRoot(std::vector<std::int32_t>& parent, std::int32_t x) {
  while (parent[static_cast<std::size_t>(x)] != x)
    x = parent[static_cast<std::size_t>(x)] =
        parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
  return x;
}

// Which group last touched each byte of a memory id.
class Painting {
 public:
  void paint(Offset begin, Offset end, std::int32_t group) {
    if (begin >= end) return;
    auto it = runs_.lower_bound(begin);
    if (it != runs_.begin()) {
      auto prev = std::prev(it);
      if (prev->second.end > begin) {
        const Run tail = prev->second;
        prev->second.end = begin;
        if (tail.end > end) runs_.emplace(end, tail);
      }
    }
    it = runs_.lower_bound(begin);
    while (it != runs_.end() && it->first < end) {
      if (it->second.end > end) {
        const Run tail = it->second;
        runs_.erase(it);
        runs_.emplace(end, tail);
        break;
      }
      it = runs_.erase(it);
    }
    runs_.emplace(begin, Run{end, group});
  }
  // Every byte of [begin, end) was last touched by `group`.
  bool onlyBy(Offset begin, Offset end, std::int32_t group, std::uint64_t& work) const {
    Offset pos = begin;
    auto it = runs_.upper_bound(begin);
    if (it == runs_.begin()) return false;
    --it;
    while (pos < end) {
      if (++work > kWorkBudget) return true;  // too costly to tell: keep them together
      if (it == runs_.end() || it->first > pos || it->second.end <= pos || it->second.group != group)
        return false;
      pos = it->second.end;
      ++it;
    }
    return true;
  }

 private:
  struct Run {
    Offset end;
    std::int32_t group;
  };
  std::map<Offset, Run> runs_;
};

class MethodAnalyser {
 public:
  explicit MethodAnalyser(const RawMethod& m) : m_(m) {}

  Analysis run() {
    const std::size_t nt = m_.tensors.size();
    first_.assign(nt, kUnused);
    last_.assign(nt, kUnused);
    first_write_.assign(nt, 0);
    first_update_.assign(nt, 0);
    count_.assign(nt, 0);
    input_.assign(nt, 0);
    output_.assign(nt, 0);
    a_.group_of.assign(nt, -1);
    a_.groups.init(nt);
    group_last_.assign(nt, kStart);
    uses();
    grouping();
    hulls();
    moves();
    state();
    a_.first_write = first_write_;
    return std::move(a_);
  }

 private:
  static constexpr std::int64_t kUnused = std::numeric_limits<std::int64_t>::min();

  bool planned(std::int32_t t) const {
    const RawTensor& x = m_.tensors[static_cast<std::size_t>(t)];
    return x.alloc.has_value() && first_[static_cast<std::size_t>(t)] != kUnused;
  }

  void uses() {
    end_ = static_cast<std::int64_t>(m_.kinds.size());
    for (std::int32_t t : m_.inputs) {
      const auto i = static_cast<std::size_t>(t);
      input_[i] = 1;
      first_[i] = kStart;
      first_write_[i] = 1;
      if (last_[i] == kUnused) last_[i] = kStart;
    }
    for (std::size_t i = 0; i < m_.kinds.size(); ++i)
      for (std::size_t r = m_.ref_begin[i]; r < m_.ref_begin[i + 1]; ++r) {
        const RawRef& ref = m_.refs[r];
        const auto t = static_cast<std::size_t>(ref.tensor);
        if (first_[t] == kUnused) {
          first_[t] = static_cast<std::int64_t>(i);
          first_write_[t] = ref.write && !ref.other;
          first_update_[t] = ref.write && ref.other;
        }
        last_[t] = static_cast<std::int64_t>(i);
        ++count_[t];
      }
    for (std::int32_t t : m_.outputs) {
      const auto i = static_cast<std::size_t>(t);
      output_[i] = 1;
      if (first_[i] == kUnused) {  // returned without being computed: as if an input
        first_[i] = kStart;
        first_write_[i] = 0;
      }
      last_[i] = end_;
    }
  }

  void decide(std::int32_t t, std::int64_t time) {
    const RawTensor& x = m_.tensors[static_cast<std::size_t>(t)];
    const auto start_group = [&] {
      a_.groups.emplace(t);
      a_.group_of[static_cast<std::size_t>(t)] = t;
      return t;
    };
    if (x.nbytes == 0) {  // holds no bytes: shares nothing
      start_group();
      return;
    }
    const auto key = std::make_pair(x.alloc->mem_id, x.alloc->offset);
    std::int32_t g = -1;
    if (auto it = latest_.find(key); it != latest_.end()) {
      const std::int32_t cand = it->second;
      const Group& G = a_.groups.at(cand);
      const bool writes = first_write_[static_cast<std::size_t>(t)] != 0;
      const bool alive = group_last_[static_cast<std::size_t>(cand)] >= time;
      if (alive) {
        const bool same_instruction = time != kStart && named_at_[static_cast<std::size_t>(cand)] == time;
        if (same_instruction || !writes) g = cand;
      } else if (!writes && x.nbytes == G.size &&
                 paint_[x.alloc->mem_id].onlyBy(x.alloc->offset, x.alloc->offset + x.nbytes, cand, work_)) {
        g = cand;
      }
    }
    if (g < 0) {
      g = start_group();
      latest_[key] = g;
    } else {
      a_.group_of[static_cast<std::size_t>(t)] = g;
    }
    Group& G = a_.groups.at(g);
    G.size = std::max(G.size, x.nbytes);
    group_last_[static_cast<std::size_t>(g)] =
        std::max(group_last_[static_cast<std::size_t>(g)], last_[static_cast<std::size_t>(t)]);
  }

  void paintTensor(std::int32_t t) {
    const RawTensor& x = m_.tensors[static_cast<std::size_t>(t)];
    if (!x.alloc || x.nbytes == 0) return;
    paint_[x.alloc->mem_id].paint(x.alloc->offset, x.alloc->offset + x.nbytes,
                                  a_.group_of[static_cast<std::size_t>(t)]);
  }

  void grouping() {
    named_at_.assign(m_.tensors.size(), kUnused);
    for (std::int32_t t : m_.inputs)
      if (planned(t) && a_.group_of[static_cast<std::size_t>(t)] < 0) decide(t, kStart);
    for (std::int32_t t : m_.inputs)
      if (planned(t)) paintTensor(t);
    for (std::size_t i = 0; i < m_.kinds.size(); ++i) {
      const auto time = static_cast<std::int64_t>(i);
      const auto name = [&](std::int32_t t) {
        const std::int32_t g = a_.group_of[static_cast<std::size_t>(t)];
        if (g >= 0) named_at_[static_cast<std::size_t>(g)] = time;
      };
      for (std::size_t r = m_.ref_begin[i]; r < m_.ref_begin[i + 1]; ++r)
        if (planned(m_.refs[r].tensor)) name(m_.refs[r].tensor);
      for (std::size_t r = m_.ref_begin[i]; r < m_.ref_begin[i + 1]; ++r) {
        const std::int32_t t = m_.refs[r].tensor;
        if (!planned(t) || a_.group_of[static_cast<std::size_t>(t)] >= 0) continue;
        decide(t, time);
        name(t);
      }
      for (std::size_t r = m_.ref_begin[i]; r < m_.ref_begin[i + 1]; ++r)
        if (planned(m_.refs[r].tensor)) paintTensor(m_.refs[r].tensor);
    }
    // Returned without being computed or passed in: a group of their own.
    for (std::int32_t t : m_.outputs)
      if (planned(t) && a_.group_of[static_cast<std::size_t>(t)] < 0) decide(t, kStart);
  }

  void hulls() {
    for (std::size_t t = 0; t < m_.tensors.size(); ++t) {
      const std::int32_t g = a_.group_of[t];
      if (g < 0) continue;
      Group& G = a_.groups.at(g);
      if (G.members.empty()) {
        G.first = first_[t];
        G.last = last_[t];
        G.first_write = first_write_[t] != 0;
        G.first_update = first_update_[t] != 0;
      }
      G.members.push_back(static_cast<std::int32_t>(t));
      if (first_[t] < G.first) {
        G.first = first_[t];
        G.first_write = first_write_[t] != 0;
        G.first_update = first_update_[t] != 0;
      } else if (first_[t] == G.first && t != static_cast<std::size_t>(g)) {
        G.first_write = G.first_write && first_write_[t] != 0;
        G.first_update = G.first_update || first_update_[t] != 0;
      }
      G.instructions += count_[t];
      G.last = std::max(G.last, last_[t]);
      G.input |= input_[t] != 0;
      G.output |= output_[t] != 0;
    }
  }

  void moves() {
    a_.klass.resize(m_.tensors.size());
    std::iota(a_.klass.begin(), a_.klass.end(), 0);
    for (const auto& [x, y] : m_.moves) {
      const std::int32_t gx = a_.group_of[static_cast<std::size_t>(x)];
      const std::int32_t gy = a_.group_of[static_cast<std::size_t>(y)];
      if (gx < 0 || gy < 0) continue;
      const std::int32_t cx = findRoot(a_.klass, gx), cy = findRoot(a_.klass, gy);
      if (cx != cy) a_.klass[static_cast<std::size_t>(std::max(cx, cy))] = std::min(cx, cy);
    }
  }

  // Groups whose bytes no other group's tensor touches (per memory id).
  // In offset order, an item overlaps an item of another group that starts
  // before it iff the furthest end among those is past its begin (and
  // symmetrically from the other side): the two best values of distinct
  // groups answer both.
  std::vector<char> exclusive() const {
    struct Item {
      MemId mem;
      Offset begin, end;
      std::int32_t group;
    };
    std::vector<Item> items;
    for (const Group& G : a_.groups)
      for (std::int32_t t : G.members) {
        const RawTensor& x = m_.tensors[static_cast<std::size_t>(t)];
        if (x.nbytes > 0)
          items.push_back({x.alloc->mem_id, x.alloc->offset, x.alloc->offset + x.nbytes, G.root});
      }
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return std::tie(a.mem, a.begin, a.end, a.group) < std::tie(b.mem, b.begin, b.end, b.group);
    });
    // The best value of each of two distinct groups (max or min).
    struct Top2 {
      bool want_max;
      std::pair<Offset, std::int32_t> a, b;
      explicit Top2(bool max) : want_max(max) { reset(); }
      void reset() {
        const Offset worst = want_max ? 0 : std::numeric_limits<Offset>::max();
        a = b = {worst, -1};
      }
      bool better(Offset x, Offset y) const { return want_max ? x > y : x < y; }
      void add(Offset v, std::int32_t g) {
        if (g == a.second) {
          if (better(v, a.first)) a.first = v;
        } else if (better(v, a.first)) {
          b = a;
          a = {v, g};
        } else if (g == b.second) {
          if (better(v, b.first)) b.first = v;
        } else if (better(v, b.first)) {
          b = {v, g};
        }
      }
      const std::pair<Offset, std::int32_t>& other(std::int32_t g) const { return a.second != g ? a : b; }
    };
    std::vector<char> shared(m_.tensors.size(), 0);
    for (std::size_t i = 0, j = 0; i < items.size(); i = j) {
      j = i;
      while (j < items.size() && items[j].mem == items[i].mem) ++j;
      Top2 ends(true), begins(false);
      for (std::size_t k = i; k < j; ++k) {  // earlier-starting items
        const auto& o = ends.other(items[k].group);
        if (o.second >= 0 && o.first > items[k].begin) shared[static_cast<std::size_t>(items[k].group)] = 1;
        ends.add(items[k].end, items[k].group);
      }
      for (std::size_t k = j; k-- > i;) {  // later-starting items
        const auto& o = begins.other(items[k].group);
        if (o.second >= 0 && o.first < items[k].end) shared[static_cast<std::size_t>(items[k].group)] = 1;
        begins.add(items[k].begin, items[k].group);
      }
    }
    std::vector<char> out(m_.tensors.size(), 0);
    for (const Group& G : a_.groups) out[static_cast<std::size_t>(G.root)] = !shared[static_cast<std::size_t>(G.root)];
    return out;
  }

  void state() {
    const std::vector<char> alone = exclusive();
    for (Group& G : a_.groups) {
      if (G.size == 0) continue;
      bool s = false;
      for (std::int32_t t : G.members) {
        const RawTensor& x = m_.tensors[static_cast<std::size_t>(t)];
        s |= x.data_buffer_idx > 0 || !x.fqn.empty();
      }
      // Read before it is written, and more than a kernel's scratch space
      // (named by one instruction that does not also update it).
      s |= !G.first_write && !G.input && (G.first_update || G.instructions >= 2) &&
           alone[static_cast<std::size_t>(G.root)];
      G.state = s;
    }
  }

  const RawMethod& m_;
  std::int64_t end_ = 0;
  std::vector<std::int64_t> first_, last_;
  std::vector<char> first_write_, first_update_, input_, output_;
  std::vector<std::size_t> count_;
  Analysis a_;
  std::map<std::pair<MemId, Offset>, std::int32_t> latest_;
  std::vector<std::int64_t> group_last_;  // by group root
  std::vector<std::int64_t> named_at_;    // by group root: last instruction naming it
  std::map<MemId, Painting> paint_;
  std::uint64_t work_ = 0;
};

// State in one method at the same (memory id, offset, size) as a group of
// another method: both are that state, shared.
void shareState(const RawProgram& raw, std::vector<Analysis>& an) {
  using Key = std::tuple<MemId, Offset, Bytes>;
  std::map<Key, std::vector<std::pair<std::size_t, std::int32_t>>> by_key;
  for (std::size_t m = 0; m < an.size(); ++m)
    for (const Group& G : an[m].groups) {
      if (G.size == 0) continue;
      const RawTensor& x = raw.methods[m].tensors[static_cast<std::size_t>(G.root)];
      by_key[{x.alloc->mem_id, x.alloc->offset, G.size}].emplace_back(m, G.root);
    }
  // Moves tie groups of one method into one class: state spreads along it.
  const auto classState = [&](std::size_t m) {
    Analysis& a = an[m];
    const auto rep = [&](std::int32_t c) { return static_cast<std::size_t>(findRoot(a.klass, c)); };
    std::vector<char> cls(a.klass.size(), 0);
    for (const Group& G : a.groups) cls[rep(G.root)] |= G.state;
    bool changed = false;
    for (Group& G : a.groups)
      if (cls[rep(G.root)] && !G.state && G.size > 0) G.state = changed = true;
    return changed;
  };
  for (std::size_t m = 0; m < an.size(); ++m) classState(m);
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& [key, entries] : by_key) {
      bool any_state = false;
      std::size_t methods = 0;
      std::size_t last_method = std::numeric_limits<std::size_t>::max();
      for (const auto& [m, root] : entries) {
        any_state |= an[m].groups.at(root).state;
        if (m != last_method) ++methods;
        last_method = m;
      }
      if (!any_state || methods < 2) continue;
      for (const auto& [m, root] : entries) {
        Group& G = an[m].groups.at(root);
        if (!G.state || !G.shared) {
          G.state = G.shared = true;
          changed = true;
        }
      }
    }
    if (changed)
      for (std::size_t m = 0; m < an.size(); ++m) classState(m);
  }
}

// Class lifetimes, state over the whole method, loops.
void lifetimes(const RawMethod& m, Analysis& a, const std::string& source, std::int64_t index) {
  const auto end = static_cast<std::int64_t>(m.kinds.size());
  const auto cls = [&](std::int32_t g) { return findRoot(a.klass, g); };
  struct Class {
    std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = kStart - 1;
    bool first_write = true, state = false;
  };
  std::vector<Class> classes(a.klass.size());
  std::vector<std::int32_t> reps;
  for (const Group& G : a.groups) {
    const std::int32_t r = cls(G.root);
    if (classes[static_cast<std::size_t>(r)].last < kStart) reps.push_back(r);
    Class& c = classes[static_cast<std::size_t>(r)];
    if (G.first < c.first) {
      c.first = G.first;
      c.first_write = G.first_write;
    } else if (G.first == c.first) {
      c.first_write = c.first_write && G.first_write;
    }
    c.last = std::max(c.last, G.last);
    c.state |= G.state;
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> loops;
  for (const auto& [from, to] : m.jumps)
    if (to <= from) loops.emplace_back(to, from);
  std::sort(loops.begin(), loops.end());
  loops.erase(std::unique(loops.begin(), loops.end()), loops.end());
  a.loops = loops.size();
  // Where some loop runs (merged), to skip lifetimes that meet none.
  std::vector<std::pair<std::int64_t, std::int64_t>> looped;
  for (const auto& [d, j] : loops) {
    if (!looped.empty() && d <= looped.back().second) looped.back().second = std::max(looped.back().second, j);
    else looped.emplace_back(d, j);
  }
  const auto meetsLoops = [&](std::int64_t first, std::int64_t last) {
    auto it = std::upper_bound(looped.begin(), looped.end(), std::make_pair(last, std::numeric_limits<std::int64_t>::max()));
    return it != looped.begin() && std::prev(it)->second >= first;
  };
  std::uint64_t work = 0;
  for (std::int32_t r : reps) {
    Class& c = classes[static_cast<std::size_t>(r)];
    if (c.state) {
      c.first = kStart;
      c.last = end;
      continue;
    }
    for (bool changed = meetsLoops(c.first, c.last); changed;) {
      changed = false;
      for (const auto& [d, j] : loops) {
        if (d > c.last) break;  // sorted by start: none further meets it
        if (++work > kWorkBudget)
          throw InputError(fmt::format("{}: method {}: {} loops are too many to analyse", source,
                                       index, loops.size()));
        if (c.last < d || c.first > j) continue;               // does not meet the loop
        if (c.first >= d && c.last <= j && c.first_write) continue;  // local to one pass
        if (c.first <= d && c.last >= j) continue;             // covers it already
        c.first = std::min(c.first, d);
        c.last = std::max(c.last, j);
        changed = true;
      }
    }
  }
  a.lifetime.assign(a.klass.size(), {0, 0});
  for (const Group& G : a.groups) {
    const Class& c = classes[static_cast<std::size_t>(cls(G.root))];
    a.lifetime[static_cast<std::size_t>(G.root)] = {c.first, c.last};
  }
}

// Step 6. Positions: START 0, instruction i at i + 1, END n + 1. Returns
// false (nothing changed) when the method does not branch, jumps back,
// moves a list, or is too large to analyse within the work budget.
class BranchAnalyser {
 public:
  BranchAnalyser(const RawMethod& m, Analysis& a) : m_(m), a_(a) {}

  bool run() {
    const auto n = static_cast<std::int64_t>(m_.kinds.size());
    bool conditional = false;
    for (std::size_t j = 0; j < m_.jumps.size(); ++j) {
      if (m_.jumps[j].second <= m_.jumps[j].first) return false;  // a loop: step 5
      conditional |= m_.jump_kinds[j] == JumpKind::Conditional;
    }
    if (!conditional) return false;
    for (const RawMove& mv : m_.tensor_moves)
      if (mv.from < 0) return false;
    positions_ = static_cast<std::size_t>(n) + 2;
    falls_.assign(positions_, 1);
    falls_.back() = 0;
    jump_to_.assign(positions_, -1);
    for (std::size_t j = 0; j < m_.jumps.size(); ++j) {
      const auto p = static_cast<std::size_t>(m_.jumps[j].first) + 1;
      const std::int64_t to = m_.jumps[j].second + 1;
      if (m_.jump_kinds[j] == JumpKind::Never) continue;
      if (m_.jump_kinds[j] == JumpKind::Always) falls_[p] = 0;
      jump_to_[p] = to;
      incoming_.emplace_back(to, static_cast<std::int64_t>(p));
    }
    std::sort(incoming_.begin(), incoming_.end());
    if (!followMoves()) return false;
    mergeAlternatives();
    if (!alive()) return false;
    apply();
    return true;
  }

 private:
  using Set = std::vector<std::int32_t>;  // group roots, sorted
  static constexpr std::size_t kMaxExtra = std::size_t{1} << 22;  // uses through moves

  bool charge(std::uint64_t w) { return (work_ += w) <= kWorkBudget; }

  void use(std::int32_t t, std::int64_t p) {
    const std::int32_t g = a_.group_of[static_cast<std::size_t>(t)];
    if (g >= 0) uses_.emplace_back(g, p);
    const std::int32_t k = slot_[static_cast<std::size_t>(t)];
    if (k < 0) return;
    const Set& held = cur_[static_cast<std::size_t>(k)];
    for (std::int32_t h : held)
      if (h != g) uses_.emplace_back(h, p);
    // What moves add is bounded (memory, not only time): past it, step 3.
    extra_ += held.size() >= 2 ? 2 * held.size() : held.size();
    if (held.size() >= 2 && extra_ <= kMaxExtra) alternatives_.push_back(held);
  }

  void unite(Set& into, const Set& from) {
    work_ += into.size() + from.size();
    Set out;
    std::set_union(into.begin(), into.end(), from.begin(), from.end(), std::back_inserter(out));
    into = std::move(out);
  }

  // Which groups each moved-to tensor may hold, along every path; records
  // every use of every group (uses_) and the sets that reach one use
  // (alternatives_).
  bool followMoves() {
    const std::size_t nt = m_.tensors.size();
    slot_.assign(nt, -1);
    std::vector<std::int32_t> dests;
    for (const RawMove& mv : m_.tensor_moves)
      if (slot_[static_cast<std::size_t>(mv.to)] < 0) {
        slot_[static_cast<std::size_t>(mv.to)] = static_cast<std::int32_t>(dests.size());
        dests.push_back(mv.to);
      }
    const auto own = [&](std::int32_t t) {
      const std::int32_t g = a_.group_of[static_cast<std::size_t>(t)];
      return g >= 0 ? Set{g} : Set{};
    };
    cur_.resize(dests.size());
    for (std::size_t k = 0; k < dests.size(); ++k) cur_[k] = own(dests[k]);
    std::map<std::int64_t, std::vector<Set>> pending;  // by jump destination
    for (std::int32_t t : m_.inputs) use(t, 0);
    std::size_t move = 0;
    for (std::size_t p = 1; p < positions_; ++p) {
      auto it = pending.find(static_cast<std::int64_t>(p));
      if (!falls_[p - 1]) {
        if (it != pending.end()) cur_ = std::move(it->second);
        else for (Set& s : cur_) s.clear();  // reached by no path
      } else if (it != pending.end()) {
        for (std::size_t k = 0; k < cur_.size(); ++k) unite(cur_[k], it->second[k]);
      }
      if (it != pending.end()) pending.erase(it);
      if (!charge(cur_.size() + 1) || extra_ > kMaxExtra) return false;
      const auto pos = static_cast<std::int64_t>(p);
      if (p + 1 == positions_) {
        for (std::int32_t t : m_.outputs) use(t, pos);
        if (extra_ > kMaxExtra) return false;
        break;
      }
      const std::size_t i = p - 1;
      for (std::size_t r = m_.ref_begin[i]; r < m_.ref_begin[i + 1]; ++r) use(m_.refs[r].tensor, pos);
      if (m_.kinds[i] == InstrKind::Move) {
        const RawMove& mv = m_.tensor_moves[move++];
        const std::int32_t k = slot_[static_cast<std::size_t>(mv.from)];
        Set from = k >= 0 ? cur_[static_cast<std::size_t>(k)] : own(mv.from);
        cur_[static_cast<std::size_t>(slot_[static_cast<std::size_t>(mv.to)])] = std::move(from);
      }
      if (jump_to_[p] >= 0) {
        auto [at, fresh] = pending.try_emplace(jump_to_[p]);
        if (fresh) at->second = cur_;
        else for (std::size_t k = 0; k < cur_.size(); ++k) unite(at->second[k], cur_[k]);
      }
    }
    return true;
  }

  std::int32_t find(std::int32_t g) { return findRoot(parent_, g); }

  // Groups that may reach one use from different paths at the same place
  // become one storage (the earliest group's).
  void mergeAlternatives() {
    parent_.resize(m_.tensors.size());
    std::iota(parent_.begin(), parent_.end(), 0);
    const auto key = [&](std::int32_t g) {
      const Group& G = a_.groups.at(g);
      const PteAllocation& at = *m_.tensors[static_cast<std::size_t>(g)].alloc;
      return std::make_tuple(at.mem_id, at.offset, G.size);
    };
    for (const Set& s : alternatives_)
      for (std::size_t i = 0; i < s.size(); ++i) {
        const Group& G = a_.groups.at(s[i]);
        if (G.state || G.size == 0) continue;
        for (std::size_t j = i + 1; j < s.size(); ++j) {
          const Group& H = a_.groups.at(s[j]);
          if (H.state || H.size == 0 || key(s[i]) != key(s[j])) continue;
          const std::int32_t x = find(s[i]), y = find(s[j]);
          if (x == y) continue;
          const bool x_first = std::make_pair(a_.groups.at(x).first, x) < std::make_pair(a_.groups.at(y).first, y);
          parent_[static_cast<std::size_t>(x_first ? y : x)] = x_first ? x : y;
        }
      }
  }

  // Alive positions of each group (runs), merged groups together.
  bool alive() {
    std::sort(uses_.begin(), uses_.end());
    uses_.erase(std::unique(uses_.begin(), uses_.end()), uses_.end());
    std::vector<char> used, reach, live;
    for (std::size_t u = 0, v = 0; u < uses_.size(); u = v) {
      const std::int32_t g = uses_[u].first;
      v = u;
      while (v < uses_.size() && uses_[v].first == g) ++v;
      if (a_.groups.at(g).state) continue;  // the whole method
      const std::int64_t lo = uses_[u].second, hi = uses_[v - 1].second;
      const auto w = static_cast<std::size_t>(hi - lo + 1);
      if (!charge(3 * w)) return false;
      used.assign(w, 0);
      for (std::size_t k = u; k < v; ++k) used[static_cast<std::size_t>(uses_[k].second - lo)] = 1;
      reach.assign(w, 0);
      auto in = std::lower_bound(incoming_.begin(), incoming_.end(), std::make_pair(lo, std::int64_t{0}));
      for (std::int64_t p = lo; p <= hi; ++p) {
        const auto i = static_cast<std::size_t>(p - lo);
        bool r = used[i] || (p > lo && falls_[static_cast<std::size_t>(p - 1)] && reach[i - 1]);
        for (; in != incoming_.end() && in->first == p; ++in) {
          if (!charge(1)) return false;
          r = r || (in->second >= lo && reach[static_cast<std::size_t>(in->second - lo)]);
        }
        reach[i] = r;
      }
      live.assign(w, 0);
      for (std::int64_t p = hi; p >= lo; --p) {
        const auto i = static_cast<std::size_t>(p - lo);
        const std::int64_t to = jump_to_[static_cast<std::size_t>(p)];
        live[i] = used[i] || (p < hi && falls_[static_cast<std::size_t>(p)] && live[i + 1]) ||
                  (to >= 0 && to <= hi && live[static_cast<std::size_t>(to - lo)]);
      }
      std::vector<std::pair<std::int64_t, std::int64_t>>& runs = runs_[find(g)];
      for (std::int64_t p = lo; p <= hi; ++p) {
        const auto i = static_cast<std::size_t>(p - lo);
        if (!(reach[i] && live[i])) continue;
        if (!runs.empty() && runs.back().second + 1 == p && runs.back().first <= p) runs.back().second = p;
        else runs.emplace_back(p, p);
      }
    }
    return true;
  }

  // Lifetimes (chain time) and gaps (instruction windows) from the runs;
  // merged groups' tensors join the surviving group.
  void apply() {
    a_.branches = true;
    a_.gaps.assign(m_.tensors.size(), {});
    a_.absorbed.assign(m_.tensors.size(), 0);
    for (Group& G : a_.groups) {
      const std::int32_t r = find(G.root);
      if (r == G.root) continue;
      a_.absorbed[static_cast<std::size_t>(G.root)] = 1;
      Group& R = a_.groups.at(r);
      for (std::int32_t t : G.members) {
        a_.group_of[static_cast<std::size_t>(t)] = r;
        R.members.push_back(t);
      }
      R.first = std::min(R.first, G.first);
      R.last = std::max(R.last, G.last);
      R.size = std::max(R.size, G.size);
    }
    for (auto& [g, runs] : runs_) {
      std::sort(runs.begin(), runs.end());
      std::vector<std::pair<std::int64_t, std::int64_t>> merged;
      for (const auto& run : runs) {
        if (!merged.empty() && run.first <= merged.back().second + 1)
          merged.back().second = std::max(merged.back().second, run.second);
        else merged.push_back(run);
      }
      a_.lifetime[static_cast<std::size_t>(g)] = {merged.front().first - 1, merged.back().second - 1};
      std::vector<Gap>& gaps = a_.gaps[static_cast<std::size_t>(g)];
      for (std::size_t k = 1; k < merged.size(); ++k)
        gaps.push_back(Gap{merged[k - 1].second, merged[k].first - 1, std::nullopt});  // instructions
    }
  }

  const RawMethod& m_;
  Analysis& a_;
  std::size_t positions_ = 0;
  std::vector<char> falls_;                    // position -> falls through to the next
  std::vector<std::int64_t> jump_to_;          // position -> jump destination, -1: none
  std::vector<std::pair<std::int64_t, std::int64_t>> incoming_;  // (destination, source)
  std::vector<std::int32_t> slot_;             // tensor -> index of cur_ (moved to), -1
  std::vector<Set> cur_;
  std::vector<std::pair<std::int32_t, std::int64_t>> uses_;  // (group root, position)
  std::vector<Set> alternatives_;
  std::vector<std::int32_t> parent_;           // group root -> merged into (union-find)
  std::map<std::int32_t, std::vector<std::pair<std::int64_t, std::int64_t>>> runs_;  // by survivor
  std::uint64_t work_ = 0;
  std::size_t extra_ = 0;
};

std::optional<DType> dtypeOf(std::int8_t code) {
  static constexpr DType kTypes[] = {
      DType::UInt8,      DType::Int8,       DType::Int16,      DType::Int32,     DType::Int64,
      DType::Float16,    DType::Float32,    DType::Float64,    DType::Unknown,   DType::Complex64,
      DType::Complex128, DType::Bool,       DType::Int8,       DType::UInt8,     DType::Int32,
      DType::BFloat16,   DType::UInt8,      DType::UInt8,      DType::UInt8,     DType::UInt8,
      DType::UInt8,      DType::UInt8,      DType::UInt16,     DType::Float8E5M2, DType::Float8E4M3,
      DType::Float8E5M2, DType::Float8E4M3, DType::UInt16,     DType::UInt32,    DType::UInt64};
  if (code < 0 || static_cast<std::size_t>(code) >= std::size(kTypes)) return std::nullopt;
  return kTypes[static_cast<std::size_t>(code)];
}

std::string opName(const RawMethod& m, std::size_t i) {
  switch (m.kinds[i]) {
    case InstrKind::Kernel: return m.op_names[static_cast<std::size_t>(m.target[i])];
    case InstrKind::Delegate: return "delegate:" + m.delegate_ids[static_cast<std::size_t>(m.target[i])];
    case InstrKind::Move: return "move";
    case InstrKind::Jump: return "jump_false";
    case InstrKind::Free: return "free";
  }
  return "?";
}

}  // namespace

// Long (~140 lines) on purpose: for each method in turn, the graph built
// from the analyses in the order of the steps at the top of the file (its
// tensors, the nodes of its instructions, its inputs and outputs, then the
// extensions of step 6), all over the same per-method maps.
void buildProgram(RawProgram& raw, PteProgram& out) {
  const std::size_t nm = raw.methods.size();
  std::vector<Analysis> an(nm);
  for (std::size_t m = 0; m < nm; ++m)
    an[m] = MethodAnalyser(raw.methods[m]).run();
  shareState(raw, an);
  for (std::size_t m = 0; m < nm; ++m)
    lifetimes(raw.methods[m], an[m], out.source, static_cast<std::int64_t>(m));
  for (std::size_t m = 0; m < nm; ++m) BranchAnalyser(raw.methods[m], an[m]).run();

  Model& model = out.model;
  model.name = out.source;
  std::size_t total = 0;
  for (const RawMethod& m : raw.methods) total += m.tensors.size();
  model.tensors.reserve(total);
  out.tensors.reserve(total);
  out.methods.resize(nm);
  for (std::size_t mi = 0; mi < nm; ++mi) {
    RawMethod& m = raw.methods[mi];
    Analysis& a = an[mi];
    const auto base = static_cast<TensorId>(model.tensors.size());
    const auto end = static_cast<std::int64_t>(m.kinds.size());
    const auto gid = static_cast<GraphId>(mi);
    PteMethod& pm = out.methods[mi];
    pm.name = m.name;
    pm.buffer_sizes = m.buffer_sizes;
    pm.has_buffer_sizes = m.has_buffer_sizes;
    pm.buffer_sizes_slot = m.buffer_sizes_slot;
    pm.buffer_sizes_data = m.buffer_sizes_data;
    pm.instructions = m.kinds.size();
    pm.loops = a.loops;
    pm.delegates = m.delegate_ids;
    for (InstrKind k : m.kinds) {
      pm.kernel_calls += k == InstrKind::Kernel;
      pm.delegate_calls += k == InstrKind::Delegate;
      pm.moves += k == InstrKind::Move;
      pm.jumps += k == InstrKind::Jump;
      pm.frees += k == InstrKind::Free;
    }
    pm.value_tensor.assign(m.value_tensor.size(), kNone);
    for (std::size_t v = 0; v < m.value_tensor.size(); ++v)
      if (m.value_tensor[v] >= 0) pm.value_tensor[v] = base + m.value_tensor[v];

    std::vector<char> used(m.tensors.size(), 0);
    for (std::int32_t t : m.inputs) used[static_cast<std::size_t>(t)] = 1;
    for (std::int32_t t : m.outputs) used[static_cast<std::size_t>(t)] = 1;
    for (const RawRef& r : m.refs) used[static_cast<std::size_t>(r.tensor)] = 1;

    for (std::size_t t = 0; t < m.tensors.size(); ++t) {
      RawTensor& x = m.tensors[t];
      Tensor y;
      y.name = !x.fqn.empty() ? x.fqn : fmt::format("v{}", x.value);
      y.shape = std::move(x.sizes);
      y.dtype = dtypeOf(x.scalar_type).value_or(DType::Unknown);
      y.nbytes = x.nbytes;
      y.graph = gid;
      PteTensor p;
      p.method = gid;
      p.value = x.value;
      p.allocation = x.alloc;
      p.used = used[t] != 0;
      p.alloc_slot = x.alloc_slot;
      p.alloc_table = x.alloc_table;
      p.offset_low_at = x.low_at;
      p.offset_high_at = x.high_at;
      const std::int32_t g = a.group_of[t];
      if (!x.alloc) {
        if (x.data_buffer_idx > 0) y.kind = TensorKind::Constant;
        else y.dynamic_unbound = true;  // its pointer comes at run time
      } else if (g >= 0) {
        const Group& G = a.groups.at(g);
        y.mem_id = x.alloc->mem_id;
        if (G.state) y.kind = TensorKind::MutableBuffer;
        if (G.shared) y.offset = x.alloc->offset;
        p.state = G.state;
        p.shared = G.shared;
        if (a.branches && g == static_cast<std::int32_t>(t)) y.gaps = a.gaps[t];
        if (g != static_cast<std::int32_t>(t)) {
          // Written where it first appears: an in-place result re-stamping
          // the bytes; otherwise a view of them.
          y.alias = a.first_write[t] ? AliasKind::InPlace : AliasKind::View;
          y.alias_of = base + g;
        }
      } else {
        y.mem_id = x.alloc->mem_id;  // planned but named nowhere
      }
      model.tensors.push_back(std::move(y));
      out.tensors.push_back(p);
    }

    Graph graph;
    graph.name = m.name.empty() ? fmt::format("method{}", mi) : m.name;
    // Each list names a tensor once (stamps: linear, whatever the lists hold).
    std::vector<std::int64_t> seen(m.tensors.size(), -1);
    std::int64_t stamp = 0;
    const auto addUnique = [&](std::vector<TensorId>& v, TensorId t) {
      std::int64_t& s = seen[static_cast<std::size_t>(t - base)];
      if (s == stamp) return;
      s = stamp;
      v.push_back(t);
    };
    for (std::int32_t t : m.inputs) addUnique(graph.inputs, base + t);
    ++stamp;
    for (std::int32_t t : m.outputs) addUnique(graph.outputs, base + t);
    // Extensions: the group's tensor is named where its lifetime must reach.
    std::vector<std::vector<TensorId>> keep(static_cast<std::size_t>(end));
    for (const Group& G : a.groups) {
      if (G.state) continue;  // MutableBuffer: the whole method
      if (a.branches && a.absorbed[static_cast<std::size_t>(G.root)]) continue;
      const std::int32_t root = G.root;
      const auto [first, last] = a.lifetime[static_cast<std::size_t>(root)];
      if (end == 0) continue;
      if (first < G.first) keep[static_cast<std::size_t>(std::max<std::int64_t>(first, 0))].push_back(base + root);
      // Step 6: a branch's result returned through a move is alive at the
      // end but maybe not in the last instructions (another branch): it is
      // named among the outputs.
      if (last > G.last && a.branches && last == end) graph.outputs.push_back(base + root);
      else if (last > G.last) keep[static_cast<std::size_t>(std::min(last, end - 1))].push_back(base + root);
    }
    graph.nodes.reserve(static_cast<std::size_t>(end));
    for (std::size_t i = 0; i < static_cast<std::size_t>(end); ++i) {
      Node node;
      node.name = fmt::format("#{}", i);
      node.op = opName(m, i);
      ++stamp;
      for (std::size_t r = m.ref_begin[i]; r < m.ref_begin[i + 1]; ++r) {
        const RawRef& ref = m.refs[r];
        if (ref.other) addUnique(node.inputs, base + ref.tensor);
        if (ref.write) node.outputs.push_back(base + ref.tensor);
      }
      for (TensorId t : keep[i]) addUnique(node.inputs, t);
      graph.nodes.push_back(std::move(node));
    }
    model.graphs.push_back(std::move(graph));
  }
}

}  // namespace memplan::pte

// The placement engine: see placer.h.
#include "algorithms/placer.h"
#include "algorithms/placement_error.h"

#include <algorithm>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "algorithms/pool_util.h"

namespace memplan::heur {

std::string_view fitName(Fit f) { return f == Fit::Best ? "best" : "first"; }

namespace {

// std::partition_point(v.begin(), v.end(), before), searched outward from
// index `near`: doubling steps, then halving between the last two. A
// buffer goes into the lists of many neighbouring nodes at about the same
// place in each, and there this reads a few entries side by side where a
// search from the ends misses the cache at each halving.
template <class V, class Before>
std::size_t partitionNear(const V& v, std::size_t near, Before before) {
  const std::size_t n = v.size();
  std::size_t lo = 0, hi = n;  // the answer is in [lo, hi]
  if (near > n) near = n;
  if (near < n && before(v[near])) {
    lo = near + 1;
    for (std::size_t step = 1; near + step < n; step *= 2) {
      if (!before(v[near + step])) {
        hi = near + step;
        break;
      }
      lo = near + step + 1;
    }
  } else {
    hi = near;
    for (std::size_t step = 1; step <= near; step *= 2) {
      if (before(v[near - step])) {
        lo = near - step + 1;
        break;
      }
      hi = near - step;
    }
  }
  const auto first = v.begin();
  return static_cast<std::size_t>(std::partition_point(first + static_cast<std::ptrdiff_t>(lo),
                                                       first + static_cast<std::ptrdiff_t>(hi), before) -
                                  first);
}

}  // namespace

// ---------------------------------------------------------------------------
// The run tree (pools without gaps).

class Placer::Tree {
 public:
  Tree(Placer& p, std::size_t leaf_ranks) : p_(p), leaf_ranks_(std::max<std::size_t>(1, leaf_ranks)) {
    leaves_ = p_.ranks_ / leaf_ranks_ + 1;
    first_leaf_node_ = 1;
    while (first_leaf_node_ < leaves_) first_leaf_node_ *= 2;
    covering_runs_.resize(first_leaf_node_);
    partial_entries_.resize(first_leaf_node_);
    unions_.resize(2 * first_leaf_node_);
    stale_union_.assign(2 * first_leaf_node_, 0);
  }

  void clear() {
    for (std::size_t v = 1; v < 2 * first_leaf_node_; ++v) {
      if (unions_[v].empty() && !stale_union_[v]) continue;  // nothing stored at or below v
      unions_[v].clear();
      stale_union_[v] = 0;
      if (v >= first_leaf_node_) {
        covering_runs_[v - first_leaf_node_].clear();
        partial_entries_[v - first_leaf_node_].clear();
      }
    }
  }

  void insert(BufferId b, Offset lo, Offset hi) {
    const Cover cv = coverOf(b);
    std::size_t near = 0;  // where it went in the last list: near there in the next
    for (std::size_t leaf = cv.fs; leaf < cv.fe; ++leaf) near = addRun(covering_runs_[leaf], lo, hi, near);
    for (int k = 0; k < cv.nparts; ++k) {
      auto& list = partial_entries_[cv.parts[k]];
      const Part e{lo, hi, p_.start_rank_[b], p_.end_rank_[b], b};
      list.insert(std::upper_bound(list.begin(), list.end(), lo,
                                   [](Offset x, const Part& y) { return x < y.lo; }),
                  e);
      p_.work_ += 1;
    }
    // Every node over the touched leaves holds it in its union; stop at the
    // first level where all of them already did (their ancestors do too).
    near = 0;
    for (std::size_t l = cv.ls + first_leaf_node_, r = cv.le + first_leaf_node_; l >= 1; l >>= 1, r >>= 1) {
      bool changed = false;
      for (std::size_t v = l; v <= r; ++v)
        if (!stale_union_[v]) changed = unionInsert(unions_[v], lo, hi, near) || changed;
      if (!changed) break;
    }
  }

  void erase(BufferId b, Offset lo, Offset hi) {
    const Cover cv = coverOf(b);
    for (std::size_t leaf = cv.fs; leaf < cv.fe; ++leaf) dropRun(covering_runs_[leaf], lo, hi);
    for (int k = 0; k < cv.nparts; ++k) {
      auto& list = partial_entries_[cv.parts[k]];
      auto it = std::lower_bound(list.begin(), list.end(), lo,
                                 [](const Part& y, Offset x) { return y.lo < x; });
      while (it != list.end() && it->id != b) ++it;
      if (it != list.end()) list.erase(it);
      p_.work_ += 1;
    }
    // A union cannot forget a range: the touched leaves and their
    // ancestors rebuild theirs when next read (a dirty node's ancestors
    // are all dirty).
    for (std::size_t leaf = cv.ls; leaf <= cv.le; ++leaf)
      for (std::size_t v = leaf + first_leaf_node_; v >= 1 && !stale_union_[v]; v >>= 1) stale_union_[v] = 1;
  }

  // p_.ranges_ / p_.runs_ = what b must stay clear of, as sorted runs.
  void gather(BufferId b) {
    const std::int32_t rs = p_.start_rank_[b], re = p_.end_rank_[b];
    forEachList(
        b, [&](const std::vector<Run>& runs) { addList(runs); },
        [&](const std::vector<Part>& parts) { addParts(parts, rs, re); });
  }

  // What b must stay clear of, list by list: `runs` gets sorted disjoint
  // runs, `parts` a leaf's partial entries (to filter by b's lifetime).
  // The first and last leaf: the buffers covering them, and those partly
  // covering them; the leaves in between: everything stored there.
  template <class Runs, class Parts>
  void forEachList(BufferId b, Runs&& runs, Parts&& parts) {
    const std::size_t ls = static_cast<std::size_t>(p_.start_rank_[b]) / leaf_ranks_;
    const std::size_t le = static_cast<std::size_t>(p_.end_rank_[b] - 1) / leaf_ranks_;
    runs(covering_runs_[ls]);
    parts(partial_entries_[ls]);
    if (le != ls) {
      runs(covering_runs_[le]);
      parts(partial_entries_[le]);
    }
    for (std::size_t l = ls + 1 + first_leaf_node_, r = le + first_leaf_node_; l < r; l >>= 1, r >>= 1) {
      if (l & 1) runs(unionAt(l++));
      if (r & 1) runs(unionAt(--r));
    }
  }

  // First fit without gathering: the lowest aligned offset x >= floor
  // where [x, x + size) meets no run of the lists gather() would read. Each
  // list is disjoint runs sorted by offset (a leaf's partial entries are
  // filtered and joined into such runs first), so "the first run ending
  // above x" is a search, and x only grows: one cursor per list gallops
  // forward, and a run that meets [x, x + size) lifts x to its end. Done
  // when every list is clear at x. Cost: one check per list per lift (a
  // lift passes at least one run below the answer), and each cursor's
  // gallop is logarithmic in the runs it skips; the gap walk reads and
  // merges every run. Same offset as the walk: both give the lowest clear
  // aligned offset (a run meeting [x, x + size) rules out all of [x, hi)).
  Offset firstFit(BufferId id) {
    const Buffer& b = p_.bufs_[id];
    const std::int32_t rs = p_.start_rank_[id], re = p_.end_rank_[id];
    lists_.clear();
    sizes_.clear();
    // Partial entries of the first and last leaf alive with b, joined.
    joined_.clear();
    std::size_t joined_at[2] = {0, 0}, joined_end[2] = {0, 0};
    int k = 0;  // which leaf's entries: the first, then the last
    auto joinParts = [&](const std::vector<Part>& parts) {
      joined_at[k] = joined_.size();
      std::size_t c = 0;
      for (const Part& e : parts) {
        if (!(e.rs < re && e.re > rs)) continue;
        ++c;
        if (joined_.size() > joined_at[k] && e.lo <= joined_.back().hi)
          joined_.back().hi = std::max(joined_.back().hi, e.hi);
        else
          joined_.push_back(Run{e.lo, e.hi});
      }
      joined_end[k++] = joined_.size();
      p_.work_ += parts.size();
      if (c > 0) sizes_.push_back(c);
    };
    auto addSpan = [&](const std::vector<Run>& runs) {
      if (runs.empty()) return;
      lists_.push_back({runs.data(), runs.data() + runs.size()});
      sizes_.push_back(runs.size());
      p_.work_ += runs.size();
    };
    forEachList(id, addSpan, joinParts);
    for (int j = 0; j < k; ++j)
      if (joined_end[j] > joined_at[j])
        lists_.push_back({joined_.data() + joined_at[j], joined_.data() + joined_end[j]});
    chargeMerge();

    auto lift = [&](Offset v) {
      const auto up = alignUp(v, b.alignment);
      if (!up || !checkedAdd(*up, b.size))
        throw PlacementError(fmt::format("pool exceeds {} bytes placing '{}'", kMaxBytes, b.name), b.name);
      return *up;
    };
    Offset x = lift(p_.floor_);
    const std::size_t count = lists_.size();
    for (std::size_t i = 0, clear = 0; clear < count; i = i + 1 == count ? 0 : i + 1) {
      Cursor& c = lists_[i];
      if (c.p != c.end && c.p->hi <= x) {
        // Gallop to the first run ending above x.
        std::size_t step = 1;
        while (step < static_cast<std::size_t>(c.end - c.p) && c.p[step].hi <= x) step *= 2;
        const Run* hi = c.p + std::min(step, static_cast<std::size_t>(c.end - c.p));
        c.p = std::partition_point(c.p + step / 2, hi, [x](const Run& r) { return r.hi <= x; });
      }
      if (c.p != c.end && c.p->lo < x + b.size) {
        x = lift(c.p->hi);
        clear = 0;
      } else {
        ++clear;
      }
    }
    return x;
  }

 private:
  struct Run {
    Offset lo, hi;
  };
  struct Part {
    Offset lo, hi;
    std::int32_t rs, re;
    BufferId id;
  };
  // Where a buffer is stored: the leaves it touches [ls, le], of which it
  // covers [fs, fe) whole and up to two in part.
  struct Cover {
    std::size_t ls = 0, le = 0, fs = 0, fe = 0;
    std::size_t parts[2] = {0, 0};
    int nparts = 0;
  };
  Cover coverOf(BufferId b) const {
    const auto rs = static_cast<std::size_t>(p_.start_rank_[b]);
    const auto re = static_cast<std::size_t>(p_.end_rank_[b]);
    Cover cv;
    cv.ls = rs / leaf_ranks_;
    cv.le = (re - 1) / leaf_ranks_;
    cv.fs = rs % leaf_ranks_ == 0 ? cv.ls : cv.ls + 1;
    cv.fe = re % leaf_ranks_ == 0 ? cv.le + 1 : cv.le;
    if (cv.fs > cv.ls) cv.parts[cv.nparts++] = cv.ls;
    if (cv.fe <= cv.le && (cv.le != cv.ls || cv.nparts == 0)) cv.parts[cv.nparts++] = cv.le;
    if (cv.fe < cv.fs) cv.fe = cv.fs;  // inside one leaf
    return cv;
  }

  // Buffers covering one leaf are alive together: disjoint ranges, kept as
  // runs of touching ones.
  // Returns where the run went (for the next list's search).
  std::size_t addRun(std::vector<Run>& runs, Offset lo, Offset hi, std::size_t near) {
    const std::size_t at = partitionNear(runs, near, [lo](const Run& y) { return y.lo <= lo; });
    auto it = runs.begin() + static_cast<std::ptrdiff_t>(at);
    const bool left = it != runs.begin() && std::prev(it)->hi == lo;
    const bool right = it != runs.end() && it->lo == hi;
    if (left && right) {
      std::prev(it)->hi = it->hi;
      runs.erase(it);
    } else if (left) {
      std::prev(it)->hi = hi;
    } else if (right) {
      it->lo = lo;
    } else {
      runs.insert(it, Run{lo, hi});
    }
    p_.work_ += 1;
    return at;
  }

  void dropRun(std::vector<Run>& runs, Offset lo, Offset hi) {
    auto it = std::upper_bound(runs.begin(), runs.end(), lo,
                               [](Offset x, const Run& y) { return x < y.lo; });
    if (it == runs.begin()) return;  // not stored (cannot happen)
    --it;
    const Run r = *it;
    if (r.lo < lo && hi < r.hi) {
      it->hi = lo;
      runs.insert(std::next(it), Run{hi, r.hi});
    } else if (r.lo < lo) {
      it->hi = lo;
    } else if (hi < r.hi) {
      it->lo = hi;
    } else {
      runs.erase(it);
    }
    p_.work_ += 1;
  }

  // Adds [lo, hi) to a union of runs; false when it held it already.
  // `near`: where to start looking, updated to where it went.
  bool unionInsert(std::vector<Run>& runs, Offset lo, Offset hi, std::size_t& near) {
    near = partitionNear(runs, near, [lo](const Run& y) { return y.hi < lo; });
    const std::size_t after = partitionNear(runs, near, [hi](const Run& y) { return y.lo <= hi; });
    auto i = runs.begin() + static_cast<std::ptrdiff_t>(near);
    auto j = runs.begin() + static_cast<std::ptrdiff_t>(after);
    p_.work_ += 1;
    if (i == j) {
      runs.insert(i, Run{lo, hi});
      return true;
    }
    if (std::next(i) == j && i->lo <= lo && hi <= i->hi) return false;
    const Offset nlo = std::min(lo, i->lo), nhi = std::max(hi, std::prev(j)->hi);
    *i = Run{nlo, nhi};
    runs.erase(std::next(i), j);
    return true;
  }

  const std::vector<Run>& unionAt(std::size_t v) {
    if (stale_union_[v]) {
      if (v < first_leaf_node_) {
        unionAt(2 * v);
        unionAt(2 * v + 1);
      }
      rebuildUnion(v);
      stale_union_[v] = 0;
    }
    return unions_[v];
  }

  // unions_[v] from its parts: a leaf's covering runs and partial entries, or
  // the unions of the two children.
  void rebuildUnion(std::size_t v) {
    auto& out = unions_[v];
    out.clear();
    auto add = [&](Offset lo, Offset hi) {  // in lo order
      if (!out.empty() && lo <= out.back().hi) out.back().hi = std::max(out.back().hi, hi);
      else out.push_back(Run{lo, hi});
    };
    auto merge = [&](const auto& x, const auto& y) {
      std::size_t i = 0, j = 0;
      while (i < x.size() || j < y.size()) {
        if (j == y.size() || (i < x.size() && x[i].lo <= y[j].lo)) {
          add(x[i].lo, x[i].hi);
          ++i;
        } else {
          add(y[j].lo, y[j].hi);
          ++j;
        }
      }
      p_.work_ += x.size() + y.size();
    };
    if (v >= first_leaf_node_)
      merge(covering_runs_[v - first_leaf_node_], partial_entries_[v - first_leaf_node_]);
    else merge(unions_[2 * v], unions_[2 * v + 1]);
  }

  void addList(const std::vector<Run>& runs) {
    if (runs.empty()) return;
    auto& out = p_.ranges_;
    const std::size_t base = out.size();
    out.resize(base + runs.size());
    for (std::size_t k = 0; k < runs.size(); ++k) out[base + k] = Range(runs[k].lo, runs[k].hi);
    p_.runs_.push_back(out.size());
    p_.work_ += runs.size();
  }

  void addParts(const std::vector<Part>& parts, std::int32_t rs, std::int32_t re) {
    const std::size_t n = parts.size();
    if (n == 0) return;
    auto& out = p_.ranges_;
    const std::size_t base = out.size();
    out.resize(base + n);
    Range* o = out.data() + base;
    std::size_t c = 0;
    for (const Part& e : parts) {  // branch-free filter
      o[c] = Range(e.lo, e.hi);
      c += static_cast<std::size_t>(int{e.rs < re} & int{e.re > rs});
    }
    out.resize(base + c);
    if (c > 0) p_.runs_.push_back(out.size());
    p_.work_ += n;
  }

  // What mergeRuns() would charge for lists of these sizes: Huffman merges
  // of all but the longest (the cost does not depend on how ties break).
  // Charged by firstFit() too, so the work counts, the budgets measured in
  // them and hence every plan stay the same whichever path placed.
  void chargeMerge() {
    if (sizes_.size() < 3) return;
    std::swap(*std::max_element(sizes_.begin(), sizes_.end()), sizes_.back());
    sizes_.pop_back();
    auto greater = std::greater<std::size_t>();
    std::make_heap(sizes_.begin(), sizes_.end(), greater);
    while (sizes_.size() > 1) {
      std::pop_heap(sizes_.begin(), sizes_.end(), greater);
      const std::size_t a = sizes_.back();
      sizes_.pop_back();
      std::pop_heap(sizes_.begin(), sizes_.end(), greater);
      sizes_.back() += a;
      p_.work_ += sizes_.back();
      std::push_heap(sizes_.begin(), sizes_.end(), greater);
    }
  }

  struct Cursor {
    const Run* p;
    const Run* end;
  };

  Placer& p_;
  std::vector<Cursor> lists_;       // scratch (firstFit): the lists b reads
  std::vector<std::size_t> sizes_;  // scratch (firstFit): their sizes as gathered
  std::vector<Run> joined_;         // scratch (firstFit): joined partial entries
  std::size_t leaf_ranks_;          // time ranks per leaf
  std::size_t leaves_ = 1;
  std::size_t first_leaf_node_ = 1;  // node of leaf 0; node v's children are 2v, 2v + 1
  std::vector<std::vector<Run>> covering_runs_;     // per leaf: runs of the buffers covering it
  std::vector<std::vector<Part>> partial_entries_;  // per leaf: partly covering buffers, by offset
  std::vector<std::vector<Run>> unions_;            // per node: union of all stored at or below it
  std::vector<std::uint8_t> stale_union_;           // per node: unions_ to be rebuilt
};

// ---------------------------------------------------------------------------
// The buckets (pools with gaps).

class Placer::Buckets {
 public:
  explicit Buckets(Placer& p) : p_(p) {
    const auto& bufs = p_.bufs_;
    const std::size_t n = bufs.size();
    gapped_.resize(n);
    std::uint64_t span = 0;
    for (std::size_t i = 0; i < n; ++i) {
      gapped_[i] = !bufs[i].gaps.empty();
      any_gapped_ = any_gapped_ || gapped_[i];
      span += static_cast<std::uint64_t>(p_.end_rank_[i] - p_.start_rank_[i]);
    }
    // Twice the mean lifetime: most lifetimes fit in one bucket, each
    // bucket holds about three lifetimes' worth of buffers.
    width_ = n ? std::max<std::size_t>(1, static_cast<std::size_t>(2 * span / n)) : 1;
    buckets_.resize(p_.ranks_ / width_ + 1);
    // Each list gets room for every buffer it could ever hold, once: no
    // reallocation (and no copying) while placing.
    std::vector<std::uint32_t> all(buckets_.size(), 0), own(buckets_.size(), 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (bufs[i].size == 0) continue;
      const auto b = static_cast<BufferId>(i);
      ++own[firstBucket(b)];
      for (std::size_t k = firstBucket(b), last = lastBucket(b); k <= last; ++k) ++all[k];
    }
    for (std::size_t k = 0; k < buckets_.size(); ++k) {
      buckets_[k].all.keys.reserve(all[k]);
      buckets_[k].own.keys.reserve(own[k]);
    }
  }

  void clear() {
    for (auto& b : buckets_) {
      b.all.clear();
      b.own.clear();
    }
  }

  void insert(BufferId b, Offset lo, Offset hi) {
    const Key k{lo, hi, p_.start_rank_[b], p_.end_rank_[b], b};
    const std::size_t first = firstBucket(b), last = lastBucket(b);
    buckets_[first].own.insert(k);
    for (std::size_t j = first; j <= last; ++j) buckets_[j].all.insert(k);
    p_.work_ += 2 + last - first;
  }

  // Rebuilds every list from `ids` at `offsets` (sorted once, not
  // inserted one by one).
  void bulk(std::span<const BufferId> ids, const std::vector<Offset>& offsets) {
    clear();
    for (BufferId b : ids) {
      const Buffer& buf = p_.bufs_[b];
      if (buf.size == 0) continue;
      const Key k{offsets[b], offsets[b] + buf.size, p_.start_rank_[b], p_.end_rank_[b], b};
      const std::size_t first = firstBucket(b), last = lastBucket(b);
      buckets_[first].own.keys.push_back(k);
      for (std::size_t j = first; j <= last; ++j) buckets_[j].all.keys.push_back(k);
    }
    auto sortList = [](List& l) {
      std::sort(l.keys.begin(), l.keys.end(), [](const Key& x, const Key& y) {
        return x.lo != y.lo ? x.lo < y.lo : x.id < y.id;
      });
    };
    for (auto& bucket : buckets_) {
      sortList(bucket.all);
      sortList(bucket.own);
    }
    p_.work_ += ids.size();
  }

  void erase(BufferId b, Offset lo) {
    const std::size_t first = firstBucket(b), last = lastBucket(b);
    buckets_[first].own.erase(lo, b);
    for (std::size_t j = first; j <= last; ++j) buckets_[j].all.erase(lo, b);
    p_.work_ += 2 + last - first;
  }

  // One bucket and no gaps: walk its sorted list as it is (no copy).
  bool direct(BufferId b) const { return !any_gapped_ && firstBucket(b) == lastBucket(b); }
  template <typename Visit>
  void walkDirect(BufferId b, Visit&& visit) {
    const auto& keys = buckets_[firstBucket(b)].all.keys;
    const std::int32_t rs = p_.start_rank_[b], re = p_.end_rank_[b];
    std::size_t k = 0;
    for (; k < keys.size(); ++k)
      if (!visit(keys[k].lo, keys[k].hi,
                 static_cast<bool>(int{keys[k].rs < re} & int{keys[k].re > rs})))
        break;
    p_.work_ += k;
  }

  // p_.ranges_ / p_.runs_ = what b must stay clear of, in sorted runs.
  void gather(BufferId id) {
    const Buffer& b = p_.bufs_[id];
    const bool slow = any_gapped_;
    std::size_t unsorted = 0;  // ranges from buffers with gaps, kept apart
    auto& ranges = p_.ranges_;
    auto& extra = p_.merged_;
    extra.clear();
    forEachList(id, [&](const List& l, auto keep) {
      const std::size_t n = l.keys.size();
      p_.work_ += n;
      if (n == 0) return;
      const std::size_t base = ranges.size();
      ranges.resize(base + n);
      Range* out = ranges.data() + base;
      std::size_t c = 0;
      if (!slow) {
        for (const Key& k : l.keys) {  // branch-free filter
          out[c] = Range(k.lo, k.hi);
          c += keep(k) ? 1 : 0;
        }
      } else {
        for (std::size_t j = 0; j < n; ++j) {
          const Key& k = l.keys[j];
          if (!keep(k)) continue;
          if (!gapped_[id] && !gapped_[k.id]) {
            out[c++] = Range(k.lo, k.hi);
            continue;
          }
          // b at x is clear of the entry iff x >= lo + above or
          // x + below <= lo; as a range for the gap walk (x + size <= lo or
          // x >= hi): [lo - below + size, lo + above).
          const auto cl = pool::clearance(p_.bufs_[k.id], b);
          if (!cl) continue;
          extra.push_back(Range(k.lo + b.size - std::min(cl->below, k.lo + b.size), k.lo + cl->above));
          ++unsorted;
        }
      }
      ranges.resize(base + c);
      if (c > 0) p_.runs_.push_back(ranges.size());
    });
    if (unsorted > 0) {
      std::sort(extra.begin(), extra.end(), [](const Range& x, const Range& y) { return x.lo < y.lo; });
      ranges.insert(ranges.end(), extra.begin(), extra.end());
      p_.runs_.push_back(ranges.size());
    }
  }

  bool gapped(BufferId b) const { return gapped_[b] != 0; }

 private:
  // A marked buffer as a bucket stores it: the bytes it holds (its
  // envelope, for buffers with gaps) and its lifetime in time ranks.
  struct Key {
    Offset lo, hi;
    std::int32_t rs, re;
    BufferId id;
  };
  // Keys sorted by lo.
  struct List {
    std::vector<Key> keys;
    void insert(const Key& k) {
      const auto pos = std::upper_bound(keys.begin(), keys.end(), k.lo,
                                        [](Offset x, const Key& y) { return x < y.lo; });
      keys.insert(pos, k);
    }
    void erase(Offset lo, BufferId id) {
      auto pos = std::lower_bound(keys.begin(), keys.end(), lo,
                                  [](const Key& y, Offset x) { return y.lo < x; });
      while (pos != keys.end() && pos->id != id) ++pos;
      if (pos != keys.end()) keys.erase(pos);
    }
    void clear() { keys.clear(); }
  };
  // A bucket lists the marked buffers alive in it (all) and, apart, those
  // that start in it (own): a lifetime spanning buckets reads the first
  // bucket's `all` and the later buckets' `own` lists, so every live
  // buffer once and few dead ones.
  struct Bucket {
    List all, own;
  };
  std::size_t firstBucket(BufferId b) const { return static_cast<std::size_t>(p_.start_rank_[b]) / width_; }
  std::size_t lastBucket(BufferId b) const { return static_cast<std::size_t>(p_.end_rank_[b] - 1) / width_; }
  // Calls f(list, keep) for the lists b's lifetime reads, where keep(key)
  // says whether the entry is alive during b's lifetime.
  template <typename F>
  void forEachList(BufferId id, F&& f) {
    const std::int32_t rs = p_.start_rank_[id], re = p_.end_rank_[id];
    const std::size_t first = firstBucket(id), last = lastBucket(id);
    f(buckets_[first].all,
      [rs, re](const Key& k) { return static_cast<bool>(int{k.rs < re} & int{k.re > rs}); });
    // Later buckets: started after b did, alive if starting before b ends.
    for (std::size_t j = first + 1; j <= last; ++j)
      f(buckets_[j].own, [re](const Key& k) { return k.rs < re; });
  }

  Placer& p_;
  std::vector<std::uint8_t> gapped_;
  bool any_gapped_ = false;
  std::size_t width_ = 1;  // bucket width in ranks
  std::vector<Bucket> buckets_;
};

// ---------------------------------------------------------------------------
// The engine.

Placer::Placer(const PoolProblem& merged, PlacerParams params)
    : bufs_(merged.buffers), floor_(merged.reserved) {
  const std::size_t n = bufs_.size();
  // Time ranks: the distinct start and end values, in order (one sort of
  // (time, buffer) pairs, then a sweep).
  std::vector<std::pair<TimeValue, std::uint32_t>> events;  // buffer*2 (+1: end)
  events.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    events.emplace_back(bufs_[i].start, static_cast<std::uint32_t>(2 * i));
    events.emplace_back(bufs_[i].end, static_cast<std::uint32_t>(2 * i + 1));
  }
  std::sort(events.begin(), events.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  start_rank_.resize(n);
  end_rank_.resize(n);
  std::int32_t rank = -1;
  for (std::size_t k = 0; k < events.size(); ++k) {
    if (k == 0 || events[k].first != events[k - 1].first) ++rank;
    const std::uint32_t e = events[k].second;
    (e & 1 ? end_rank_ : start_rank_)[e / 2] = rank;
  }
  ranks_ = static_cast<std::size_t>(rank + 1);
  bool gapped = false;
  for (std::size_t i = 0; i < n; ++i) {
    // Merged problems have end > start.
    if (end_rank_[i] <= start_rank_[i]) end_rank_[i] = start_rank_[i] + 1;
    gapped = gapped || !bufs_[i].gaps.empty();
  }
  ranks_ = std::max<std::size_t>(ranks_, 1) + 1;
  marked_at_.assign(n, kUnmarked);
  runs_.reserve(64);
  if (params.index == PlacerParams::Index::Buckets || gapped)
    buckets_ = new Buckets(*this);
  else {
    // Leaves of about an eighth of the mean lifetime: a buffer covers a
    // few leaves whole, and few buffers start or end inside one leaf.
    std::size_t w = params.leaf_ranks;
    if (w == 0) {
      std::uint64_t span = 0;
      for (std::size_t i = 0; i < n; ++i) span += static_cast<std::uint64_t>(end_rank_[i] - start_rank_[i]);
      w = std::clamp<std::size_t>(n ? static_cast<std::size_t>(span / n / 8) : 1, 4, 128);
    }
    tree_ = new Tree(*this, w);
  }
}

Placer::~Placer() {
  delete tree_;
  delete buckets_;
}

void Placer::clear() {
  if (tree_) tree_->clear();
  else buckets_->clear();
  std::fill(marked_at_.begin(), marked_at_.end(), kUnmarked);
}

void Placer::mark(BufferId b, Offset at) {
  marked_at_[b] = at;
  const Buffer& buf = bufs_[b];
  if (buf.size == 0) return;  // holds nothing; would only split gaps
  if (tree_) tree_->insert(b, at, at + buf.size);
  else buckets_->insert(b, at, at + buf.size);
}

void Placer::unmark(BufferId b) {
  const Offset at = marked_at_[b];
  if (at == kUnmarked) return;
  marked_at_[b] = kUnmarked;
  if (bufs_[b].size == 0) return;
  if (tree_) tree_->erase(b, at, at + bufs_[b].size);
  else buckets_->erase(b, at);
}

void Placer::markAll(std::span<const BufferId> ids, const std::vector<Offset>& offsets) {
  if (buckets_) {
    std::fill(marked_at_.begin(), marked_at_.end(), kUnmarked);
    for (BufferId b : ids) marked_at_[b] = offsets[b];
    buckets_->bulk(ids, offsets);
    return;
  }
  clear();
  for (BufferId b : ids) mark(b, offsets[b]);
}

namespace {

// std::merge by lo without branches on the data (select, then advance by
// the comparison): ranges from different runs interleave unpredictably.
template <typename R>
R* mergeByLo(const R* a, const R* ae, const R* b, const R* be, R* out) {
  // Masks, not a conditional: compilers turn `t ? x : y` on 16-byte
  // values back into a branch.
  while (a != ae && b != be) {
    const Offset t = b->lo < a->lo;
    const Offset m = Offset{0} - t;
    out->lo = (b->lo & m) | (a->lo & ~m);
    out->hi = (b->hi & m) | (a->hi & ~m);
    ++out;
    b += t;
    a += 1 - t;
  }
  out = std::copy(a, ae, out);
  return std::copy(b, be, out);
}

}  // namespace

// The sorted runs in ranges_ -> two sorted sequences for the walk: the
// longest run where it lies, and every other run merged into merged_,
// shortest first (Huffman order: a short run is copied more often than a
// long one, and the longest is never copied). The merge of two runs of a
// and b ranges costs a + b, so gathering k runs of n ranges costs at most
// n log k, and about n when one run dominates (the common case).
void Placer::mergeRuns() {
  const std::size_t k = runs_.size() - 1;
  big_ = {nullptr, 0};
  merged_.clear();
  if (k == 0) return;
  std::size_t longest = 0;
  for (std::size_t r = 1; r < k; ++r)
    if (runs_[r + 1] - runs_[r] > runs_[longest + 1] - runs_[longest]) longest = r;
  big_ = {ranges_.data() + runs_[longest], runs_[longest + 1] - runs_[longest]};
  if (k == 1) return;
  const std::size_t small_total = ranges_.size() - big_.second;
  if (k == 2) {
    const std::size_t other = 1 - longest;
    merged_.assign(ranges_.begin() + static_cast<std::ptrdiff_t>(runs_[other]),
                   ranges_.begin() + static_cast<std::ptrdiff_t>(runs_[other + 1]));
    return;
  }
  // Room for every intermediate merge: Huffman's cost is at most that of a
  // balanced tree, small_total x ceil(log2 k).
  std::size_t levels = 1;
  while ((std::size_t{1} << levels) < k) ++levels;
  arena_.resize(small_total * (levels + 1));
  std::size_t used = 0;
  std::vector<Seg>& heap = segs_;
  heap.clear();
  for (std::size_t r = 0; r < k; ++r)
    if (r != longest) heap.push_back({ranges_.data() + runs_[r], runs_[r + 1] - runs_[r]});
  auto bigger = [](const Seg& a, const Seg& b) { return a.n != b.n ? a.n > b.n : a.p > b.p; };
  std::make_heap(heap.begin(), heap.end(), bigger);
  while (heap.size() > 1) {
    std::pop_heap(heap.begin(), heap.end(), bigger);
    const Seg a = heap.back();
    heap.pop_back();
    std::pop_heap(heap.begin(), heap.end(), bigger);
    const Seg b = heap.back();
    heap.pop_back();
    Range* out = arena_.data() + used;
    mergeByLo(a.p, a.p + a.n, b.p, b.p + b.n, out);
    used += a.n + b.n;
    heap.push_back({out, a.n + b.n});
    std::push_heap(heap.begin(), heap.end(), bigger);
  }
  merged_.assign(heap.front().p, heap.front().p + heap.front().n);
  work_ += used;
}

namespace {

// The gap walk: visits ranges in lo order from the floor up, keeping the
// best (or first) free gap that fits `size` at `align`. Kept branch-light:
// the common range (no room below it) costs a compare and a max.
class GapWalk {
 public:
  GapWalk(Offset floor, Bytes size, Bytes align, Fit fit)
      : cursor_(floor), size_(size), align_(align), first_(fit == Fit::First) {}
  // False once the walk is decided (first fit found its gap, or a gap of
  // exactly the size was found).
  bool visit(Offset lo, Offset hi, bool keep) {
    // Bitwise, not short-circuit: the keep flag is unpredictable.
    if (__builtin_expect(int{keep} & int{lo >= cursor_ + size_}, 0)) {  // room below lo
      const Offset cand = alignUpFast(cursor_);
      if (cand <= lo && size_ <= lo - cand) {
        const Bytes gap = lo - cursor_;
        if (gap < best_gap_) {
          best_gap_ = gap;
          marked_at_ = cand;
        }
        if (first_ || gap == size_) return false;
      }
    }
    const Offset top = keep ? hi : 0;
    cursor_ = top > cursor_ ? top : cursor_;
    return true;
  }
  // The chosen offset: the best gap, else the aligned top.
  Offset result(const Buffer& b) const {
    if (best_gap_ != kNoGap) return marked_at_;
    const auto top = alignUp(cursor_, align_);
    if (!top || !checkedAdd(*top, size_))
      throw PlacementError(fmt::format("pool exceeds {} bytes placing '{}'", kMaxBytes, b.name), b.name);
    return *top;
  }

 private:
  static constexpr Bytes kNoGap = std::numeric_limits<Bytes>::max();
  Offset alignUpFast(Offset v) const {
    if (align_ <= 1) return v;
    const Offset r = v % align_;
    return r == 0 ? v : v + (align_ - r);  // v < 2^62: no overflow
  }
  Offset cursor_;
  Bytes size_, align_;
  bool first_;
  Bytes best_gap_ = kNoGap;
  Offset marked_at_ = 0;
};

}  // namespace

Offset Placer::walk(BufferId id, Fit fit) {
  const Buffer& b = bufs_[id];
  GapWalk walk(floor_, b.size, b.alignment, fit);
  if (buckets_ && buckets_->direct(id)) {
    buckets_->walkDirect(id, [&](Offset lo, Offset hi, bool keep) { return walk.visit(lo, hi, keep); });
    return walk.result(b);
  }
  if (tree_ && fit == Fit::First) return tree_->firstFit(id);
  ranges_.clear();
  runs_.clear();
  runs_.push_back(0);
  if (tree_) tree_->gather(id);
  else buckets_->gather(id);
  mergeRuns();
  // Both sequences in lo order, as one.
  const Range* a = big_.first;
  const Range* const a_end = a + big_.second;
  const Range* c = merged_.data();
  const Range* const c_end = c + merged_.size();
  while (a != a_end || c != c_end) {
    const Range& r = (c == c_end || (a != a_end && a->lo <= c->lo)) ? *a++ : *c++;
    if (!walk.visit(r.lo, r.hi, true)) break;
  }
  return walk.result(b);
}

Offset Placer::choose(BufferId id, Fit fit) {
  const Buffer& b = bufs_[id];
  ++work_;
  if (b.fixed_offset) return *b.fixed_offset;
  if (b.size == 0) return *alignUp(floor_, b.alignment);
  return walk(id, fit);
}

bool Placer::fits(BufferId id, Offset at) {
  const Buffer& b = bufs_[id];
  if (b.size == 0) return true;
  ranges_.clear();
  runs_.clear();
  runs_.push_back(0);
  if (tree_) tree_->gather(id);
  else buckets_->gather(id);
  for (const Range& r : ranges_)
    if (at < r.hi && at + b.size > r.lo) return false;
  return true;
}

void Placer::overlapping(BufferId id, std::vector<BufferId>& out) {
  out.clear();
  const std::size_t n = bufs_.size();
  if (ids_all_.empty() && n > 0) {
    // Built on first use (the local search's): buffer ids by time bucket,
    // alive in it (all) and starting in it (own), as the buckets keep them.
    std::uint64_t span = 0;
    for (std::size_t i = 0; i < n; ++i) span += static_cast<std::uint64_t>(end_rank_[i] - start_rank_[i]);
    id_width_ = std::max<std::size_t>(1, static_cast<std::size_t>(2 * span / n));
    const std::size_t count = ranks_ / id_width_ + 1;
    ids_all_.resize(count);
    ids_own_.resize(count);
    for (std::size_t i = 0; i < n; ++i) {
      if (bufs_[i].size == 0) continue;
      const std::size_t first = static_cast<std::size_t>(start_rank_[i]) / id_width_;
      const std::size_t last = static_cast<std::size_t>(end_rank_[i] - 1) / id_width_;
      ids_own_[first].push_back(static_cast<BufferId>(i));
      for (std::size_t k = first; k <= last; ++k) ids_all_[k].push_back(static_cast<BufferId>(i));
    }
  }
  const Buffer& b = bufs_[id];
  if (b.size == 0) return;
  const std::int32_t rs = start_rank_[id], re = end_rank_[id];
  const std::size_t first = static_cast<std::size_t>(rs) / id_width_;
  const std::size_t last = static_cast<std::size_t>(re - 1) / id_width_;
  auto consider = [&](BufferId o) {
    if (o == id || marked_at_[o] == kUnmarked) return;
    if ((!bufs_[id].gaps.empty() || !bufs_[o].gaps.empty()) && !pool::clearance(bufs_[o], b)) return;
    out.push_back(o);
  };
  for (BufferId o : ids_all_[first]) {
    if (start_rank_[o] < re && end_rank_[o] > rs) consider(o);
  }
  work_ += ids_all_[first].size();
  for (std::size_t j = first + 1; j <= last; ++j) {
    for (BufferId o : ids_own_[j])
      if (start_rank_[o] < re) consider(o);
    work_ += ids_own_[j].size();
  }
  // By offset (then id): the order does not depend on the index.
  std::sort(out.begin(), out.end(), [&](BufferId x, BufferId y) {
    return marked_at_[x] != marked_at_[y] ? marked_at_[x] < marked_at_[y] : x < y;
  });
}

Bytes Placer::place(std::span<const BufferId> order, std::size_t from, Fit fit,
                    std::vector<Offset>& offsets, const std::atomic<bool>* stop) {
  Bytes height = floor_;
  for (std::size_t k = 0; k < from; ++k) {
    const Buffer& b = bufs_[order[k]];
    if (b.size > 0) height = std::max(height, offsets[b.id] + b.size);
  }
  markAll(order.subspan(0, from), offsets);
  for (std::size_t k = from; k < order.size(); ++k) {
    if (stop && (k & 1023) == 0 && stop->load(std::memory_order_relaxed)) return kStopped;
    const BufferId id = order[k];
    const Offset at = choose(id, fit);
    offsets[id] = at;
    mark(id, at);
    if (bufs_[id].size > 0) height = std::max(height, at + bufs_[id].size);
  }
  return height;
}

}  // namespace memplan::heur

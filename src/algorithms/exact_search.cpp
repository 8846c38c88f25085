// Exact search: see exact_search.h for the techniques.
#include "algorithms/exact_search.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <map>
#include <numeric>

#include "algorithms/pool_util.h"

namespace memplan::exact {
namespace {

using Idx = std::int32_t;         // a searched item (a merged buffer with bytes)
using SectionIdx = std::int32_t;  // a section: time between two events
using Clock = std::chrono::steady_clock;

constexpr Offset kUnplaced = ~Offset{0};
constexpr Idx kNoItem = -1;

enum class Status { kFound, kNotFound, kAborted };

// Sections [lo, hi) in which the item holds bytes [wlo, whi) of its own.
struct Span {
  SectionIdx lo, hi;
  Bytes wlo, whi;
};
// `other` shares time with the item: placed above it, other's offset is at
// least the item's + above.
struct Adj {
  Idx other;
  Bytes above;
};
// A pinned item as an obstacle for another item of size s: x is clear iff
// x + s <= lo or x >= hi.
struct Obstacle {
  Offset lo, hi;
};
// One candidate of a node's dynamic order.
struct Entry {
  Offset offset;
  Idx pre;   // static preorder rank in its partition
  Idx item;
};
struct Change {
  std::int32_t idx;
  bool is_floor;  // else a min_off
  Offset old;
};

Offset alignUpSat(Offset v, Bytes a) {
  const auto r = alignUp(v, a);
  return r ? *r : kUnplaced;
}

Bytes heightOf(const PoolProblem& problem, const std::vector<Offset>& offsets) {
  Bytes h = 0;
  for (std::size_t b = 0; b < problem.buffers.size(); ++b)
    if (problem.buffers[b].size > 0) h = std::max(h, offsets[b] + problem.buffers[b].size);
  return h;
}

// Section totals for the searches that need more than one section:
// range add, range max, and "every section of a range above a threshold",
// each in O(log S) (+ one per section reported). Lazy adds stay at the
// nodes that cover a range (never pushed down).
class MaxTree {
 public:
  void reset(const std::vector<Bytes>& values) {
    n_ = values.size();
    leaves_ = 1;
    while (leaves_ < std::max<std::size_t>(1, n_)) leaves_ *= 2;
    max_.assign(2 * leaves_, 0);
    add_.assign(2 * leaves_, 0);
    for (std::size_t i = 0; i < n_; ++i) max_[leaves_ + i] = static_cast<std::int64_t>(values[i]);
    for (std::size_t i = leaves_; i-- > 1;) max_[i] = std::max(max_[2 * i], max_[2 * i + 1]);
  }
  // values[l..r) += delta.
  void add(std::size_t l, std::size_t r, std::int64_t delta) { add(1, 0, leaves_, l, r, delta); }
  // max(values[l..r)), 0 for an empty range.
  std::int64_t max(std::size_t l, std::size_t r) const {
    return l < r ? max(1, 0, leaves_, l, r) : 0;
  }
  // Calls f(i) for every i in [l, r) with values[i] > threshold.
  template <typename F>
  void forEachAbove(std::size_t l, std::size_t r, std::int64_t threshold, F&& f) const {
    if (l < r) above(1, 0, leaves_, l, r, threshold, f);
  }

 private:
  void add(std::size_t node, std::size_t nl, std::size_t nr, std::size_t l, std::size_t r,
           std::int64_t delta) {
    if (r <= nl || nr <= l) return;
    if (l <= nl && nr <= r) {
      add_[node] += delta;
      max_[node] += delta;
      return;
    }
    const std::size_t mid = (nl + nr) / 2;
    add(2 * node, nl, mid, l, r, delta);
    add(2 * node + 1, mid, nr, l, r, delta);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]) + add_[node];
  }
  std::int64_t max(std::size_t node, std::size_t nl, std::size_t nr, std::size_t l,
                   std::size_t r) const {
    if (l <= nl && nr <= r) return max_[node];
    const std::size_t mid = (nl + nr) / 2;
    std::int64_t m = std::numeric_limits<std::int64_t>::min();
    if (l < mid) m = std::max(m, max(2 * node, nl, mid, l, r));
    if (mid < r) m = std::max(m, max(2 * node + 1, mid, nr, l, r));
    return m + add_[node];
  }
  template <typename F>
  void above(std::size_t node, std::size_t nl, std::size_t nr, std::size_t l, std::size_t r,
             std::int64_t threshold, F& f) const {
    if (r <= nl || nr <= l || max_[node] <= threshold) return;
    if (nr - nl == 1) {
      if (nl < n_) f(nl);
      return;
    }
    const std::size_t mid = (nl + nr) / 2;
    // Children's values exclude this node's pending add.
    above(2 * node, nl, mid, l, r, threshold - add_[node], f);
    above(2 * node + 1, mid, nr, l, r, threshold - add_[node], f);
  }

  std::size_t n_ = 0, leaves_ = 1;
  std::vector<std::int64_t> max_, add_;
};

// The decision search on one merged problem; reusable across capacities.
class Searcher {
 public:
  Searcher(const PoolProblem& merged, const ExactParams& params)
      : p_(params), base_(merged.reserved) {
    stop_ = params.stop;
    const auto& bufs = merged.buffers;
    const std::size_t n = bufs.size();
    fixed_offsets_.assign(n, 0);
    item_of_.assign(n, kNoItem);
    std::vector<std::vector<pool::Segment>> segs;
    std::vector<TimeValue> times;
    for (std::size_t b = 0; b < n; ++b) {
      const Buffer& buf = bufs[b];
      std::vector<pool::Segment> s;
      pool::segmentsOf(buf, s);
      if (s.empty()) {  // holds no bytes: anywhere allowed
        fixed_offsets_[b] = buf.fixed_offset ? *buf.fixed_offset : alignUpSat(base_, buf.alignment);
        continue;
      }
      item_of_[b] = static_cast<Idx>(buffer_.size());
      buffer_.push_back(b);
      for (const pool::Segment& x : s) {
        times.push_back(x.start);
        times.push_back(x.end);
      }
      segs.push_back(std::move(s));
    }
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    num_sections_ = times.empty() ? 0 : static_cast<SectionIdx>(times.size() - 1);
    auto sectionOf = [&](TimeValue t) {
      return static_cast<SectionIdx>(std::lower_bound(times.begin(), times.end(), t) -
                                     times.begin());
    };
    const Idx m = static_cast<Idx>(buffer_.size());
    span_begin_.push_back(0);
    for (Idx i = 0; i < m; ++i) {
      const Buffer& buf = bufs[buffer_[i]];
      size_.push_back(buf.size);
      align_.push_back(std::max<Bytes>(1, buf.alignment));
      pin_.push_back(buf.fixed_offset ? *buf.fixed_offset : kUnplaced);
      start_.push_back(buf.start);
      end_.push_back(buf.end);
      for (const pool::Segment& x : segs[i]) {
        spans_.push_back({sectionOf(x.start), sectionOf(x.end), x.lo, x.hi});
        if (x.lo > 0) complete_ = false;
      }
      span_begin_.push_back(static_cast<std::int32_t>(spans_.size()));
      sl_.push_back(spans_[span_begin_[i]].lo);
      sr_.push_back(spans_[span_begin_[i + 1] - 1].hi);
    }
    // Sections' items (CSR) and initial totals.
    std::vector<std::int32_t> count(num_sections_ + 1, 0);
    total0_.assign(num_sections_, 0);
    for (Idx i = 0; i < m; ++i)
      for (std::int32_t k = span_begin_[i]; k < span_begin_[i + 1]; ++k)
        for (SectionIdx s = spans_[k].lo; s < spans_[k].hi; ++s) {
          ++count[s + 1];
          total0_[s] += spans_[k].whi - spans_[k].wlo;
        }
    for (SectionIdx s = 0; s < num_sections_; ++s) count[s + 1] += count[s];
    sec_begin_ = count;
    sec_items_.resize(count[num_sections_]);
    {
      // slot: item i's n-th section (spans in order) -> its position in
      // that section's list, and back.
      std::vector<std::int32_t> fill(count.begin(), count.end() - 1);
      slot_of_.resize(sec_items_.size());
      for (Idx i = 0; i < m; ++i) {
        item_slot_begin_.push_back(static_cast<std::int32_t>(slot_.size()));
        for (std::int32_t k = span_begin_[i]; k < span_begin_[i + 1]; ++k)
          for (SectionIdx s = spans_[k].lo; s < spans_[k].hi; ++s) {
            slot_of_[fill[s]] = static_cast<std::int32_t>(slot_.size());
            slot_.push_back(fill[s]);
            sec_items_[fill[s]++] = i;
          }
      }
      item_slot_begin_.push_back(static_cast<std::int32_t>(slot_.size()));
    }
    // Pairs sharing time (sweep over hulls), with their clearances.
    std::vector<std::vector<Adj>> adj(m);
    std::vector<std::vector<Obstacle>> obs(m);
    {
      std::vector<Idx> by_start(m);
      std::iota(by_start.begin(), by_start.end(), 0);
      std::sort(by_start.begin(), by_start.end(),
                [&](Idx a, Idx b) { return sl_[a] != sl_[b] ? sl_[a] < sl_[b] : a < b; });
      std::vector<Idx> active;
      for (Idx i : by_start) {
        std::erase_if(active, [&](Idx a) { return sr_[a] <= sl_[i]; });
        for (Idx a : active) {
          const Buffer& ba = bufs[buffer_[a]];
          const Buffer& bi = bufs[buffer_[i]];
          const auto c = pool::clearance(ba, bi);
          if (!c) continue;
          adj[a].push_back({i, c->above});
          adj[i].push_back({a, c->below});
          const bool pa = ba.fixed_offset.has_value(), pi = bi.fixed_offset.has_value();
          if (pa && pi) {
            const Offset xa = *ba.fixed_offset, xi = *bi.fixed_offset;
            if (!(xi >= xa + c->above || xi + c->below <= xa)) pins_collide_ = true;
          } else if (pa || pi) {
            // The unpinned one steps over the pinned one.
            const Idx u = pa ? i : a;
            const Offset x = pa ? *ba.fixed_offset : *bi.fixed_offset;
            const Bytes above = pa ? c->above : c->below;  // u above the pin
            const Bytes below = pa ? c->below : c->above;  // u below the pin
            const Offset s = size_[u];
            obs[u].push_back({x + s - std::min<Offset>(below, x + s), x + above});
          }
        }
        active.push_back(i);
      }
    }
    adj_begin_.push_back(0);
    obs_begin_.push_back(0);
    for (Idx i = 0; i < m; ++i) {
      adj_.insert(adj_.end(), adj[i].begin(), adj[i].end());
      adj_begin_.push_back(static_cast<std::int32_t>(adj_.size()));
      std::sort(obs[i].begin(), obs[i].end(),
                [](const Obstacle& a, const Obstacle& b) { return a.lo < b.lo; });
      if (p_.pin_obstacles) obs_.insert(obs_.end(), obs[i].begin(), obs[i].end());
      obs_begin_.push_back(static_cast<std::int32_t>(obs_.size()));
    }
    // Cuts: items spanning the boundary between sections s and s + 1.
    cuts0_.assign(std::max<SectionIdx>(0, num_sections_ - 1), 0);
    for (Idx i = 0; i < m; ++i)
      for (SectionIdx s = sl_[i]; s + 1 < sr_[i]; ++s) ++cuts0_[s];
    // Identical items, in index order (symmetry breaking).
    prev_same_.assign(m, kNoItem);
    if (p_.symmetry_breaking) {
      std::map<std::vector<Bytes>, Idx> last;
      for (Idx i = 0; i < m; ++i) {
        if (pin_[i] != kUnplaced) continue;
        std::vector<Bytes> key = {size_[i], align_[i]};
        for (std::int32_t k = span_begin_[i]; k < span_begin_[i + 1]; ++k) {
          key.push_back(static_cast<Bytes>(spans_[k].lo));
          key.push_back(static_cast<Bytes>(spans_[k].hi));
          key.push_back(spans_[k].wlo);
          key.push_back(spans_[k].whi);
        }
        auto [it, fresh] = last.try_emplace(std::move(key), i);
        if (!fresh) {
          prev_same_[i] = it->second;
          it->second = i;
        }
      }
    }
    off_.assign(m, kUnplaced);
    sol_.assign(m, 0);
    sec_stamp_.assign(num_sections_, 0);
    step_limit_ = p_.step_limit ? p_.step_limit : ~std::uint64_t{0};
    steps_ = static_cast<std::uint64_t>(m) + sec_items_.size() + adj_.size();
  }

  bool complete() const { return complete_; }
  std::uint64_t nodes() const { return nodes_; }
  std::uint64_t steps() const { return steps_; }
  // The step limit has ended the search: no probe can go on.
  bool outOfSteps() const { return steps_ >= step_limit_; }

  // Decision at capacity C within `budget` nodes and `steps` steps (and
  // the step limit and the deadline, if any). kNotFound is a proof only
  // when complete().
  Status solve(Bytes capacity, std::uint64_t budget, std::uint64_t steps,
               const Clock::time_point* deadline) {
    step_end_ = steps_ + std::min(steps, step_limit_ - std::min(step_limit_, steps_));
    capacity_ = capacity;
    deadline_ = deadline;
    timed_out_ = false;
    if (pins_collide_) return Status::kNotFound;
    const Idx m = static_cast<Idx>(size_.size());
    // Fresh state.
    std::fill(off_.begin(), off_.end(), kUnplaced);
    min_off_.resize(m);
    for (Idx i = 0; i < m; ++i) {
      min_off_[i] = pin_[i] != kUnplaced ? pin_[i] : fit(i, base_);
      if (min_off_[i] == kUnplaced || min_off_[i] + size_[i] > capacity_) return Status::kNotFound;
      if (pin_[i] != kUnplaced && (pin_[i] < base_ || pin_[i] % align_[i] != 0))
        return Status::kNotFound;
    }
    steps_ += static_cast<std::uint64_t>(m) + static_cast<std::uint64_t>(num_sections_);
    total_ = total0_;
    tree_.reset(total0_);
    sec_unplaced_.resize(num_sections_);
    for (SectionIdx s = 0; s < num_sections_; ++s) sec_unplaced_[s] = sec_begin_[s + 1] - sec_begin_[s];
    cuts_ = cuts0_;
    floor_.assign(num_sections_, base_);
    if (p_.unallocated_floor)
      for (SectionIdx s = 0; s < num_sections_; ++s) {
        const Offset lo = lowestIn(s);
        if (lo != kUnplaced) floor_[s] = std::max(floor_[s], lo);
      }
    for (SectionIdx s = 0; s < num_sections_; ++s)
      if (p_.section_inference && floor_[s] + total_[s] > capacity_) return Status::kNotFound;
    trail_.clear();
    arena_.clear();
    items_.clear();
    // Root partitions: independent from the start where no item spans a
    // boundary.
    std::vector<SectionIdx> cuts = {0};
    if (p_.dynamic_decomposition)
      for (SectionIdx s = 0; s + 1 < num_sections_; ++s)
        if (cuts_[s] == 0) cuts.push_back(s + 1);
    cuts.push_back(num_sections_);

    const std::size_t heuristics = p_.restarts ? std::max<std::size_t>(1, p_.preorders.size()) : 1;
    std::uint64_t limit = p_.restarts ? std::max<std::uint64_t>(1, m) : budget;
    for (;;) {
      if (p_.restarts) limit = limit > (~std::uint64_t{0} >> 2) ? limit : 2 * limit;
      for (std::size_t h = 0; h < heuristics; ++h) {
        if (budget == 0) return Status::kAborted;
        nodes_left_ = std::min(limit, budget);
        const std::uint64_t before = nodes_;
        heuristic_ = p_.preorders.empty() ? std::string("WAT") : p_.preorders[h % p_.preorders.size()];
        Status st = Status::kFound;
        for (std::size_t c = 0; c + 1 < cuts.size() && st == Status::kFound; ++c) {
          const std::size_t ib = items_.size();
          steps_ += static_cast<std::uint64_t>(m);
          for (Idx i = 0; i < m; ++i)
            if (sl_[i] >= cuts[c] && sr_[i] <= cuts[c + 1]) items_.push_back(i);
          if (items_.size() > ib) st = subSolve(cuts[c], cuts[c + 1], ib);
          items_.resize(ib);
        }
        budget -= std::min(budget, nodes_ - before);
        if (st != Status::kAborted || timed_out_ || steps_ >= step_end_) return st;
        if (!p_.restarts) return st;
      }
    }
  }

  // Offsets per merged buffer after kFound.
  std::vector<Offset> offsets() const {
    std::vector<Offset> out = fixed_offsets_;
    for (std::size_t i = 0; i < buffer_.size(); ++i) out[buffer_[i]] = sol_[i];
    return out;
  }

 private:
  // Lowest aligned offset >= from where item i clears every pinned item
  // (obstacles sorted by lo: one pass, x only moves up).
  Offset fit(Idx i, Offset from) const {
    Offset x = alignUpSat(from, align_[i]);
    for (std::int32_t k = obs_begin_[i]; k < obs_begin_[i + 1] && x != kUnplaced; ++k) {
      const Obstacle& o = obs_[k];
      if (o.lo >= x + size_[i]) break;
      if (x < o.hi) x = alignUpSat(o.hi, align_[i]);
    }
    return x;
  }

  // The lowest offset an unplaced item of section s can take; stops early
  // (returning it) once one is at or below `enough`. A section's list
  // keeps its unplaced items first (sec_unplaced_ of them).
  Offset lowestIn(SectionIdx s, Offset enough = 0) {
    Offset lo = kUnplaced;
    const Idx* items = sec_items_.data() + sec_begin_[s];
    std::int32_t k = 0;
    for (const std::int32_t e = sec_unplaced_[s]; k < e; ++k) {
      const Offset m = min_off_[items[k]];
      if (m < lo) {
        lo = m;
        if (lo <= enough) break;
      }
    }
    steps_ += static_cast<std::uint64_t>(k) + 1;
    return lo;
  }
  // Item i leaves (placed) or rejoins (undo, in reverse order) the
  // unplaced part of each of its sections' lists.
  void leaveSections(Idx i) {
    std::int32_t slot = item_slot_begin_[i];
    for (std::int32_t k = span_begin_[i]; k < span_begin_[i + 1]; ++k)
      for (SectionIdx s = spans_[k].lo; s < spans_[k].hi; ++s, ++slot) {
        const std::int32_t pos = slot_[slot];
        const std::int32_t last = sec_begin_[s] + --sec_unplaced_[s];
        const Idx other = sec_items_[last];
        sec_items_[pos] = other;
        slot_[slot_of_[last]] = pos;
        slot_of_[pos] = slot_of_[last];
        sec_items_[last] = i;
        slot_[slot] = last;
        slot_of_[last] = slot;
      }
  }
  void rejoinSections(Idx i) {
    for (std::int32_t k = span_begin_[i]; k < span_begin_[i + 1]; ++k)
      for (SectionIdx s = spans_[k].lo; s < spans_[k].hi; ++s) ++sec_unplaced_[s];
  }
  // How many sections item i holds bytes in (its slots).
  std::uint64_t sectionsOf(Idx i) const {
    return static_cast<std::uint64_t>(item_slot_begin_[i + 1] - item_slot_begin_[i]);
  }

  // The static preorder key of item i for one key letter (larger first).
  double key(char c, Idx i) {
    switch (c) {
      case 'W': return static_cast<double>(end_[i] - start_[i]);
      case 'A': return static_cast<double>(size_[i]) * static_cast<double>(end_[i] - start_[i]);
      case 'T': {
        steps_ += sectionsOf(i);
        Bytes t = 0;
        for (std::int32_t k = span_begin_[i]; k < span_begin_[i + 1]; ++k)
          for (SectionIdx s = spans_[k].lo; s < spans_[k].hi; ++s) t = std::max(t, total_[s]);
        return static_cast<double>(t);
      }
      case 'Z': return static_cast<double>(size_[i]);
      case 'L': return static_cast<double>(start_[i]);
      case 'U': return static_cast<double>(end_[i]);
      case 'O': return static_cast<double>(adj_begin_[i + 1] - adj_begin_[i]);
      case 'C': return static_cast<double>(sr_[i] - sl_[i]);
      default: return 0;
    }
  }

  // Solves the items items_[ib..] in sections [ps, pe) from a fresh
  // canonical order (MiniMalloc's SubSolve).
  Status subSolve(SectionIdx ps, SectionIdx pe, std::size_t ib) {
    const std::size_t ie = items_.size();
    const std::size_t kb = keys_.size();
    const std::size_t nk = heuristic_.size();
    for (std::size_t k = ib; k < ie; ++k)
      for (char c : heuristic_) keys_.push_back(key(c, items_[k]));
    // Sort the items by their keys (larger first), then index.
    std::vector<std::size_t>& perm = perm_scratch_;
    perm.resize(ie - ib);
    std::iota(perm.begin(), perm.end(), 0);
    if (p_.static_preordering)
      std::sort(perm.begin(), perm.end(), [&](std::size_t a, std::size_t b) {
        for (std::size_t c = 0; c < nk; ++c) {
          const double ka = keys_[kb + a * nk + c], kb2 = keys_[kb + b * nk + c];
          if (ka != kb2) return ka > kb2;
        }
        return items_[ib + a] < items_[ib + b];
      });
    steps_ += perm.size();
    const std::size_t eb = arena_.size();
    for (std::size_t r = 0; r < perm.size(); ++r)
      arena_.push_back({0, static_cast<Idx>(r), items_[ib + perm[r]]});
    keys_.resize(kb);
    const std::size_t ee = arena_.size();
    const Status st = search(ps, pe, eb, ee, 0, 0);
    arena_.resize(eb);
    return st;
  }

  // Depth-first search over canonical placements; [eb, ee) holds the
  // parent's order (placed items are skipped).
  Status search(SectionIdx ps, SectionIdx pe, std::size_t eb, std::size_t ee, Offset min_offset,
                Idx min_pre) {
    if (nodes_left_ == 0 || timed_out_ || steps_ >= step_end_) return Status::kAborted;
    --nodes_left_;
    ++nodes_;
    if ((nodes_ & 1023) == 0 && ((deadline_ && Clock::now() >= *deadline_) ||
                                 (stop_ && stop_->load(std::memory_order_relaxed)))) {
      timed_out_ = true;
      return Status::kAborted;
    }
    // This node's order: unplaced items by (lowest offset, preorder).
    const std::size_t ob = arena_.size();
    Offset min_height = kUnplaced;
    for (std::size_t k = eb; k < ee; ++k) {
      const Idx i = arena_[k].item;
      if (off_[i] != kUnplaced) continue;
      arena_.push_back({min_off_[i], arena_[k].pre, i});
      min_height = std::min(min_height, min_off_[i] + size_[i]);
    }
    const std::size_t oe = arena_.size();
    steps_ += 1 + (ee - eb);
    if (ob == oe) return Status::kFound;
    if (p_.dynamic_ordering)  // nearly sorted already (offsets only grow)
      for (std::size_t k = ob + 1; k < oe; ++k) {
        const Entry e = arena_[k];
        std::size_t j = k;
        while (j > ob && (arena_[j - 1].offset > e.offset ||
                          (arena_[j - 1].offset == e.offset && arena_[j - 1].pre > e.pre))) {
          arena_[j] = arena_[j - 1];
          --j;
          ++steps_;
        }
        arena_[j] = e;
      }
    // Every later item sits at or above the chosen offset, so each section
    // must hold its unplaced bytes above it.
    Bytes max_total = 0;
    const bool offset_cut = p_.canonical_only && p_.monotonic_floor && p_.section_inference;
    if (offset_cut) max_total = static_cast<Bytes>(tree_.max(ps, pe));
    Status result = Status::kNotFound;
    for (std::size_t k = ob; k < oe; ++k) {
      const Entry e = arena_[k];
      const Idx i = e.item;
      if (p_.canonical_only &&
          (e.offset < min_offset || (e.offset == min_offset && e.pre < min_pre)))
        continue;
      if (p_.check_dominance && e.offset >= min_height) {
        if (p_.dynamic_ordering) break;  // sorted: every later one too
        continue;
      }
      if (offset_cut && e.offset + max_total > capacity_) {
        if (p_.dynamic_ordering) break;
        continue;
      }
      if (pin_[i] != kUnplaced && e.offset != pin_[i]) continue;
      if (prev_same_[i] != kNoItem && off_[prev_same_[i]] == kUnplaced) continue;
      if (e.offset + size_[i] > capacity_) continue;
      const std::size_t mark = trail_.size();
      bool hatless = true;
      Status st = Status::kNotFound;
      if (place(i, e.offset, hatless) && check(ps, pe, e.offset)) {
        st = p_.dynamic_decomposition ? decompose(ps, pe, ob, oe, i, e)
                                      : search(ps, pe, ob, oe, e.offset, e.pre);
      }
      undo(i, mark);
      if (st != Status::kNotFound) {
        result = st;
        break;
      }
      if (hatless && p_.hatless_pruning) break;
    }
    arena_.resize(ob);
    return result;
  }

  // After placing i: solves the parts that no unplaced item joins any more
  // independently (MiniMalloc's DynamicallyDecompose).
  Status decompose(SectionIdx ps, SectionIdx pe, std::size_t ob, std::size_t oe, Idx i,
                   const Entry& e) {
    const std::size_t cb = cut_points_.size();
    steps_ += 2 * static_cast<std::uint64_t>(sr_[i] - sl_[i]);
    for (SectionIdx s = sl_[i]; s + 1 < sr_[i]; ++s)
      if (--cuts_[s] == 0 && s + 1 > ps && s + 1 < pe) cut_points_.push_back(s + 1);
    Status st;
    if (cut_points_.size() == cb) {
      st = search(ps, pe, ob, oe, e.offset, e.pre);
    } else {
      std::vector<SectionIdx> cuts(cut_points_.begin() + static_cast<std::ptrdiff_t>(cb),
                                   cut_points_.end());
      cut_points_.resize(cb);
      std::sort(cuts.begin(), cuts.end());
      cuts.push_back(pe);
      st = Status::kFound;
      SectionIdx from = ps;
      for (SectionIdx to : cuts) {
        const std::size_t ib = items_.size();
        steps_ += oe - ob;
        for (std::size_t k = ob; k < oe; ++k) {
          const Idx o = arena_[k].item;
          if (off_[o] == kUnplaced && sr_[o] > from && sl_[o] < to) items_.push_back(o);
        }
        if (items_.size() > ib) st = subSolve(from, to, ib);
        items_.resize(ib);
        if (st != Status::kFound) break;
        from = to;
      }
    }
    cut_points_.resize(cb);
    for (SectionIdx s = sl_[i]; s + 1 < sr_[i]; ++s) ++cuts_[s];
    return st;
  }

  // Places item i at x: updates sections and the lowest offsets of the
  // items sharing time with it. False when that already proves the partial
  // placement infeasible (an item pushed past its pin or past C).
  // `hatless`: no unplaced item shares time with i.
  bool place(Idx i, Offset x, bool& hatless) {
    off_[i] = x;
    sol_[i] = x;
    leaveSections(i);
    ++stamp_;
    affected_.clear();
    // Sections left, totals and floors, neighbours (undo reads them again).
    steps_ += 3 * sectionsOf(i) + static_cast<std::uint64_t>(adj_begin_[i + 1] - adj_begin_[i]);
    bool ok = true;
    Offset max_raised = 0;
    for (std::int32_t k = span_begin_[i]; k < span_begin_[i + 1]; ++k) {
      const Span& sp = spans_[k];
      const Offset top = x + sp.whi;
      const Bytes w = sp.whi - sp.wlo;
      tree_.add(static_cast<std::size_t>(sp.lo), static_cast<std::size_t>(sp.hi),
                -static_cast<std::int64_t>(w));
      for (SectionIdx s = sp.lo; s < sp.hi; ++s) {
        total_[s] -= w;
        if (floor_[s] < top) {
          trail_.push_back({s, true, floor_[s]});
          floor_[s] = top;
        }
        if (sec_stamp_[s] != stamp_) {
          sec_stamp_[s] = stamp_;
          affected_.push_back(s);
        }
      }
    }
    for (std::int32_t k = adj_begin_[i]; k < adj_begin_[i + 1]; ++k) {
      const Idx o = adj_[k].other;
      if (off_[o] != kUnplaced) continue;
      hatless = false;
      const Offset want = x + adj_[k].above;
      if (min_off_[o] >= want) continue;
      const Offset raised = pin_[o] != kUnplaced ? want : fit(o, want);
      trail_.push_back({o, false, min_off_[o]});
      min_off_[o] = raised;
      if (pin_[o] != kUnplaced && raised > pin_[o]) ok = false;
      if (raised == kUnplaced || raised + size_[o] > capacity_) {
        if (p_.capacity_inference) ok = false;
        continue;
      }
      if (!p_.unallocated_floor) continue;
      max_raised = std::max(max_raised, raised);
      for (std::int32_t q = span_begin_[o]; q < span_begin_[o + 1]; ++q)
        raised_spans_.push_back({spans_[q].lo, spans_[q].hi});
    }
    // The sections of the raised items, each once: a section's floor can
    // only rise (to at most the highest raise) where it is below that, and
    // only prune where that leaves too little room above it.
    if (!raised_spans_.empty()) {
      std::sort(raised_spans_.begin(), raised_spans_.end());
      steps_ += raised_spans_.size();
      const Bytes room = capacity_ - std::min(capacity_, max_raised);
      SectionIdx next = 0;
      for (const auto& [lo, hi] : raised_spans_) {
        steps_ += static_cast<std::uint64_t>(std::max(0, hi - std::max(lo, next)));
        for (SectionIdx s = std::max(lo, next); s < hi; ++s)
          if (total_[s] > room && floor_[s] < max_raised && sec_stamp_[s] != stamp_) {
            sec_stamp_[s] = stamp_;
            affected_.push_back(s);
            unalloc_.push_back(s);
          }
        next = std::max(next, hi);
      }
      raised_spans_.clear();
    }
    // A section's floor is at least the lowest offset its unplaced items
    // can still take.
    for (SectionIdx s : unalloc_) {
      const Offset lo = lowestIn(s, floor_[s]);
      if (lo != kUnplaced && floor_[s] < lo) {
        trail_.push_back({s, true, floor_[s]});
        floor_[s] = lo;
      }
    }
    unalloc_.clear();
    return ok;
  }

  void undo(Idx i, std::size_t mark) {
    steps_ += trail_.size() - mark;
    while (trail_.size() > mark) {
      const Change& c = trail_.back();
      if (c.is_floor)
        floor_[c.idx] = c.old;
      else
        min_off_[c.idx] = c.old;
      trail_.pop_back();
    }
    for (std::int32_t k = span_begin_[i]; k < span_begin_[i + 1]; ++k) {
      const Span& sp = spans_[k];
      tree_.add(static_cast<std::size_t>(sp.lo), static_cast<std::size_t>(sp.hi),
                static_cast<std::int64_t>(sp.whi - sp.wlo));
      for (SectionIdx s = sp.lo; s < sp.hi; ++s) total_[s] += sp.whi - sp.wlo;
    }
    rejoinSections(i);
    off_[i] = kUnplaced;
  }

  // The sections whose floor rose must still hold their unplaced bytes
  // (the others passed at the parent, and the offset cut covers them).
  bool check(SectionIdx ps, SectionIdx pe, Offset x) const {
    if (!p_.section_inference) return true;
    const bool monotonic = p_.canonical_only && p_.monotonic_floor;
    if (p_.canonical_only && p_.monotonic_floor) {
      for (SectionIdx s : affected_)
        if (std::max(floor_[s], x) + total_[s] > capacity_) return false;
      return true;
    }
    for (SectionIdx s = ps; s < pe; ++s) {
      const Offset f = monotonic ? std::max(floor_[s], x) : floor_[s];
      if (f + total_[s] > capacity_) return false;
    }
    return true;
  }

  const ExactParams& p_;
  const Offset base_;
  bool complete_ = true;      // a kNotFound is a proof
  bool pins_collide_ = false;
  // Merged buffers.
  std::vector<Offset> fixed_offsets_;  // buffers without bytes: where they go
  std::vector<Idx> item_of_;
  // Items (static).
  std::vector<std::size_t> buffer_;    // item -> merged buffer
  std::vector<Bytes> size_, align_;
  std::vector<Offset> pin_;            // kUnplaced = not pinned
  std::vector<TimeValue> start_, end_;
  std::vector<SectionIdx> sl_, sr_;    // hull in sections
  std::vector<std::int32_t> span_begin_;
  std::vector<Span> spans_;
  std::vector<std::int32_t> adj_begin_;
  std::vector<Adj> adj_;
  std::vector<std::int32_t> obs_begin_;
  std::vector<Obstacle> obs_;
  std::vector<Idx> prev_same_;
  SectionIdx num_sections_ = 0;
  std::vector<std::int32_t> sec_begin_;
  std::vector<Idx> sec_items_;           // per section: unplaced items first
  std::vector<std::int32_t> sec_unplaced_;
  std::vector<std::int32_t> item_slot_begin_, slot_, slot_of_;
  std::vector<Bytes> total0_;
  std::vector<std::int32_t> cuts0_;
  // Search state.
  Bytes capacity_ = 0;
  std::string heuristic_;
  std::vector<Offset> off_, min_off_, sol_;
  std::vector<Bytes> total_;
  MaxTree tree_;  // total_ again, for range queries
  std::vector<Offset> floor_;
  std::vector<std::int32_t> cuts_;
  std::vector<std::uint64_t> sec_stamp_;
  std::uint64_t stamp_ = 0;
  std::vector<SectionIdx> affected_, unalloc_, cut_points_;
  std::vector<std::pair<SectionIdx, SectionIdx>> raised_spans_;
  std::vector<Change> trail_;
  std::vector<Entry> arena_;
  std::vector<Idx> items_;
  std::vector<double> keys_;
  std::vector<std::size_t> perm_scratch_;
  std::uint64_t nodes_ = 0, nodes_left_ = 0;
  std::uint64_t steps_ = 0, step_limit_ = ~std::uint64_t{0};
  std::uint64_t step_end_ = ~std::uint64_t{0};  // of the current decision
  const Clock::time_point* deadline_ = nullptr;
  const std::atomic<bool>* stop_ = nullptr;
  bool timed_out_ = false;
};

// Greatest common divisor of every size, alignment, pin and the prefix:
// all reachable heights are multiples of it.
Bytes granularity(const PoolProblem& p) {
  Bytes g = p.reserved;
  for (const Buffer& b : p.buffers) {
    if (b.size == 0) continue;
    g = std::gcd(g, b.size);
    if (b.alignment > 1) g = std::gcd(g, b.alignment);
    if (b.fixed_offset) g = std::gcd(g, *b.fixed_offset);
    for (const Gap& gap : b.gaps)
      if (gap.window) g = std::gcd(g, std::gcd(gap.window->first, gap.window->second));
  }
  return std::max<Bytes>(1, g);
}

std::optional<Clock::time_point> deadlineOf(const ExactParams& p) {
  if (p.time_limit_seconds <= 0) return std::nullopt;
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(p.time_limit_seconds));
}

ExactResult minimizeMerged(const PoolProblem& mp, std::vector<Offset> best, Bytes lower_bound,
                           const ExactParams& params);

// Large pools: re-solve only the window_threshold buffers nearest in time
// to the highest buffers; the buffers alive beside them keep their
// incumbent offsets (pinned), the rest are left alone.
ExactResult windowSearch(const PoolProblem& mp, const std::vector<Offset>& incumbent,
                         Bytes lower_bound, const ExactParams& params) {
  const std::size_t n = mp.buffers.size();
  ExactResult out;
  out.offsets = incumbent;
  out.height = heightOf(mp, incumbent);
  out.found = true;
  // The peak: the lifetime hull of every buffer reaching the top (ties
  // included, or the window could not lower the height at all).
  const Bytes top = out.height;
  TimeValue ps = 0, pe = 0;
  bool any = false;
  for (std::size_t b = 0; b < n; ++b) {
    const Buffer& buf = mp.buffers[b];
    if (buf.size == 0 || incumbent[b] + buf.size != top) continue;
    ps = any ? std::min(ps, buf.start) : buf.start;
    pe = any ? std::max(pe, buf.end) : buf.end;
    any = true;
  }
  if (!any) return out;
  auto distance = [&](const Buffer& b) -> TimeValue {
    if (b.start < pe && ps < b.end) return 0;
    return b.end <= ps ? ps - b.end + 1 : b.start - pe + 1;
  };
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  const std::size_t keep = std::min(n, std::max<std::size_t>(1, params.window_threshold));
  std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep - 1),
                   order.end(), [&](std::size_t a, std::size_t b) {
                     const TimeValue da = distance(mp.buffers[a]), db = distance(mp.buffers[b]);
                     if (da != db) return da < db;
                     // Among equals, the highest first: they set the height.
                     const Bytes ta = incumbent[a] + mp.buffers[a].size;
                     const Bytes tb = incumbent[b] + mp.buffers[b].size;
                     return ta != tb ? ta > tb : a < b;
                   });
  std::vector<char> in_window(n, 0);
  TimeValue lo_t = ps, hi_t = pe;
  for (std::size_t k = 0; k < keep; ++k) {
    in_window[order[k]] = 1;
    lo_t = std::min(lo_t, mp.buffers[order[k]].start);
    hi_t = std::max(hi_t, mp.buffers[order[k]].end);
  }
  PoolProblem sub;
  sub.mem_id = mp.mem_id;
  sub.reserved = mp.reserved;
  std::vector<std::size_t> origin;
  std::vector<Offset> sub_incumbent;
  for (std::size_t b = 0; b < n; ++b) {
    const Buffer& buf = mp.buffers[b];
    const bool beside = !in_window[b] && buf.start < hi_t && lo_t < buf.end;
    if (!in_window[b] && !beside) continue;
    Buffer copy = buf;
    copy.id = static_cast<BufferId>(sub.buffers.size());
    copy.inplace_base = kNone;
    if (beside) copy.fixed_offset = incumbent[b];
    sub.buffers.push_back(std::move(copy));
    origin.push_back(b);
    sub_incumbent.push_back(incumbent[b]);
  }
  // Too many pinned neighbours make every step slow and leave little room
  // to gain: keep the incumbent.
  if (sub.buffers.size() > 2 * keep) return out;
  ExactParams inner = params;
  inner.window_threshold = std::numeric_limits<std::size_t>::max();
  const ExactResult r = minimizeMerged(sub, sub_incumbent, lower_bound, inner);
  for (std::size_t k = 0; k < origin.size(); ++k) out.offsets[origin[k]] = r.offsets[k];
  out.height = heightOf(mp, out.offsets);
  out.nodes = r.nodes;
  out.steps = r.steps;
  out.stopped = r.stopped;
  out.proven_optimal = r.proven_optimal && r.height <= lower_bound;
  return out;
}

ExactResult minimizeMerged(const PoolProblem& mp, std::vector<Offset> best, Bytes lower_bound,
                           const ExactParams& params) {
  if (mp.buffers.size() > params.window_threshold)
    return windowSearch(mp, best, lower_bound, params);
  ExactResult out;
  Bytes best_height = heightOf(mp, best);
  const Bytes g = granularity(mp);
  // Heights are multiples of g: round the bound up to one.
  Bytes lo = std::max(lower_bound, mp.reserved);
  for (const Buffer& b : mp.buffers)
    if (b.fixed_offset && b.size > 0) lo = std::max(lo, *b.fixed_offset + b.size);
  lo = (lo + g - 1) / g * g;
  Bytes proven = lo;      // no placement is lower
  std::uint64_t budget = params.node_limit;
  const auto deadline = deadlineOf(params);
  Searcher searcher(mp, params);
  const std::uint64_t items = mp.buffers.size();
  // A probe at `cap`: kFound lowers the incumbent, a proof raises lo.
  // A probe's share of the steps is its share of the nodes.
  const double steps_per_node =
      params.step_limit ? static_cast<double>(params.step_limit) /
                              static_cast<double>(std::max<std::uint64_t>(1, params.node_limit))
                        : 0;
  auto probe = [&](Bytes cap, std::uint64_t give) {
    const std::uint64_t before = searcher.nodes();
    const std::uint64_t nodes = std::max<std::uint64_t>(1, std::min(give, budget));
    const std::uint64_t steps =
        params.step_limit ? static_cast<std::uint64_t>(std::min(
                                1e18, std::max(1.0, steps_per_node * static_cast<double>(nodes))))
                          : ~std::uint64_t{0};
    const Status st = searcher.solve(cap, nodes, steps,
                                     deadline ? &*deadline : nullptr);
    budget -= std::min(budget, searcher.nodes() - before);
    if (searcher.outOfSteps()) budget = 0;  // every later probe would abort
    if (st == Status::kFound) {
      std::vector<Offset> offsets = searcher.offsets();
      const Bytes h = heightOf(mp, offsets);
      if (h < best_height) {
        best = std::move(offsets);
        best_height = h;
      }
    } else if (st == Status::kNotFound && searcher.complete()) {
      // Nothing fits at cap: nothing lower either.
      lo = std::max(lo, cap + g);
      proven = std::max(proven, lo);
    }
    return st;
  };
  auto timeUp = [&] {
    return (deadline && Clock::now() >= *deadline) ||
           (params.stop && params.stop->load(std::memory_order_relaxed));
  };
  // 1. The bound itself: most real pools and most of MiniMalloc's
  //    instances fit there.
  const double total = static_cast<double>(params.node_limit);
  auto share = [&](double f) { return static_cast<std::uint64_t>(std::max(1.0, f * total)); };
  if (lo < best_height && budget > 0 && !timeUp()) probe(lo, share(params.bound_probe_share));
  // 2. Descend from the incumbent in steps that double while probes
  //    succeed and halve when one runs out of nodes, down to one granule.
  const std::uint64_t small = std::max<std::uint64_t>(share(params.descent_probe_share), 50 * items);
  Bytes step = (best_height > lo ? best_height - lo : 0) / 2;
  while (best_height > lo + g && budget > 0 && !timeUp()) {
    const Bytes room = best_height - lo;
    step = std::min(std::max(step, g), room);
    const Bytes down = std::max(g, step / g * g);
    if (down <= g) break;
    const Status st = probe(best_height - std::min(down, room), small);
    if (st == Status::kFound)
      step = std::min<Bytes>(2 * step, (best_height > lo ? best_height - lo : 0) / 2);
    else if (st == Status::kNotFound && searcher.complete())
      step = (best_height > lo ? best_height - lo : 0) / 2;
    else
      step /= 2;
  }
  // 3. Sweep the capacities just below the incumbent, each with a small
  //    budget that doubles every round: near the optimum the search time
  //    jumps from capacity to capacity, so trying several beats hammering
  //    one. A success restarts the sweep below the new incumbent.
  const Bytes sweep_caps = std::max<std::size_t>(1, params.sweep_capacities);
  for (std::uint64_t give = std::max<std::uint64_t>(share(params.sweep_probe_share), 25 * items);
       best_height > lo && budget > 0 && !timeUp(); give *= 2) {
    bool improved = true;
    while (improved && best_height > lo && budget > 0 && !timeUp()) {
      improved = false;
      for (Bytes k = 1; k <= sweep_caps && best_height >= lo + k * g && budget > 0; ++k) {
        const Bytes cap = best_height - k * g;
        const Status st = probe(cap, give);
        if (st == Status::kFound) {
          improved = true;
          break;
        }
        if (st == Status::kNotFound && searcher.complete()) break;  // lo rose past cap
      }
    }
  }
  out.offsets = std::move(best);
  out.height = best_height;
  out.found = true;
  out.stopped = best_height > lo && budget > 0 && timeUp();
  out.nodes = searcher.nodes();
  out.steps = searcher.steps();
  out.proven_bound = std::min(proven, best_height);
  out.proven_optimal = best_height <= proven;
  return out;
}

// The search recurses once per placed item (search -> decompose ->
// search), so its depth grows with the pool: thousands of levels, more
// than a default 8 MiB stack holds under AddressSanitizer. It runs on a
// thread of its own with a large stack; the pages are only reserved until
// touched. Same result on any thread: the search is deterministic.
constexpr std::size_t kSearchStackBytes = std::size_t{512} << 20;

ExactResult solveWithinCapacityHere(const PoolProblem& problem, Bytes capacity,
                                    const ExactParams& params);
ExactResult minimizeHeightHere(const PoolProblem& problem, const std::vector<Offset>& incumbent,
                               Bytes lower_bound, const ExactParams& params);

template <typename F>
ExactResult onLargeStack(F&& f) {
  struct Job {
    F* f;
    ExactResult result;
    std::exception_ptr error;
  } job{&f, {}, nullptr};
  const auto run = [](void* arg) -> void* {
    Job& j = *static_cast<Job*>(arg);
    try {
      j.result = (*j.f)();
    } catch (...) {
      j.error = std::current_exception();
    }
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kSearchStackBytes);
  pthread_t thread;
  const int rc = pthread_create(&thread, &attr, run, &job);
  pthread_attr_destroy(&attr);
  if (rc != 0) return f();  // no thread to be had: the caller's stack
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
  return std::move(job.result);
}

}  // namespace

ExactResult solveWithinCapacity(const PoolProblem& problem, Bytes capacity,
                                const ExactParams& params) {
  return onLargeStack([&] { return solveWithinCapacityHere(problem, capacity, params); });
}

ExactResult minimizeHeight(const PoolProblem& problem, const std::vector<Offset>& incumbent,
                           Bytes lower_bound, const ExactParams& params) {
  return onLargeStack([&] { return minimizeHeightHere(problem, incumbent, lower_bound, params); });
}

namespace {

ExactResult solveWithinCapacityHere(const PoolProblem& problem, Bytes capacity,
                                    const ExactParams& params) {
  const pool::MergedProblem merged = pool::mergeInplace(problem);
  Searcher searcher(merged.problem, params);
  const auto deadline = deadlineOf(params);
  const Status st = searcher.solve(capacity, params.node_limit, ~std::uint64_t{0},
                                   deadline ? &*deadline : nullptr);
  ExactResult r;
  r.nodes = searcher.nodes();
  r.steps = searcher.steps();
  if (st == Status::kFound) {
    r.offsets = pool::expandOffsets(merged, searcher.offsets());
    r.height = heightOf(problem, r.offsets);
    r.found = true;
  } else if (st == Status::kNotFound && searcher.complete() && merged.exact) {
    r.proven_infeasible = true;
    r.proven_bound = capacity + 1;
  }
  return r;
}

ExactResult minimizeHeightHere(const PoolProblem& problem, const std::vector<Offset>& incumbent,
                               Bytes lower_bound, const ExactParams& params) {
  const pool::MergedProblem merged = pool::mergeInplace(problem);
  std::vector<Offset> best(merged.problem.buffers.size(), 0);
  for (std::size_t g = 0; g < merged.members.size(); ++g)
    best[g] = incumbent.at(merged.members[g].front());
  ExactResult r = minimizeMerged(merged.problem, std::move(best), lower_bound, params);
  r.offsets = pool::expandOffsets(merged, r.offsets);
  r.height = heightOf(problem, r.offsets);
  if (!merged.exact) {
    r.proven_bound = 0;
    r.proven_optimal = r.height <= lower_bound;
  }
  return r;
}

}  // namespace
}  // namespace memplan::exact

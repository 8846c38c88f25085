// Exact search: see exact_search.h for the method.
#include "algorithms/exact_search.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>

#include "algorithms/pool_util.h"

namespace memplan::exact {
namespace {

using SectionIdx = std::int32_t;
using Idx = std::int32_t;  // index of a searched item
constexpr Offset kUnplaced = std::numeric_limits<Offset>::max();

enum class Status { kFound, kNotFound, kAborted };

// A buffer pinned by the caller: an obstacle the search steps over.
struct Obstacle {
  Offset lo = 0, hi = 0;  // bytes [lo, hi)
};

// One entry of the dynamic order: an unplaced item and its lowest offset.
struct OrderEntry {
  Offset offset;
  Idx pre;  // position in the static preorder
};

// Static preorders tried in turn by restarts: the keys compared (larger
// first) before the item index. Total = the largest section total the item
// lives in, Length = lifetime, Area = size x lifetime. Items that crowd the
// fullest times, or live long, constrain the rest most: place them first.
enum class Key { kTotal, kLength, kArea };
constexpr Key kPreorders[][3] = {
    {Key::kLength, Key::kArea, Key::kTotal},
    {Key::kTotal, Key::kArea, Key::kLength},
    {Key::kTotal, Key::kLength, Key::kArea},
};
constexpr int kNumPreorders = 3;

// The searched problem after merging in-place groups: items with a section
// range; pinned items become obstacles.
class Searcher {
 public:
  Searcher(const PoolProblem& merged, Bytes capacity, const ExactParams& params)
      : p_(params), capacity_(capacity), base_(merged.reserved) {
    const auto& bufs = merged.buffers;
    const std::size_t n = bufs.size();
    offsets_.assign(n, 0);
    // Times -> sections.
    std::vector<TimeValue> times;
    times.reserve(2 * n);
    for (const Buffer& b : bufs) {
      if (b.size == 0) continue;
      times.push_back(b.start);
      times.push_back(b.end);
    }
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    num_sections_ = times.empty() ? 0 : static_cast<SectionIdx>(times.size() - 1);
    auto sectionOf = [&](TimeValue t) {
      return static_cast<SectionIdx>(std::lower_bound(times.begin(), times.end(), t) -
                                     times.begin());
    };
    // Pinned and empty buffers are placed now; the rest are searched.
    std::vector<std::size_t> pinned;
    for (std::size_t b = 0; b < n; ++b) {
      const Buffer& buf = bufs[b];
      if (buf.size == 0) {
        offsets_[b] = buf.fixed_offset ? *buf.fixed_offset : alignUpSat(base_, buf.alignment);
        continue;
      }
      if (buf.fixed_offset) {
        offsets_[b] = *buf.fixed_offset;
        pinned.push_back(b);
        const Offset top = *buf.fixed_offset + buf.size;
        if (*buf.fixed_offset < base_ || top > capacity_ ||
            *buf.fixed_offset % std::max<Bytes>(1, buf.alignment) != 0)
          trivially_infeasible_ = true;
        continue;
      }
      Idx i = static_cast<Idx>(item_buffer_.size());
      item_buffer_.push_back(b);
      sl_.push_back(sectionOf(buf.start));
      sr_.push_back(sectionOf(buf.end));
      size_.push_back(buf.size);
      align_.push_back(std::max<Bytes>(1, buf.alignment));
      length_.push_back(buf.end - buf.start);
      area_.push_back(static_cast<double>(buf.size) *
                      static_cast<double>(buf.end - buf.start));
      (void)i;
    }
    // Two pins sharing bytes while alive together: nothing can help.
    for (std::size_t a = 0; a < pinned.size(); ++a)
      for (std::size_t c = a + 1; c < pinned.size(); ++c) {
        const Buffer& x = bufs[pinned[a]];
        const Buffer& y = bufs[pinned[c]];
        if (x.overlaps(y) && *x.fixed_offset < *y.fixed_offset + y.size &&
            *y.fixed_offset < *x.fixed_offset + x.size)
          trivially_infeasible_ = true;
      }
    const Idx m = static_cast<Idx>(item_buffer_.size());
    // Section membership (CSR) and initial totals.
    total_.assign(num_sections_, 0);
    std::vector<std::int32_t> count(num_sections_ + 1, 0);
    for (Idx i = 0; i < m; ++i)
      for (SectionIdx s = sl_[i]; s < sr_[i]; ++s) {
        total_[s] += size_[i];
        ++count[s + 1];
      }
    for (SectionIdx s = 0; s < num_sections_; ++s) count[s + 1] += count[s];
    sec_begin_ = count;
    sec_items_.resize(count[num_sections_]);
    {
      std::vector<std::int32_t> fill(count.begin(), count.end() - 1);
      for (Idx i = 0; i < m; ++i)
        for (SectionIdx s = sl_[i]; s < sr_[i]; ++s) sec_items_[fill[s]++] = i;
    }
    // Overlaps between items (sweep over sections: two items overlap iff
    // their section ranges intersect).
    std::vector<std::vector<Idx>> ov(m);
    {
      std::vector<Idx> by_start(m);
      std::iota(by_start.begin(), by_start.end(), 0);
      std::sort(by_start.begin(), by_start.end(),
                [&](Idx a, Idx b) { return sl_[a] != sl_[b] ? sl_[a] < sl_[b] : a < b; });
      std::vector<Idx> active;
      for (Idx i : by_start) {
        std::erase_if(active, [&](Idx a) { return sr_[a] <= sl_[i]; });
        for (Idx a : active) {
          ov[a].push_back(i);
          ov[i].push_back(a);
        }
        active.push_back(i);
      }
    }
    ov_begin_.assign(m + 1, 0);
    for (Idx i = 0; i < m; ++i) ov_begin_[i + 1] = ov_begin_[i] + ov[i].size();
    ov_.reserve(ov_begin_[m]);
    for (Idx i = 0; i < m; ++i) ov_.insert(ov_.end(), ov[i].begin(), ov[i].end());
    // Obstacles each item must step over.
    obs_begin_.assign(m + 1, 0);
    for (Idx i = 0; i < m; ++i) {
      const Buffer& bi = bufs[item_buffer_[i]];
      for (std::size_t f : pinned)
        if (bi.overlaps(bufs[f]))
          obs_.push_back({*bufs[f].fixed_offset, *bufs[f].fixed_offset + bufs[f].size});
      std::sort(obs_.begin() + static_cast<std::ptrdiff_t>(obs_begin_[i]), obs_.end(),
                [](const Obstacle& a, const Obstacle& b) { return a.lo < b.lo; });
      obs_begin_[i + 1] = obs_.size();
    }
    // Per-item static data for preorders.
    max_total_.assign(m, 0);
    for (Idx i = 0; i < m; ++i)
      for (SectionIdx s = sl_[i]; s < sr_[i]; ++s)
        max_total_[i] = std::max(max_total_[i], total_[s]);
    // Cuts: items spanning the boundary between sections s and s + 1.
    cuts_.assign(num_sections_, 0);
    for (Idx i = 0; i < m; ++i)
      for (SectionIdx s = sl_[i]; s + 1 < sr_[i]; ++s) ++cuts_[s];
    // Search state.
    off_.assign(m, kUnplaced);
    min_off_.resize(m);
    for (Idx i = 0; i < m; ++i) min_off_[i] = fit(i, base_);
    floor_.assign(num_sections_, base_);
    sec_stamp_.assign(num_sections_, 0);
    pre_item_.resize(m);
    item_pre_.resize(m);
    arena_.reserve(static_cast<std::size_t>(m) * 8 + 16);
    trail_.reserve(static_cast<std::size_t>(m) * 8 + 16);
    if (p_.time_limit_seconds > 0) {
      deadline_ = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(p_.time_limit_seconds));
      timed_ = true;
    }
  }

  // Runs the search (restarts included). kFound fills offsets().
  Status run() {
    if (trivially_infeasible_) return Status::kNotFound;
    const Idx m = static_cast<Idx>(size_.size());
    for (Idx i = 0; i < m; ++i)
      if (min_off_[i] == kUnplaced || min_off_[i] + size_[i] > capacity_)
        return Status::kNotFound;
    for (SectionIdx s = 0; s < num_sections_; ++s)
      if (base_ + total_[s] > capacity_) return Status::kNotFound;
    std::uint64_t budget = p_.node_limit;
    if (!p_.restarts) return attempt(0, 0, budget);
    std::uint64_t limit = p_.restart_first_limit > 0
                              ? p_.restart_first_limit
                              : 2 * std::max<std::uint64_t>(1, size_.size());
    for (std::uint64_t round = 0;; ++round) {
      // Each round: the plain preorders (a deeper look at the same tree),
      // then jittered ones (new trees) when jitter is on.
      const int per_round = round > 0 && p_.restart_jitter > 0 ? 2 * kNumPreorders : kNumPreorders;
      for (int a = 0; a < per_round; ++a) {
        const int h = a % kNumPreorders;
        const std::uint64_t give = std::min(limit, budget);
        if (give == 0) return Status::kAborted;
        const std::uint64_t before = nodes_;
        const Status st = attempt(h, a < kNumPreorders ? 0 : round, give);
        budget -= std::min(budget, nodes_ - before);
        if (st != Status::kAborted || timed_out_) return st;
      }
      const double grow = std::max(1.0, p_.restart_growth);
      limit = limit > (std::numeric_limits<std::uint64_t>::max() >> 2) ? limit : static_cast<std::uint64_t>(static_cast<double>(limit) * grow) + 1;
    }
  }

  // Offsets for every merged buffer (valid after kFound).
  std::vector<Offset> offsets() const {
    std::vector<Offset> out = offsets_;
    for (std::size_t i = 0; i < item_buffer_.size(); ++i) out[item_buffer_[i]] = sol_[i];
    return out;
  }
  std::uint64_t nodes() const { return nodes_; }

 private:
  static Offset alignUpSat(Offset v, Bytes a) {
    auto r = alignUp(v, a);
    return r ? *r : kUnplaced;
  }

  // Lowest aligned offset >= from where item i clears every obstacle
  // (obstacles sorted by lo: one pass, x only moves up).
  Offset fit(Idx i, Offset from) const {
    Offset x = alignUpSat(from, align_[i]);
    for (std::size_t k = obs_begin_[i]; k < obs_begin_[i + 1] && x != kUnplaced; ++k) {
      const Obstacle& o = obs_[k];
      if (o.lo >= x + size_[i]) break;
      if (x < o.hi) x = alignUpSat(o.hi, align_[i]);
    }
    return x;
  }

  // Round 0 uses the plain keys; later rounds scale every key by a
  // deterministic pseudo-random factor in [1 - j/2, 1 + j/2] (j =
  // restart_jitter) so a restart explores different tie-breaks.
  void buildPreorder(int h, std::uint64_t round) {
    const Idx m = static_cast<Idx>(size_.size());
    std::iota(pre_item_.begin(), pre_item_.end(), 0);
    auto noise = [&](Idx i, int k) {
      if (round == 0 || p_.restart_jitter <= 0) return 1.0;
      std::uint64_t z = round * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(i) * 0xbf58476d1ce4e5b9ULL +
                        static_cast<std::uint64_t>(h * 3 + k) * 0x94d049bb133111ebULL;
      z ^= z >> 31;
      z *= 0xd6e8feb86659fd93ULL;
      z ^= z >> 32;
      const double u = static_cast<double>(z >> 11) / static_cast<double>(1ULL << 53);
      return 1.0 + p_.restart_jitter * (u - 0.5);
    };
    auto key = [&](Key k, Idx i) -> double {
      switch (k) {
        case Key::kTotal: return static_cast<double>(max_total_[i]) * noise(i, 0);
        case Key::kLength: return static_cast<double>(length_[i]) * noise(i, 1);
        case Key::kArea: return area_[i] * noise(i, 2);
      }
      return 0;
    };
    std::sort(pre_item_.begin(), pre_item_.end(), [&](Idx a, Idx b) {
      for (Key k : kPreorders[h]) {
        const double ka = key(k, a), kb = key(k, b);
        if (ka != kb) return ka > kb;
      }
      return a < b;
    });
    for (Idx k = 0; k < m; ++k) item_pre_[pre_item_[k]] = k;
  }

  Status attempt(int h, std::uint64_t round, std::uint64_t limit) {
    buildPreorder(h, round);
    nodes_left_ = limit;
    sol_.assign(size_.size(), 0);
    arena_.clear();
    const Idx m = static_cast<Idx>(size_.size());
    for (Idx k = 0; k < m; ++k) arena_.push_back({0, k});
    if (m == 0) return Status::kFound;
    return split(0, num_sections_, 0, arena_.size(), /*placed=*/-1);
  }

  // Solves the unplaced items of entries [eb, ee) in sections [ps, pe),
  // cut into independent parts where no unplaced item spans a boundary.
  // `placed` is the item just placed (its boundaries may have become cuts),
  // or -1 at the root, where every zero-cut boundary counts.
  Status split(SectionIdx ps, SectionIdx pe, std::size_t eb, std::size_t ee, Idx placed) {
    std::size_t mark = cut_points_.size();
    if (p_.decompose) {
      const SectionIdx lo = placed < 0 ? ps : sl_[placed];
      const SectionIdx hi = placed < 0 ? pe : sr_[placed];
      for (SectionIdx s = lo; s + 1 < hi; ++s)
        if (cuts_[s] == 0) cut_points_.push_back(s + 1);
    }
    if (cut_points_.size() == mark) return search(ps, pe, eb, ee, 0, 0);
    std::vector<SectionIdx> cuts(cut_points_.begin() + mark, cut_points_.end());
    cut_points_.resize(mark);
    cuts.push_back(pe);
    SectionIdx from = ps;
    Status result = Status::kFound;
    for (SectionIdx to : cuts) {
      // Entries of this part, in static preorder.
      const std::size_t sb = arena_.size();
      for (std::size_t k = eb; k < ee; ++k) {
        const Idx i = pre_item_[arena_[k].pre];
        if (off_[i] == kUnplaced && sl_[i] >= from && sr_[i] <= to) arena_.push_back({0, arena_[k].pre});
      }
      const std::size_t se = arena_.size();
      Status st = Status::kFound;
      if (se > sb) {
        std::sort(arena_.begin() + sb, arena_.begin() + se,
                  [](const OrderEntry& a, const OrderEntry& b) { return a.pre < b.pre; });
        st = search(from, to, sb, se, 0, 0);
      }
      arena_.resize(sb);
      if (st != Status::kFound) {
        result = st;
        break;
      }
      from = to;
    }
    return result;
  }

  bool outOfTime() {
    if (!timed_ || (nodes_ & 1023) != 0) return false;
    if (std::chrono::steady_clock::now() >= deadline_) timed_out_ = true;
    return timed_out_;
  }

  // Depth-first search over canonical placements. [eb, ee) holds the
  // parent's order (placed items are skipped).
  Status search(SectionIdx ps, SectionIdx pe, std::size_t eb, std::size_t ee,
                Offset last_offset, Idx last_pre) {
    if (nodes_left_ == 0 || timed_out_) return Status::kAborted;
    --nodes_left_;
    ++nodes_;
    if (outOfTime()) return Status::kAborted;
    // This node's order: unplaced items by (lowest offset, preorder).
    const std::size_t ob = arena_.size();
    Offset min_height = kUnplaced;
    for (std::size_t k = eb; k < ee; ++k) {
      const Idx pre = arena_[k].pre;
      const Idx i = pre_item_[pre];
      if (off_[i] != kUnplaced) continue;
      arena_.push_back({min_off_[i], pre});
      min_height = std::min(min_height, min_off_[i] + size_[i]);
    }
    const std::size_t oe = arena_.size();
    if (ob == oe) return Status::kFound;
    // Nearly sorted already (offsets only grow): insertion sort.
    for (std::size_t k = ob + 1; k < oe; ++k) {
      const OrderEntry e = arena_[k];
      std::size_t j = k;
      while (j > ob && (arena_[j - 1].offset > e.offset ||
                        (arena_[j - 1].offset == e.offset && arena_[j - 1].pre > e.pre))) {
        arena_[j] = arena_[j - 1];
        --j;
      }
      arena_[j] = e;
    }
    // Every later item sits at >= the chosen offset, so a section holding
    // max_total unplaced bytes needs offset + max_total <= capacity.
    Bytes max_total = 0;
    for (SectionIdx s = ps; s < pe; ++s) max_total = std::max(max_total, total_[s]);
    Status result = Status::kNotFound;
    for (std::size_t k = ob; k < oe; ++k) {
      const OrderEntry e = arena_[k];
      const Idx i = pre_item_[e.pre];
      if (p_.canonical_order &&
          (e.offset < last_offset || (e.offset == last_offset && e.pre < last_pre)))
        continue;
      // A gap an unplaced item could fill entirely is never needed.
      if (p_.dominance && e.offset >= min_height) break;  // sorted: all later too
      if (p_.canonical_order && p_.section_inference && e.offset + max_total > capacity_) break;
      if (e.offset + size_[i] > capacity_) continue;
      const std::size_t mark = trail_.size();
      const bool hatless = place(i, e.offset);
      Status st = Status::kNotFound;
      if (check(ps, pe, e.offset)) {
        if (p_.decompose) {
          bool any_cut = false;
          for (SectionIdx s = sl_[i]; s + 1 < sr_[i]; ++s)
            if (--cuts_[s] == 0) any_cut = true;
          st = any_cut ? splitAfter(ps, pe, ob, oe, i)
                       : search(ps, pe, ob, oe, e.offset, e.pre);
          for (SectionIdx s = sl_[i]; s + 1 < sr_[i]; ++s) ++cuts_[s];
        } else {
          st = search(ps, pe, ob, oe, e.offset, e.pre);
        }
      }
      undo(i, mark);
      if (st != Status::kNotFound) {
        result = st;
        break;
      }
      // Nothing can ever sit on this item and it failed at its lowest
      // offset: placing it later cannot do better.
      if (hatless && p_.dominance) break;
    }
    arena_.resize(ob);
    return result;
  }

  Status splitAfter(SectionIdx ps, SectionIdx pe, std::size_t ob, std::size_t oe, Idx placed) {
    return split(ps, pe, ob, oe, placed);
  }

  // Places item i at x; returns true when no unplaced item overlaps it.
  bool place(Idx i, Offset x) {
    off_[i] = x;
    sol_[i] = x;
    const Offset top = x + size_[i];
    bool hatless = true;
    ++stamp_;
    affected_.clear();
    for (SectionIdx s = sl_[i]; s < sr_[i]; ++s) {
      total_[s] -= size_[i];
      sec_stamp_[s] = stamp_;  // floor = top is exact enough here
      if (floor_[s] < top) {
        trail_.push_back({true, s, floor_[s]});
        floor_[s] = top;
      }
    }
    for (std::size_t k = ov_begin_[i]; k < ov_begin_[i + 1]; ++k) {
      const Idx o = ov_[k];
      if (off_[o] != kUnplaced) continue;
      hatless = false;
      if (min_off_[o] >= top) continue;
      trail_.push_back({false, o, min_off_[o]});
      const Offset raised = fit(o, top);
      min_off_[o] = raised;
      if (!p_.unallocated_floor) continue;
      // Recomputing a section's floor can only prune when o, if it were
      // the lowest there, would leave too little room above it.
      if (raised > capacity_) continue;  // fails its own test anyway
      const Bytes room = capacity_ - raised;
      const Bytes* total = total_.data();
      std::uint32_t* stamp = sec_stamp_.data();
      for (SectionIdx s = sl_[o], e = sr_[o]; s < e; ++s)
        if (total[s] > room && stamp[s] != stamp_) {
          stamp[s] = stamp_;
          affected_.push_back(s);
        }
    }
    // A section's floor is at least the lowest offset any of its unplaced
    // items can still take.
    const Offset* off = off_.data();
    const Offset* min_off = min_off_.data();
    const Idx* items = sec_items_.data();
    for (SectionIdx s : affected_) {
      Offset lo = kUnplaced;
      for (std::int32_t k = sec_begin_[s], e = sec_begin_[s + 1]; k < e; ++k) {
        const Idx o = items[k];
        if (off[o] == kUnplaced) lo = std::min(lo, min_off[o]);
      }
      if (lo != kUnplaced && floor_[s] < lo) {
        trail_.push_back({true, s, floor_[s]});
        floor_[s] = lo;
      }
    }
    return hatless;
  }

  void undo(Idx i, std::size_t mark) {
    while (trail_.size() > mark) {
      const Change& c = trail_.back();
      if (c.is_floor)
        floor_[c.idx] = c.old;
      else
        min_off_[c.idx] = c.old;
      trail_.pop_back();
    }
    for (SectionIdx s = sl_[i]; s < sr_[i]; ++s) total_[s] += size_[i];
    off_[i] = kUnplaced;
  }

  // Every section of the part must hold its unplaced bytes above its floor
  // (and above the current offset: later items never go lower). The parent
  // passed this test and the caller's max_total cut covers the sections of
  // the item just placed, so only sections whose floor rose can fail now.
  bool check(SectionIdx ps, SectionIdx pe, Offset x) const {
    if (p_.canonical_order && p_.section_inference) {
      for (SectionIdx s : affected_)
        if (std::max(floor_[s], x) + total_[s] > capacity_) return false;
      return true;
    }
    for (SectionIdx s = ps; s < pe; ++s) {
      Offset f = floor_[s];
      if (p_.canonical_order && total_[s] > 0) f = std::max(f, x);
      if (p_.section_inference) f += total_[s];
      if (f > capacity_) return false;
    }
    return true;
  }

  struct Change {
    bool is_floor;
    std::int32_t idx;
    Offset old;
  };

  const ExactParams& p_;
  const Bytes capacity_;
  const Offset base_;
  bool trivially_infeasible_ = false;
  SectionIdx num_sections_ = 0;
  std::vector<Offset> offsets_;           // merged buffers not searched
  std::vector<std::size_t> item_buffer_;  // item -> merged buffer
  std::vector<SectionIdx> sl_, sr_;
  std::vector<Bytes> size_, align_, max_total_;
  std::vector<double> area_;
  std::vector<TimeValue> length_;
  std::vector<std::int32_t> sec_begin_;
  std::vector<Idx> sec_items_;
  std::vector<std::size_t> ov_begin_;
  std::vector<Idx> ov_;
  std::vector<std::size_t> obs_begin_;
  std::vector<Obstacle> obs_;
  std::vector<std::int32_t> cuts_;
  // State.
  std::vector<Offset> off_, min_off_, sol_;
  std::vector<Bytes> total_;
  std::vector<Offset> floor_;
  std::vector<std::uint32_t> sec_stamp_;
  std::uint32_t stamp_ = 0;
  std::vector<SectionIdx> affected_;
  std::vector<Change> trail_;
  std::vector<OrderEntry> arena_;
  std::vector<SectionIdx> cut_points_;
  std::vector<Idx> pre_item_, item_pre_;
  std::uint64_t nodes_ = 0, nodes_left_ = 0;
  bool timed_ = false, timed_out_ = false;
  std::chrono::steady_clock::time_point deadline_{};
};

// True when merging in-place groups lost nothing: every group's members
// have one size and their lifetimes cover the group's hull without holes.
bool mergeIsExact(const PoolProblem& problem, const pool::MergedProblem& merged) {
  for (const auto& members : merged.members) {
    if (members.size() < 2) continue;
    std::vector<std::pair<TimeValue, TimeValue>> spans;
    for (BufferId b : members) {
      const Buffer& buf = problem.buffers[b];
      if (buf.size != problem.buffers[members[0]].size) return false;
      spans.push_back({buf.start, buf.end});
    }
    std::sort(spans.begin(), spans.end());
    TimeValue reach = spans[0].second;
    for (const auto& [s, e] : spans) {
      if (s > reach) return false;
      reach = std::max(reach, e);
    }
  }
  return true;
}

Bytes heightOf(const PoolProblem& problem, const std::vector<Offset>& offsets) {
  Bytes h = 0;
  for (std::size_t b = 0; b < problem.buffers.size(); ++b)
    if (problem.buffers[b].size > 0) h = std::max(h, offsets[b] + problem.buffers[b].size);
  return h;
}

// Solve on an already merged problem.
ExactResult solveMerged(const PoolProblem& merged, Bytes capacity, const ExactParams& params,
                        bool exact_merge) {
  ExactResult r;
  Searcher s(merged, capacity, params);
  const Status st = s.run();
  r.nodes = s.nodes();
  if (st == Status::kFound) {
    r.offsets = s.offsets();
    r.height = heightOf(merged, r.offsets);
    r.found = true;
  } else if (st == Status::kNotFound) {
    r.proven_infeasible = exact_merge;
  }
  return r;
}

// Greatest common divisor of every size, alignment, pin and the prefix:
// all reachable heights are multiples of it.
Bytes granularity(const PoolProblem& p) {
  Bytes g = p.reserved;
  for (const Buffer& b : p.buffers) {
    if (b.size == 0) continue;
    g = std::gcd(g, b.size);
    if (b.alignment > 1) g = std::gcd(g, b.alignment);
    if (b.fixed_offset) g = std::gcd(g, *b.fixed_offset);
  }
  return std::max<Bytes>(1, g);
}

// Large pools: re-solve only the window_threshold buffers nearest in time
// to the highest buffer; the buffers alive beside them keep their incumbent
// offsets (pinned), the rest are left alone.
ExactResult windowSearch(const PoolProblem& mp, const std::vector<Offset>& incumbent,
                         Bytes lower_bound, const ExactParams& params) {
  const std::size_t n = mp.buffers.size();
  // The peak: the lifetime hull of every buffer reaching the top (ties
  // included, or the window could not lower the height at all).
  const Bytes top = heightOf(mp, incumbent);
  Buffer pb;
  bool any = false;
  for (std::size_t b = 0; b < n; ++b) {
    const Buffer& buf = mp.buffers[b];
    if (buf.size == 0 || incumbent[b] + buf.size != top) continue;
    pb.start = any ? std::min(pb.start, buf.start) : buf.start;
    pb.end = any ? std::max(pb.end, buf.end) : buf.end;
    any = true;
  }
  auto distance = [&](const Buffer& b) -> TimeValue {
    if (b.overlaps(pb)) return 0;
    return b.end <= pb.start ? pb.start - b.end + 1 : b.start - pb.end + 1;
  };
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  const std::size_t keep = std::max<std::size_t>(1, params.window_threshold);
  std::nth_element(order.begin(), order.begin() + (keep - 1), order.end(),
                   [&](std::size_t a, std::size_t b) {
                     const TimeValue da = distance(mp.buffers[a]), db = distance(mp.buffers[b]);
                     if (da != db) return da < db;
                     // Among equals, the highest first: they set the height.
                     const Bytes ta = incumbent[a] + mp.buffers[a].size;
                     const Bytes tb = incumbent[b] + mp.buffers[b].size;
                     return ta != tb ? ta > tb : a < b;
                   });
  std::vector<char> in_window(n, 0);
  TimeValue lo_t = pb.start, hi_t = pb.end;
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
  if (sub.buffers.size() > 2 * keep) {
    ExactResult out;
    out.offsets = incumbent;
    out.height = heightOf(mp, incumbent);
    out.found = true;
    return out;
  }
  ExactParams inner = params;
  inner.window_threshold = std::numeric_limits<std::size_t>::max();
  const ExactResult r = minimizeHeight(sub, sub_incumbent, lower_bound, inner);
  ExactResult out;
  out.offsets = incumbent;
  for (std::size_t k = 0; k < origin.size(); ++k) out.offsets[origin[k]] = r.offsets[k];
  out.height = heightOf(mp, out.offsets);
  out.found = true;
  out.nodes = r.nodes;
  return out;
}

}  // namespace

ExactResult solveWithinCapacity(const PoolProblem& problem, Bytes capacity,
                                const ExactParams& params) {
  const pool::MergedProblem merged = pool::mergeInplace(problem);
  ExactResult r = solveMerged(merged.problem, capacity, params, mergeIsExact(problem, merged));
  if (r.found) {
    r.offsets = pool::expandOffsets(merged, r.offsets);
    r.height = heightOf(problem, r.offsets);
  }
  return r;
}

ExactResult minimizeHeight(const PoolProblem& problem, const std::vector<Offset>& incumbent,
                           Bytes lower_bound, const ExactParams& params) {
  const pool::MergedProblem merged = pool::mergeInplace(problem);
  const bool exact_merge = mergeIsExact(problem, merged);
  const PoolProblem& mp = merged.problem;
  // The incumbent in merged form (members share one offset).
  std::vector<Offset> best(mp.buffers.size(), 0);
  for (std::size_t g = 0; g < merged.members.size(); ++g)
    best[g] = incumbent.at(merged.members[g].front());
  Bytes best_height = heightOf(mp, best);
  if (mp.buffers.size() > params.window_threshold) {
    ExactResult out = windowSearch(mp, best, lower_bound, params);
    out.offsets = pool::expandOffsets(merged, out.offsets);
    out.height = heightOf(problem, out.offsets);
    out.proven_optimal = out.height <= std::max(lower_bound, mp.reserved);
    return out;
  }
  const Bytes g = granularity(mp);
  // Heights are multiples of g: round the bound up to one.
  Bytes lo = std::max(lower_bound, mp.reserved);
  for (const Buffer& b : mp.buffers)
    if (b.fixed_offset) lo = std::max(lo, *b.fixed_offset + b.size);
  lo = (lo + g - 1) / g * g;
  ExactResult out;
  std::uint64_t budget = params.node_limit;
  bool lo_proven = true;  // every height below lo is proven impossible
  ExactParams probe = params;
  const auto start = std::chrono::steady_clock::now();
  bool first = true;
  while (lo < best_height && budget > 0) {
    if (params.time_limit_seconds > 0) {
      const double spent =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (spent >= params.time_limit_seconds) break;
      probe.time_limit_seconds = params.time_limit_seconds - spent;
    }
    // First probe at the bound (usually reachable); then bisect.
    Bytes cap = lo;
    if (!first) cap = lo + ((best_height - g - lo) / g / 2) * g;
    first = false;
    // Half the budget for the bound itself, then a third of what is left
    // per probe: an undecided probe must not starve the bisection.
    probe.node_limit = cap == lo && lo_proven ? std::max<std::uint64_t>(budget / 2, 1)
                                              : std::max<std::uint64_t>(budget / 3, std::min<std::uint64_t>(budget, 20000));
    ExactResult r = solveMerged(mp, cap, probe, exact_merge);
    out.nodes += r.nodes;
    budget -= std::min(budget, r.nodes);
    if (r.found && r.height < best_height) {
      best = r.offsets;
      best_height = r.height;
    } else if (r.proven_infeasible) {
      lo = cap + g;
    } else {
      // Undecided: look higher, but the range below is not proven empty.
      lo_proven = false;
      lo = cap + g;
    }
  }
  out.offsets = pool::expandOffsets(merged, best);
  out.height = heightOf(problem, out.offsets);
  out.found = true;
  out.proven_optimal = lo_proven && best_height <= lo;
  if (best_height <= std::max(lower_bound, mp.reserved)) out.proven_optimal = true;
  return out;
}

}  // namespace memplan::exact

// Exact search: see exact_search.h for the techniques.
#include "algorithms/exact_search.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>
#include <numeric>
#include <optional>

#include "algorithms/exact_layout.h"
#include "algorithms/pool_util.h"

namespace memplan::exact {
namespace {

// The structures are drawn at the top of exact_search.h; the fixed ones
// are in exact_layout.h.
using Clock = std::chrono::steady_clock;

enum class Status { kFound, kNotFound, kAborted };

// Where an item stands in the current partial placement.
struct ItemState {
  Offset offset = kUnplaced;  // kUnplaced while unplaced
  Offset lowest = 0;          // the lowest offset it can still take
};

// What a section holds in the current partial placement.
struct SectionState {
  Bytes unplaced_bytes = 0;  // window bytes of its unplaced items
  Offset floor = 0;          // no unplaced item of it goes below this
  // Its first `unplaced` entries in its list (PartialPlacement::section_items)
  // are its unplaced items.
  std::int32_t unplaced = 0;
  std::uint64_t stamp = 0;   // == the placement's stamp: touched by this placement
};

// One undoable change (MiniMalloc's OffsetChange): a section's floor or an
// item's lowest offset, and the value it had.
struct TrailEntry {
  std::int32_t index;  // a SectionIdx or an ItemIdx
  bool is_floor;       // else an item's lowest offset
  Offset old_value;
};

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

// The partial placement at one capacity (the picture in exact_search.h),
// and the placing and taking back of one item; the search reads the state,
// only reset(), place() and undo() change it.
class PartialPlacement {
 public:
  PartialPlacement(const ExactParams& params, Offset base, SearchLayout& layout, std::uint64_t& steps)
      : params_(params), base_(base), layout_(layout), steps_(steps) {
    section_items = std::move(layout.section_items);
    slot_position = std::move(layout.slot_position);
    slot_at_position = std::move(layout.slot_at_position);
    const std::size_t m = layout.items.size();
    item_state.assign(m, ItemState{kUnplaced, 0});
    solution.assign(m, 0);
    section_state.assign(layout.num_sections, SectionState{});
  }

  // Nothing placed at capacity `at`. False when some item or section
  // cannot fit even so.
  bool reset(Bytes at) {
    capacity = at;
    const ItemIdx m = static_cast<ItemIdx>(layout_.items.size());
    for (ItemState& s : item_state) s.offset = kUnplaced;
    for (ItemIdx i = 0; i < m; ++i) {
      const Item& item = layout_.items[i];
      Offset& lowest = item_state[i].lowest;
      lowest = item.pin != kUnplaced ? item.pin : fit(i, base_);
      if (lowest == kUnplaced || lowest + item.size > capacity) return false;
      if (item.pin != kUnplaced && (item.pin < base_ || item.pin % item.alignment != 0)) return false;
    }
    steps_ += static_cast<std::uint64_t>(m) + static_cast<std::uint64_t>(layout_.num_sections);
    unplaced_bytes_tree.reset(layout_.section_bytes);
    for (SectionIdx s = 0; s < layout_.num_sections; ++s) {
      SectionState& sec = section_state[s];
      sec.unplaced_bytes = layout_.section_bytes[s];
      sec.unplaced = layout_.section_begin[s + 1] - layout_.section_begin[s];
      sec.floor = base_;
    }
    spanning = layout_.spanning_at_start;
    if (params_.unallocated_floor)
      for (SectionIdx s = 0; s < layout_.num_sections; ++s) {
        const Offset lo = lowestIn(s);
        if (lo != kUnplaced) section_state[s].floor = std::max(section_state[s].floor, lo);
      }
    for (SectionIdx s = 0; s < layout_.num_sections; ++s)
      if (params_.section_inference && section_state[s].floor + section_state[s].unplaced_bytes > capacity)
        return false;
    trail.clear();
    return true;
  }

  // Lowest aligned offset >= from where item i clears every pinned item
  // (obstacles sorted by lo: one pass, x only moves up).
  Offset fit(ItemIdx i, Offset from) const {
    const Item& item = layout_.items[i];
    Offset x = alignUpSat(from, item.alignment);
    for (std::int32_t k = item.obstacles.begin; k < item.obstacles.end && x != kUnplaced; ++k) {
      const PinObstacle& o = layout_.obstacles[k];
      if (o.lo >= x + item.size) break;
      if (x < o.hi) x = alignUpSat(o.hi, item.alignment);
    }
    return x;
  }

  // The lowest offset an unplaced item of section s can take; stops early
  // (returning it) once one is at or below `enough`. A section's list
  // keeps its unplaced items first.
  Offset lowestIn(SectionIdx s, Offset enough = 0) {
    Offset lo = kUnplaced;
    const ItemIdx* items = section_items.data() + layout_.section_begin[s];
    std::int32_t k = 0;
    for (const std::int32_t e = section_state[s].unplaced; k < e; ++k) {
      const Offset m = item_state[items[k]].lowest;
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
  void leaveSections(ItemIdx i) {
    const Item& item = layout_.items[i];
    std::int32_t slot = item.slots.begin;
    for (std::int32_t k = item.spans.begin; k < item.spans.end; ++k)
      for (SectionIdx s = layout_.spans[k].first_section; s < layout_.spans[k].end_section; ++s, ++slot) {
        const std::int32_t pos = slot_position[slot];
        const std::int32_t last = layout_.section_begin[s] + --section_state[s].unplaced;
        const ItemIdx other = section_items[last];
        section_items[pos] = other;
        slot_position[slot_at_position[last]] = pos;
        slot_at_position[pos] = slot_at_position[last];
        section_items[last] = i;
        slot_position[slot] = last;
        slot_at_position[last] = slot;
      }
  }
  void rejoinSections(ItemIdx i) {
    const Item& item = layout_.items[i];
    for (std::int32_t k = item.spans.begin; k < item.spans.end; ++k)
      for (SectionIdx s = layout_.spans[k].first_section; s < layout_.spans[k].end_section; ++s)
        ++section_state[s].unplaced;
  }
  // How many sections item i holds bytes in (its slots).
  std::uint64_t sectionsOf(ItemIdx i) const {
    return static_cast<std::uint64_t>(layout_.items[i].slots.end - layout_.items[i].slots.begin);
  }
  std::uint64_t neighboursOf(ItemIdx i) const {
    return static_cast<std::uint64_t>(layout_.items[i].neighbours.end - layout_.items[i].neighbours.begin);
  }

  // Places item i at x: updates sections and the lowest offsets of the
  // items sharing time with it. False when that already proves the partial
  // placement infeasible (an item pushed past its pin or past C).
  // `hatless`: no unplaced item shares time with i.
  bool place(ItemIdx i, Offset x, bool& hatless) {
    item_state[i].offset = x;
    solution[i] = x;
    leaveSections(i);
    ++stamp_;
    touched_sections_.clear();
    // Sections left, totals and floors, neighbours (undo reads them again).
    steps_ += 3 * sectionsOf(i) + neighboursOf(i);
    takeBytesFromSections(i, x);
    Offset max_raised = 0;
    const bool ok = raiseNeighbours(i, x, hatless, max_raised);
    if (!raised_hulls_.empty()) markFloorsToRaise(max_raised);
    // A section's floor is at least the lowest offset its unplaced items
    // can still take.
    for (SectionIdx s : floors_to_raise_) {
      SectionState& sec = section_state[s];
      const Offset lo = lowestIn(s, sec.floor);
      if (lo != kUnplaced && sec.floor < lo) {
        trail.push_back({s, true, sec.floor});
        sec.floor = lo;
      }
    }
    floors_to_raise_.clear();
    return ok;
  }

  // Item i, placed at x, no longer counts in its sections' unplaced bytes
  // and raises their floors to its top.
  void takeBytesFromSections(ItemIdx i, Offset x) {
    const Item& item = layout_.items[i];
    for (std::int32_t k = item.spans.begin; k < item.spans.end; ++k) {
      const Span& sp = layout_.spans[k];
      const Offset top = x + sp.window_hi;
      const Bytes w = sp.window_hi - sp.window_lo;
      unplaced_bytes_tree.add(static_cast<std::size_t>(sp.first_section),
                               static_cast<std::size_t>(sp.end_section), -static_cast<std::int64_t>(w));
      for (SectionIdx s = sp.first_section; s < sp.end_section; ++s) {
        SectionState& sec = section_state[s];
        sec.unplaced_bytes -= w;
        if (sec.floor < top) {
          trail.push_back({s, true, sec.floor});
          sec.floor = top;
        }
        if (sec.stamp != stamp_) {
          sec.stamp = stamp_;
          touched_sections_.push_back(s);
        }
      }
    }
  }

  // Raises the lowest offsets of i's unplaced neighbours above i at x;
  // collects the hulls of those raised (for the floors) and the highest
  // raise. False when a neighbour is pushed past its pin or (with
  // capacity_inference) past C.
  bool raiseNeighbours(ItemIdx i, Offset x, bool& hatless, Offset& max_raised) {
    const Item& item = layout_.items[i];
    bool ok = true;
    for (std::int32_t k = item.neighbours.begin; k < item.neighbours.end; ++k) {
      const ItemIdx o = layout_.neighbours[k].item;
      const Item& other = layout_.items[o];
      ItemState& state = item_state[o];
      if (state.offset != kUnplaced) continue;
      hatless = false;
      const Offset want = x + layout_.neighbours[k].clearance;
      if (state.lowest >= want) continue;
      const Offset raised = other.pin != kUnplaced ? want : fit(o, want);
      trail.push_back({o, false, state.lowest});
      state.lowest = raised;
      if (other.pin != kUnplaced && raised > other.pin) ok = false;
      if (raised == kUnplaced || raised + other.size > capacity) {
        if (params_.capacity_inference) ok = false;
        continue;
      }
      if (!params_.unallocated_floor) continue;
      max_raised = std::max(max_raised, raised);
      for (std::int32_t q = other.spans.begin; q < other.spans.end; ++q)
        raised_hulls_.push_back({layout_.spans[q].first_section, layout_.spans[q].end_section});
    }
    return ok;
  }

  // The sections of the raised items, each once: a section's floor can
  // only rise (to at most the highest raise) where it is below that, and
  // only prune where that leaves too little room above it.
  void markFloorsToRaise(Offset max_raised) {
    std::sort(raised_hulls_.begin(), raised_hulls_.end());
    steps_ += raised_hulls_.size();
    const Bytes room = capacity - std::min(capacity, max_raised);
    SectionIdx next = 0;
    for (const auto& [lo, hi] : raised_hulls_) {
      steps_ += static_cast<std::uint64_t>(std::max(0, hi - std::max(lo, next)));
      for (SectionIdx s = std::max(lo, next); s < hi; ++s) {
        SectionState& sec = section_state[s];
        if (sec.unplaced_bytes > room && sec.floor < max_raised && sec.stamp != stamp_) {
          sec.stamp = stamp_;
          touched_sections_.push_back(s);
          floors_to_raise_.push_back(s);
        }
      }
      next = std::max(next, hi);
    }
    raised_hulls_.clear();
  }

  void undo(ItemIdx i, std::size_t mark) {
    steps_ += trail.size() - mark;
    while (trail.size() > mark) {
      const TrailEntry& c = trail.back();
      if (c.is_floor)
        section_state[c.index].floor = c.old_value;
      else
        item_state[c.index].lowest = c.old_value;
      trail.pop_back();
    }
    const Item& item = layout_.items[i];
    for (std::int32_t k = item.spans.begin; k < item.spans.end; ++k) {
      const Span& sp = layout_.spans[k];
      unplaced_bytes_tree.add(static_cast<std::size_t>(sp.first_section),
                               static_cast<std::size_t>(sp.end_section),
                               static_cast<std::int64_t>(sp.window_hi - sp.window_lo));
      for (SectionIdx s = sp.first_section; s < sp.end_section; ++s)
        section_state[s].unplaced_bytes += sp.window_hi - sp.window_lo;
    }
    rejoinSections(i);
    item_state[i].offset = kUnplaced;
  }

  // The sections whose floor rose must still hold their unplaced bytes
  // (the others passed at the parent, and the offset cut covers them).
  bool check(SectionIdx ps, SectionIdx pe, Offset x) const {
    if (!params_.section_inference) return true;
    const bool monotonic = params_.canonical_only && params_.monotonic_floor;
    if (monotonic) {
      for (SectionIdx s : touched_sections_)
        if (std::max(section_state[s].floor, x) + section_state[s].unplaced_bytes > capacity) return false;
      return true;
    }
    for (SectionIdx s = ps; s < pe; ++s)
      if (section_state[s].floor + section_state[s].unplaced_bytes > capacity) return false;
    return true;
  }

  Bytes capacity = 0;
  std::vector<ItemState> item_state;
  std::vector<Offset> solution;  // the offsets of the last placement found
  std::vector<SectionState> section_state;
  MaxTree unplaced_bytes_tree;   // SectionState::unplaced_bytes again, for range queries
  std::vector<std::int32_t> spanning;  // per boundary: unplaced items crossing it
  std::vector<TrailEntry> trail;       // changes to undo, newest last
  // The layout's section lists, reordered as items are placed: a section's
  // unplaced items first.
  std::vector<ItemIdx> section_items;
  std::vector<std::int32_t> slot_position, slot_at_position;

 private:
  const ExactParams& params_;
  const Offset base_;
  const SearchLayout& layout_;
  std::uint64_t& steps_;  // the search's step count
  std::uint64_t stamp_ = 0;
  // Scratch of one placement.
  std::vector<SectionIdx> touched_sections_, floors_to_raise_;
  std::vector<std::pair<SectionIdx, SectionIdx>> raised_hulls_;
};

// The decision search on one merged problem; reusable across capacities.
class Searcher {
 public:
  Searcher(const PoolProblem& merged, const ExactParams& params)
      : params_(params),
        layout_(buildSearchLayout(merged, params)),
        placement_(params, merged.reserved, layout_, budget_.steps) {
    budget_.stop = params.stop;
    const std::size_t m = layout_.items.size();
    rank_.assign(m, 0);
    budget_.step_limit = params_.step_limit ? params_.step_limit : ~std::uint64_t{0};
    budget_.steps =
        static_cast<std::uint64_t>(m) + placement_.section_items.size() + layout_.neighbours.size();
  }

  bool complete() const { return layout_.complete; }
  std::uint64_t nodes() const { return budget_.nodes; }
  std::uint64_t steps() const { return budget_.steps; }
  // The step limit has ended the search: no probe can go on.
  bool outOfSteps() const { return budget_.steps >= budget_.step_limit; }

  // Decision at capacity C within `budget` nodes and `steps` steps (and
  // the step limit and the deadline, if any). kNotFound is a proof only
  // when complete().
  Status solve(Bytes capacity, std::uint64_t budget, std::uint64_t steps,
               const Clock::time_point* deadline) {
    budget_.step_end =
        budget_.steps + std::min(steps, budget_.step_limit - std::min(budget_.step_limit, budget_.steps));
    budget_.deadline = deadline;
    budget_.timed_out = false;
    if (layout_.pins_collide) return Status::kNotFound;
    if (!placement_.reset(capacity)) return Status::kNotFound;
    candidates_.clear();
    part_items_.clear();
    const ItemIdx m = static_cast<ItemIdx>(layout_.items.size());
    // Root partitions: independent from the start where no item spans a
    // boundary.
    std::vector<SectionIdx> cuts = {0};
    if (params_.dynamic_decomposition)
      for (SectionIdx s = 0; s + 1 < layout_.num_sections; ++s)
        if (placement_.spanning[s] == 0) cuts.push_back(s + 1);
    cuts.push_back(layout_.num_sections);

    const std::size_t heuristics = params_.restarts ? std::max<std::size_t>(1, params_.preorders.size()) : 1;
    std::uint64_t limit = params_.restarts ? std::max<std::uint64_t>(1, m) : budget;
    for (;;) {
      if (params_.restarts) limit = limit > (~std::uint64_t{0} >> 2) ? limit : 2 * limit;
      for (std::size_t h = 0; h < heuristics; ++h) {
        if (budget == 0) return Status::kAborted;
        budget_.nodes_left = std::min(limit, budget);
        const std::uint64_t before = budget_.nodes;
        preorder_keys_ =
            params_.preorders.empty() ? std::string("WAT") : params_.preorders[h % params_.preorders.size()];
        Status st = Status::kFound;
        for (std::size_t c = 0; c + 1 < cuts.size() && st == Status::kFound; ++c) {
          const std::size_t ib = part_items_.size();
          budget_.steps += static_cast<std::uint64_t>(m);
          for (ItemIdx i = 0; i < m; ++i)
            if (layout_.items[i].first_section >= cuts[c] && layout_.items[i].end_section <= cuts[c + 1])
              part_items_.push_back(i);
          if (part_items_.size() > ib) st = subSolve(cuts[c], cuts[c + 1], ib);
          part_items_.resize(ib);
        }
        budget -= std::min(budget, budget_.nodes - before);
        if (st != Status::kAborted || budget_.timed_out || budget_.steps >= budget_.step_end) return st;
        if (!params_.restarts) return st;
      }
    }
  }

  // Offsets per merged buffer after kFound.
  std::vector<Offset> offsets() const {
    std::vector<Offset> out = layout_.bytesless_offsets;
    for (std::size_t i = 0; i < layout_.items.size(); ++i)
      out[layout_.items[i].buffer] = placement_.solution[i];
    return out;
  }

 private:
  // The static preorder key of item i for one key letter (larger first).
  double key(char c, ItemIdx i) {
    const Item& item = layout_.items[i];
    switch (c) {
      case 'W': return static_cast<double>(item.end - item.start);
      case 'A': return static_cast<double>(item.size) * static_cast<double>(item.end - item.start);
      case 'T': {
        budget_.steps += placement_.sectionsOf(i);
        Bytes t = 0;
        for (std::int32_t k = item.spans.begin; k < item.spans.end; ++k)
          for (SectionIdx s = layout_.spans[k].first_section; s < layout_.spans[k].end_section; ++s)
            t = std::max(t, placement_.section_state[s].unplaced_bytes);
        return static_cast<double>(t);
      }
      case 'Z': return static_cast<double>(item.size);
      case 'L': return static_cast<double>(item.start);
      case 'U': return static_cast<double>(item.end);
      case 'O': return static_cast<double>(placement_.neighboursOf(i));
      case 'C': return static_cast<double>(item.end_section - item.first_section);
      default: return 0;
    }
  }

  // Solves the items part_items_[ib..] in sections [ps, pe) from a fresh
  // canonical order (MiniMalloc's SubSolve).
  Status subSolve(SectionIdx ps, SectionIdx pe, std::size_t ib) {
    const std::size_t ie = part_items_.size();
    const std::size_t kb = keys_.size();
    const std::size_t nk = preorder_keys_.size();
    for (std::size_t k = ib; k < ie; ++k)
      for (char c : preorder_keys_) keys_.push_back(key(c, part_items_[k]));
    // Sort the items by their keys (larger first), then index.
    std::vector<std::size_t>& perm = preorder_scratch_;
    perm.resize(ie - ib);
    std::iota(perm.begin(), perm.end(), 0);
    if (params_.static_preordering)
      std::sort(perm.begin(), perm.end(), [&](std::size_t a, std::size_t b) {
        for (std::size_t c = 0; c < nk; ++c) {
          const double ka = keys_[kb + a * nk + c], kb2 = keys_[kb + b * nk + c];
          if (ka != kb2) return ka > kb2;
        }
        return part_items_[ib + a] < part_items_[ib + b];
      });
    budget_.steps += perm.size();
    const std::size_t eb = candidates_.size();
    for (std::size_t r = 0; r < perm.size(); ++r) {
      const ItemIdx i = part_items_[ib + perm[r]];
      candidates_.push_back(i);
      saved_ranks_.push_back(rank_[i]);
      rank_[i] = static_cast<ItemIdx>(r);
    }
    keys_.resize(kb);
    // The part's items now live in its order: the caller's list of them is
    // dropped before the search, so the stacks hold each part once.
    part_items_.resize(ib);
    const std::size_t ee = candidates_.size();
    const Status st = search(ps, pe, eb, ee, 0, 0);
    // The enclosing part's order reads its own ranks again.
    const std::size_t sb = saved_ranks_.size() - (ee - eb);
    for (std::size_t k = eb; k < ee; ++k) rank_[candidates_[k]] = saved_ranks_[sb + (k - eb)];
    saved_ranks_.resize(sb);
    candidates_.resize(eb);
    return st;
  }

  // Counts a node; false when the budget, the deadline or the stop flag
  // ends the search.
  bool enterNode() {
    if (budget_.nodes_left == 0 || budget_.timed_out || budget_.steps >= budget_.step_end) return false;
    --budget_.nodes_left;
    ++budget_.nodes;
    if ((budget_.nodes & 1023) == 0 &&
        ((budget_.deadline && Clock::now() >= *budget_.deadline) ||
         (budget_.stop && budget_.stop->load(std::memory_order_relaxed)))) {
      budget_.timed_out = true;
      return false;
    }
    return true;
  }

  // Appends this node's order to candidates_: the unplaced items of the
  // parent's order [eb, ee) by (lowest offset, preorder rank). Returns the
  // lowest top any of them can have. An entry is the item alone (a fifth of
  // the memory of a keyed one: a search thousands of levels deep keeps
  // every level's order); its key is read from the placement, which the
  // children restore before the node reads its next entry.
  Offset orderCandidates(std::size_t eb, std::size_t ee) {
    const std::size_t ob = candidates_.size();
    Offset min_height = kUnplaced;
    for (std::size_t k = eb; k < ee; ++k) {
      const ItemIdx i = candidates_[k];
      const ItemState& state = placement_.item_state[i];
      if (state.offset != kUnplaced) continue;
      candidates_.push_back(i);
      min_height = std::min(min_height, state.lowest + layout_.items[i].size);
    }
    const std::size_t oe = candidates_.size();
    budget_.steps += 1 + (ee - eb);
    if (params_.dynamic_ordering)  // nearly sorted already (offsets only grow)
      for (std::size_t k = ob + 1; k < oe; ++k) {
        const ItemIdx e = candidates_[k];
        const Offset offset = lowest(e);
        std::size_t j = k;
        while (j > ob && (lowest(candidates_[j - 1]) > offset ||
                          (lowest(candidates_[j - 1]) == offset && rank_[candidates_[j - 1]] > rank_[e]))) {
          candidates_[j] = candidates_[j - 1];
          --j;
          ++budget_.steps;
        }
        candidates_[j] = e;
      }
    return min_height;
  }
  Offset lowest(ItemIdx i) const { return placement_.item_state[i].lowest; }

  // Depth-first search over canonical placements; [eb, ee) holds the
  // parent's order (placed items are skipped).
  Status search(SectionIdx ps, SectionIdx pe, std::size_t eb, std::size_t ee, Offset min_offset,
                ItemIdx min_rank) {
    if (!enterNode()) return Status::kAborted;
    const std::size_t ob = candidates_.size();
    const Offset min_height = orderCandidates(eb, ee);
    const std::size_t oe = candidates_.size();
    if (ob == oe) return Status::kFound;
    // Every later item sits at or above the chosen offset, so each section
    // must hold its unplaced bytes above it.
    Bytes max_unplaced = 0;
    const bool offset_cut = params_.canonical_only && params_.monotonic_floor && params_.section_inference;
    if (offset_cut) max_unplaced = static_cast<Bytes>(placement_.unplaced_bytes_tree.max(ps, pe));
    Status result = Status::kNotFound;
    for (std::size_t k = ob; k < oe; ++k) {
      const ItemIdx i = candidates_[k];
      const Item& item = layout_.items[i];
      const Offset offset = lowest(i);
      const ItemIdx rank = rank_[i];
      if (params_.canonical_only && (offset < min_offset || (offset == min_offset && rank < min_rank)))
        continue;
      if (params_.check_dominance && offset >= min_height) {
        if (params_.dynamic_ordering) break;  // sorted: every later one too
        continue;
      }
      if (offset_cut && offset + max_unplaced > placement_.capacity) {
        if (params_.dynamic_ordering) break;
        continue;
      }
      if (item.pin != kUnplaced && offset != item.pin) continue;
      if (item.identical_before != kNoItem &&
          placement_.item_state[item.identical_before].offset == kUnplaced)
        continue;
      if (offset + item.size > placement_.capacity) continue;
      const std::size_t mark = placement_.trail.size();
      bool hatless = true;
      Status st = Status::kNotFound;
      if (placement_.place(i, offset, hatless) && placement_.check(ps, pe, offset)) {
        st = params_.dynamic_decomposition ? decompose(ps, pe, ob, oe, i, offset, rank)
                                           : search(ps, pe, ob, oe, offset, rank);
      }
      placement_.undo(i, mark);
      if (st != Status::kNotFound) {
        result = st;
        break;
      }
      if (hatless && params_.hatless_pruning) break;
    }
    candidates_.resize(ob);
    return result;
  }

  // After placing i: solves the parts that no unplaced item joins any more
  // independently (MiniMalloc's DynamicallyDecompose).
  Status decompose(SectionIdx ps, SectionIdx pe, std::size_t ob, std::size_t oe, ItemIdx i,
                   Offset offset, ItemIdx rank) {
    const Item& item = layout_.items[i];
    const std::size_t cb = new_cuts_.size();
    budget_.steps += 2 * static_cast<std::uint64_t>(item.end_section - item.first_section);
    for (SectionIdx s = item.first_section; s + 1 < item.end_section; ++s)
      if (--placement_.spanning[s] == 0 && s + 1 > ps && s + 1 < pe) new_cuts_.push_back(s + 1);
    Status st;
    if (new_cuts_.size() == cb) {
      st = search(ps, pe, ob, oe, offset, rank);
    } else {
      std::vector<SectionIdx> cuts(new_cuts_.begin() + static_cast<std::ptrdiff_t>(cb), new_cuts_.end());
      new_cuts_.resize(cb);
      std::sort(cuts.begin(), cuts.end());
      cuts.push_back(pe);
      st = Status::kFound;
      SectionIdx from = ps;
      for (SectionIdx to : cuts) {
        const std::size_t ib = part_items_.size();
        budget_.steps += oe - ob;
        for (std::size_t k = ob; k < oe; ++k) {
          const ItemIdx o = candidates_[k];
          if (placement_.item_state[o].offset == kUnplaced && layout_.items[o].end_section > from &&
              layout_.items[o].first_section < to)
            part_items_.push_back(o);
        }
        if (part_items_.size() > ib) st = subSolve(from, to, ib);
        part_items_.resize(ib);
        if (st != Status::kFound) break;
        from = to;
      }
    }
    new_cuts_.resize(cb);
    for (SectionIdx s = item.first_section; s + 1 < item.end_section; ++s) ++placement_.spanning[s];
    return st;
  }

  // What the search may spend, and has.
  struct Budget {
    std::uint64_t nodes = 0, nodes_left = 0;
    std::uint64_t steps = 0, step_limit = ~std::uint64_t{0};
    std::uint64_t step_end = ~std::uint64_t{0};  // of the current decision
    const Clock::time_point* deadline = nullptr;
    const std::atomic<bool>* stop = nullptr;
    bool timed_out = false;
  };

  const ExactParams& params_;
  Budget budget_;
  SearchLayout layout_;  // fixed for every capacity (but the lists PartialPlacement takes)
  PartialPlacement placement_;
  std::string preorder_keys_;  // this restart's key letters ("WAT")
  // Stacks of the recursion: every node's candidate order, every part's items.
  std::vector<ItemIdx> candidates_;
  std::vector<ItemIdx> part_items_;
  // Each item's rank in its part's static preorder; the ranks a nested
  // part overwrote, restored when it returns.
  std::vector<ItemIdx> rank_, saved_ranks_;
  // Scratch of one decomposition or one preorder.
  std::vector<SectionIdx> new_cuts_;
  std::vector<double> keys_;
  std::vector<std::size_t> preorder_scratch_;
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

// minimizeHeight's probes on one merged pool (see exact_search.h): each
// probe either lowers the incumbent or raises the proven bound.
class HeightMinimizer {
 public:
  HeightMinimizer(const PoolProblem& mp, std::vector<Offset> best, Bytes lower_bound,
                  const ExactParams& params)
      : mp_(mp),
        params_(params),
        best_(std::move(best)),
        best_height_(heightOf(mp, best_)),
        g_(granularity(mp)),
        budget_(params.node_limit),
        deadline_(deadlineOf(params)),
        searcher_(mp, params),
        items_(mp.buffers.size()),
        // A probe's share of the steps is its share of the nodes.
        steps_per_node_(params.step_limit
                            ? static_cast<double>(params.step_limit) /
                                  static_cast<double>(std::max<std::uint64_t>(1, params.node_limit))
                            : 0) {
    // Heights are multiples of g: round the bound up to one.
    lo_ = std::max(lower_bound, mp.reserved);
    for (const Buffer& b : mp.buffers)
      if (b.fixed_offset && b.size > 0) lo_ = std::max(lo_, *b.fixed_offset + b.size);
    lo_ = (lo_ + g_ - 1) / g_ * g_;
    proven_ = lo_;
  }

  ExactResult run() {
    probeTheBound();
    descend();
    sweepBelowIncumbent();
    return result();
  }

  // Step 1 alone (the whole of a pool larger than the window).
  ExactResult runBoundProbe() {
    probeTheBound();
    return result();
  }

 private:
  ExactResult result() {
    ExactResult out;
    out.offsets = std::move(best_);
    out.height = best_height_;
    out.found = true;
    out.stopped = best_height_ > lo_ && budget_ > 0 && timeUp();
    out.nodes = searcher_.nodes();
    out.steps = searcher_.steps();
    out.proven_bound = std::min(proven_, best_height_);
    out.proven_optimal = best_height_ <= proven_;
    return out;
  }

  // A probe at `cap` with `give` nodes: kFound lowers the incumbent, a
  // proof raises lo_.
  Status probe(Bytes cap, std::uint64_t give) {
    const std::uint64_t before = searcher_.nodes();
    const std::uint64_t nodes = std::max<std::uint64_t>(1, std::min(give, budget_));
    const std::uint64_t steps =
        params_.step_limit ? static_cast<std::uint64_t>(std::min(
                                 1e18, std::max(1.0, steps_per_node_ * static_cast<double>(nodes))))
                           : ~std::uint64_t{0};
    const Status st = searcher_.solve(cap, nodes, steps, deadline_ ? &*deadline_ : nullptr);
    budget_ -= std::min(budget_, searcher_.nodes() - before);
    if (searcher_.outOfSteps()) budget_ = 0;  // every later probe would abort
    if (st == Status::kFound) {
      std::vector<Offset> offsets = searcher_.offsets();
      const Bytes h = heightOf(mp_, offsets);
      if (h < best_height_) {
        best_ = std::move(offsets);
        best_height_ = h;
      }
    } else if (st == Status::kNotFound && searcher_.complete()) {
      // Nothing fits at cap: nothing lower either.
      lo_ = std::max(lo_, cap + g_);
      proven_ = std::max(proven_, lo_);
    }
    return st;
  }
  bool timeUp() const {
    return (deadline_ && Clock::now() >= *deadline_) ||
           (params_.stop && params_.stop->load(std::memory_order_relaxed));
  }
  // A share of the node limit, at least one node.
  std::uint64_t share(double f) const {
    return static_cast<std::uint64_t>(std::max(1.0, f * static_cast<double>(params_.node_limit)));
  }

  // 1. The bound itself: most real pools and most of MiniMalloc's
  //    instances fit there.
  void probeTheBound() {
    if (lo_ < best_height_ && budget_ > 0 && !timeUp()) probe(lo_, share(params_.bound_probe_share));
  }

  // 2. Descend from the incumbent in steps that double while probes
  //    succeed and halve when one runs out of nodes, down to one granule.
  void descend() {
    const std::uint64_t small = std::max<std::uint64_t>(share(params_.descent_probe_share), 50 * items_);
    Bytes step = (best_height_ > lo_ ? best_height_ - lo_ : 0) / 2;
    while (best_height_ > lo_ + g_ && budget_ > 0 && !timeUp()) {
      const Bytes room = best_height_ - lo_;
      step = std::min(std::max(step, g_), room);
      const Bytes down = std::max(g_, step / g_ * g_);
      if (down <= g_) break;
      const Status st = probe(best_height_ - std::min(down, room), small);
      if (st == Status::kFound)
        step = std::min<Bytes>(2 * step, (best_height_ > lo_ ? best_height_ - lo_ : 0) / 2);
      else if (st == Status::kNotFound && searcher_.complete())
        step = (best_height_ > lo_ ? best_height_ - lo_ : 0) / 2;
      else
        step /= 2;
    }
  }

  // 3. Sweep the capacities just below the incumbent, each with a small
  //    budget that doubles every round: near the optimum the search time
  //    jumps from capacity to capacity, so trying several beats hammering
  //    one. A success restarts the sweep below the new incumbent.
  void sweepBelowIncumbent() {
    const Bytes sweep_caps = std::max<std::size_t>(1, params_.sweep_capacities);
    for (std::uint64_t give = std::max<std::uint64_t>(share(params_.sweep_probe_share), 25 * items_);
         best_height_ > lo_ && budget_ > 0 && !timeUp(); give *= 2) {
      bool improved = true;
      while (improved && best_height_ > lo_ && budget_ > 0 && !timeUp()) {
        improved = false;
        for (Bytes k = 1; k <= sweep_caps && best_height_ >= lo_ + k * g_ && budget_ > 0; ++k) {
          const Status st = probe(best_height_ - k * g_, give);
          if (st == Status::kFound) {
            improved = true;
            break;
          }
          if (st == Status::kNotFound && searcher_.complete()) break;  // lo rose past cap
        }
      }
    }
  }

  const PoolProblem& mp_;
  const ExactParams& params_;
  std::vector<Offset> best_;  // the incumbent
  Bytes best_height_;
  const Bytes g_;             // every height is a multiple of it
  Bytes lo_ = 0;              // no placement is lower (probes raise it)
  Bytes proven_ = 0;          // the highest bound proven
  std::uint64_t budget_;      // nodes left
  const std::optional<Clock::time_point> deadline_;
  Searcher searcher_;
  const std::uint64_t items_;
  const double steps_per_node_;
};

// How many pairs of buffers are alive together, counted up to `cap` (and
// returned as cap + 1 above it): a search of the whole pool holds each.
std::uint64_t overlappingPairs(const PoolProblem& mp, std::uint64_t cap) {
  std::vector<TimeValue> starts, ends;
  starts.reserve(mp.buffers.size());
  ends.reserve(mp.buffers.size());
  for (const Buffer& b : mp.buffers) {
    starts.push_back(b.start);
    ends.push_back(b.end);
  }
  std::sort(starts.begin(), starts.end());
  std::sort(ends.begin(), ends.end());
  // Twice the pairs: for each buffer, those starting before its end less
  // those ended by its start, less itself.
  std::uint64_t twice = 0;
  for (const Buffer& b : mp.buffers) {
    const auto began = std::lower_bound(starts.begin(), starts.end(), b.end) - starts.begin();
    const auto ended = std::upper_bound(ends.begin(), ends.end(), b.start) - ends.begin();
    twice += static_cast<std::uint64_t>(std::max<std::ptrdiff_t>(0, began - ended - 1));
    if (twice / 2 > cap) return cap + 1;
  }
  return twice / 2;
}

ExactResult minimizeMerged(const PoolProblem& mp, std::vector<Offset> best, Bytes lower_bound,
                           const ExactParams& params) {
  if (mp.buffers.size() <= params.window_threshold)
    return HeightMinimizer(mp, std::move(best), lower_bound, params).run();
  // At the bound already there is nothing to probe, and the whole pool's
  // search would hold every pair only to say so.
  if (heightOf(mp, best) <= lower_bound || mp.buffers.size() > params.whole_probe_max_buffers ||
      overlappingPairs(mp, params.whole_probe_max_pairs) > params.whole_probe_max_pairs)
    return windowSearch(mp, best, lower_bound, params);
  // The bound on the whole pool first: where it fits, a search that places
  // every buffer finds it at once; the window cannot (the other buffers
  // stay where the heuristics left them).
  ExactResult whole = HeightMinimizer(mp, best, lower_bound, params).runBoundProbe();
  if (whole.proven_optimal || whole.stopped) return whole;
  // The window gets what the probe left (a step limit of 0 means none).
  ExactParams rest = params;
  rest.node_limit -= std::min(rest.node_limit, whole.nodes);
  if (rest.step_limit)
    rest.step_limit = std::max<std::uint64_t>(1, rest.step_limit - std::min(rest.step_limit, whole.steps));
  ExactResult out = windowSearch(mp, whole.offsets, lower_bound, rest);
  out.nodes += whole.nodes;
  out.steps += whole.steps;
  out.proven_bound = std::max(out.proven_bound, whole.proven_bound);
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

ExactResult minimizeMergedHeight(const PoolProblem& merged, const std::vector<Offset>& incumbent,
                                 Bytes lower_bound, const ExactParams& params) {
  return onLargeStack([&] {
    ExactResult r = minimizeMerged(merged, incumbent, lower_bound, params);
    r.height = heightOf(merged, r.offsets);
    return r;
  });
}

namespace {

ExactResult solveWithinCapacityHere(const PoolProblem& problem, Bytes capacity,
                                    const ExactParams& params) {
  const pool::MergedProblem merged = pool::mergeInplace(problem);
  Searcher searcher(merged.pool(), params);
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
  ExactResult r = minimizeMerged(merged.pool(), pool::mergedOffsets(merged, incumbent), lower_bound, params);
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

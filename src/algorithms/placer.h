// The placement engine behind best_fit, first_fit, the local search, the
// hints and auto: places buffers one at a time, each in the best (or
// lowest) free gap over its lifetime among the buffers placed so far.
//
// How one buffer b is placed (choose):
//  1. Gather what b must stay clear of, as byte ranges ordered by offset.
//  2. Walk the free gaps between those ranges from the floor (reserved
//     prefix) up, each candidate offset rounded up to b's alignment (any
//     alignment >= 1).
//  3. Best fit takes the smallest gap b fits in (the lowest among equals);
//     first fit the lowest. With no gap, b goes on top of the highest range.
// Pinned buffers are placed at their pins. First fit on the run tree skips
// the merge: it searches the gathered lists where they are, lifting the
// candidate offset over each run that meets it (Tree::firstFit), with the
// same result and the same work charged.
//
// Step 1 has two indexes (PlacerParams::index):
//
// Run tree (pools without gaps). Time is compressed to the ranks of the
// distinct start/end values and cut into leaves of a few ranks; a segment
// tree stands over the leaves. A placed buffer is stored in each leaf its
// lifetime covers whole, as a byte range, and in the one or two leaves it
// only partly covers, as an entry with its lifetime. Buffers covering one
// leaf are all alive at once, so their ranges never overlap: a leaf keeps
// their union as sorted *runs* of touching ranges, not the buffers (a
// stack of 1,000 adjacent long-lived buffers is one run). Every node keeps
// the union of everything stored below it, as runs too, rebuilt lazily
// after a removal. b gathers the runs and the entries (those sharing time
// with it) of its first and last leaf, and the unions of the fewest nodes
// covering the leaves in between. So b reads runs (holes in the layout),
// not the buffers alive beside it: its cost grows with the fragmentation
// of the layout, not with how many buffers are live.
//
// For example, leaves of 2 ranks, three buffers placed, b about to be:
//
//   rank          0     2     4     6     8
//   leaf          | L0  | L1  | L2  | L3  |
//   x [0, 32)     [=======================)     covers L0..L3
//   y [32, 48)       [===========)              covers L1, partly L0 and L2
//   z [48, 80)              [=====)             covers L2
//   b                     [===========)         ranks 3..7: leaves L1..L3
//
//   covering_runs_   L0: [0,32)  L1: [0,48)  L2: [0,32) [48,80)  L3: [0,32)
//   partial_entries_ L0: y [32,48) ranks 1..5   L2: the same entry
//   unions_          leaf L2: [0,80); node over L0 L1: [0,48); ...
//
// b reads L1's runs [0,48) and entries (none), L3's runs [0,32) and
// entries (none), and the union of L2, [0,80): it cannot go below 80.
//
// Buckets (pools with gaps: a buffer may sit inside another's gap, so
// ranges at one node may overlap and are kept one by one). Time ranks are
// cut into buckets of W ranks (W twice the mean lifetime). A bucket keeps
// two lists sorted by offset: the placed buffers alive in it, and those
// starting in it. b's first bucket gives the first, each later bucket of
// its lifetime the second: every live buffer once, and few dead ones. A
// buffer with gaps (or beside one) is kept clear of the other as
// pool::clearance says. Cost per buffer: O(k log m) for k buffers live
// beside it over m buckets.
//
// Both give the same placements (the tree is tested against the buckets).
// Scratch memory is reused: choose() allocates only when a list or the
// scratch grows.
//
// The engine works on a merged problem (pool::mergeInplace): no in-place
// pairs, alignment >= 1, end > start, normalized gaps.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "memplan/algorithm.h"

namespace memplan::heur {

enum class Fit : std::uint8_t { Best, First };
std::string_view fitName(Fit f);

struct PlacerParams {
  enum class Index : std::uint8_t {
    Auto,     // the run tree, or the buckets for pools with gaps
    Tree,     // the run tree (pools with gaps use the buckets regardless)
    Buckets,  // the buckets
  };
  Index index = Index::Auto;
  // Run tree: time ranks per leaf (0: an eighth of the mean lifetime, 4 to
  // 128). Smaller leaves hold fewer partly covering buffers; larger ones
  // are fewer to update when a long-lived buffer is placed.
  std::size_t leaf_ranks = 0;
};

class Placer {
 public:
  static constexpr Bytes kStopped = ~Bytes{0};
  explicit Placer(const PoolProblem& merged, PlacerParams params = {});
  ~Placer();
  Placer(const Placer&) = delete;
  Placer& operator=(const Placer&) = delete;

  // Places order[from..] given that order[0..from) already sit at
  // `offsets` (offsets of the other buffers are ignored and overwritten).
  // Returns the height max(offset + size), at least the reserved prefix;
  // kStopped when `stop` became true first (the pass gave up). Throws
  // PlanError if the pool would exceed kMaxBytes.
  Bytes place(std::span<const BufferId> order, std::size_t from, Fit fit,
              std::vector<Offset>& offsets, const std::atomic<bool>* stop = nullptr);

  // Incremental use (local search, hints): the placed set is what is marked.
  void clear();                                   // nothing placed
  void mark(BufferId b, Offset at);               // b now sits at `at`
  void unmark(BufferId b);                        // b removed (if marked)
  // Rebuilds the marks: every buffer in `ids` placed at `offsets`.
  void markAll(std::span<const BufferId> ids, const std::vector<Offset>& offsets);
  // Where b goes among the marked buffers (b itself must not be marked).
  Offset choose(BufferId b, Fit fit);
  // True when b at `at` is clear of every marked buffer (b not marked).
  bool fits(BufferId b, Offset at);
  // The marked buffers that share bytes-in-time with b when stacked (b
  // excluded): the ones choose() steps around.
  void overlapping(BufferId b, std::vector<BufferId>& out);
  const Buffer& buffer(BufferId b) const { return bufs_[b]; }
  bool marked(BufferId b) const { return marked_at_[b] != kUnmarked; }

  // Work spent so far: placed buffers plus runs and entries examined.
  std::uint64_t work() const { return work_; }
  std::size_t size() const { return bufs_.size(); }
  bool usesTree() const { return tree_ != nullptr; }

 private:
  struct Range {
    Offset lo, hi;            // b must stay out of [lo - size, hi)
    Range() noexcept {}       // scratch: no zero-fill on resize
    Range(Offset l, Offset h) noexcept : lo(l), hi(h) {}
  };
  class Tree;
  class Buckets;
  friend class Tree;
  friend class Buckets;

  void mergeRuns();  // the runs in runs_ -> big_ and merged_, both sorted
  Offset walk(BufferId b, Fit fit);

  static constexpr Offset kUnmarked = ~Offset{0};

  const std::vector<Buffer>& bufs_;
  Offset floor_ = 0;
  std::vector<std::int32_t> start_rank_, end_rank_;  // lifetimes as time ranks
  std::size_t ranks_ = 0;
  std::vector<Offset> marked_at_;       // offset when marked, else kUnmarked
  Tree* tree_ = nullptr;                // exactly one of the two indexes
  Buckets* buckets_ = nullptr;
  // Static lifetime index for overlapping(): buffer ids by time bucket.
  std::size_t id_width_ = 1;
  std::vector<std::vector<BufferId>> ids_all_, ids_own_;
  std::vector<Range> ranges_, merged_;  // scratch
  std::vector<std::size_t> runs_;       // scratch: sorted runs in ranges_
  std::pair<const Range*, std::size_t> big_{nullptr, 0};  // scratch: longest run
  std::vector<Range> arena_;            // scratch: intermediate merges
  struct Seg {
    const Range* p;
    std::size_t n;
  };
  std::vector<Seg> segs_;               // scratch: runs left to merge
  std::uint64_t work_ = 0;
};

}  // namespace memplan::heur

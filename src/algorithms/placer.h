// The placement engine behind best_fit, first_fit, the local search, the
// hints and auto: places buffers one at a time, each in the best (or
// lowest) free gap over its lifetime among the buffers placed so far.
//
// How one buffer b is placed (choose):
//  1. Gather the placed buffers live during b's lifetime, as byte ranges
//     ordered by offset. They are kept in time buckets: time is compressed
//     to the ranks of the distinct start/end values and cut into buckets of
//     W ranks (W twice the mean lifetime, so most lifetimes lie in one
//     bucket). A bucket keeps two lists sorted by offset: the placed
//     buffers alive in it, and those starting in it. b's first bucket gives
//     the first, each later bucket of its lifetime the second: every live
//     buffer once, and few dead ones. A lifetime inside one bucket walks
//     its list directly; longer ones merge the m sorted lists pairwise
//     (k ranges: k log m steps, not the k log k of a sort).
//  2. Walk the free gaps between those ranges from the floor (reserved
//     prefix) up, each candidate offset rounded up to b's alignment (any
//     alignment >= 1).
//  3. Best fit takes the smallest gap b fits in (the lowest among equals);
//     first fit the lowest. With no gap, b goes on top of the highest range.
// Pinned buffers are placed at their pins. A buffer with gaps (or beside
// one) is kept clear of the other as pool::clearance says, so it may sit
// inside another's gap. Cost per buffer: O(k log m) for k buffers live
// beside it over m buckets; insertion into the buckets is a binary search
// and a move of each list's tail. Scratch memory is reused:
// choose() allocates only when a bucket or the scratch grows.
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

class Placer {
 public:
  static constexpr Bytes kStopped = ~Bytes{0};
  explicit Placer(const PoolProblem& merged);

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

  // Work spent so far: placed buffers plus bucket entries examined.
  std::uint64_t work() const { return work_; }
  std::size_t size() const { return bufs_.size(); }

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
    void insert(const Key& k);
    void erase(Offset lo, BufferId id);
    void clear() { keys.clear(); }
  };
  // A bucket lists the marked buffers alive in it (all) and, apart, those
  // that start in it (own): a lifetime spanning buckets reads the first
  // bucket's `all` and the later buckets' `own` lists, so every live
  // buffer once and few dead ones.
  struct Bucket {
    List all, own;
  };
  struct Range {
    Offset lo, hi;            // b must stay out of [lo - size, hi)
    Range() noexcept {}       // scratch: no zero-fill on resize
    Range(Offset l, Offset h) noexcept : lo(l), hi(h) {}
  };
  template <typename F>
  void forEachList(BufferId b, F&& f);
  void gather(BufferId b);
  std::size_t firstBucket(BufferId b) const { return static_cast<std::size_t>(rs_[b]) / width_; }
  std::size_t lastBucket(BufferId b) const { return static_cast<std::size_t>(re_[b] - 1) / width_; }

  static constexpr Offset kUnmarked = ~Offset{0};

  const std::vector<Buffer>& bufs_;
  Offset floor_ = 0;
  std::vector<std::int32_t> rs_, re_;   // lifetimes as time ranks
  std::vector<std::uint8_t> gapped_;
  bool any_gapped_ = false;
  std::vector<Offset> at_;              // offset when marked, else kUnmarked
  std::size_t width_ = 1;               // bucket width in ranks
  std::vector<Bucket> buckets_;
  std::vector<Range> ranges_, merged_;  // scratch
  std::vector<std::size_t> runs_;       // scratch: sorted runs in ranges_
  std::uint64_t work_ = 0;
};

}  // namespace memplan::heur

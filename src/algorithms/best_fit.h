// Offset-based greedy placement: the engine behind "best_fit", the local
// search and "auto".
//
// Buffers are placed one at a time in a given order. For each buffer:
//  1. Collect the already placed buffers that overlap it in time (a segment
//     tree over the buffers sorted by start, holding the latest end among
//     placed buffers per node, finds them in O((k + 1) log n)).
//  2. Sort their byte ranges by offset and walk the free gaps between them,
//     from the floor (reserved prefix) up, each candidate offset rounded up
//     to the buffer's alignment.
//  3. Best fit takes the smallest gap the buffer fits in; first fit takes
//     the lowest. With no gap, the buffer goes on top of the highest one.
// Pinned buffers come first in every order, at their pinned offsets.
//
// The engine works on a merged problem (pool::mergeInplace): no in-place
// pairs, alignment >= 1, end > start. Scratch memory is allocated once per
// engine; place() allocates nothing.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "memplan/algorithm.h"

namespace memplan::heur {

enum class Order : std::uint8_t {
  SizeDesc,   // largest first (ties: longer lifetime first)
  Start,      // earliest start first (ties: larger first)
  Length,     // longest lifetime first
  Area,       // size x lifetime length, largest first
  Conflicts,  // most time-overlapping buffers first
  Breadth,    // TFLite "greedy by breadth": steps in decreasing live bytes,
              // each step's not yet ordered buffers largest first
};
// Portfolio order: the usual winners first, so a capped portfolio keeps them.
inline constexpr std::array<Order, 6> kAllOrders = {
    Order::Conflicts, Order::SizeDesc, Order::Area, Order::Length, Order::Breadth, Order::Start};
std::string_view orderName(Order o);

enum class Fit : std::uint8_t { Best, First };
std::string_view fitName(Fit f);

// Pinned buffers first (by offset), then the others in the given order.
// Ties are broken by buffer id, so orders are deterministic.
std::vector<BufferId> makeOrder(const PoolProblem& merged, Order order);

// Throws PlanError when pinned buffers collide, sit inside the reserved
// prefix or are not aligned.
void checkPins(const PoolProblem& merged);

class Placer {
 public:
  explicit Placer(const PoolProblem& merged);

  // Places order[from..] given that order[0..from) already sit at
  // `offsets` (offsets of the other buffers are ignored and overwritten).
  // Returns the height max(offset + size), at least the reserved prefix.
  // Throws PlanError if the pool would exceed kMaxBytes.
  Bytes place(const std::vector<BufferId>& order, std::size_t from, Fit fit,
              std::vector<Offset>& offsets);

  // Incremental use (local search): the placed set is whatever was marked.
  void clear();                                   // nothing placed
  void mark(BufferId b, Offset at);               // b now sits at `at`
  void unmark(BufferId b);                        // b removed
  // Rebuilds the marks: every buffer in `ids` placed at `offsets`. O(n).
  void markAll(std::span<const BufferId> ids, const std::vector<Offset>& offsets);
  // Where b goes among the marked buffers.
  Offset choose(BufferId b, Fit fit);
  // The marked buffers alive during b's lifetime (b excluded).
  void overlapping(BufferId b, std::vector<BufferId>& out);
  const Buffer& buffer(BufferId b) const { return bufs_[b]; }

  // Work spent so far: placed buffers plus neighbours examined.
  std::uint64_t work() const { return work_; }
  std::size_t size() const { return bufs_.size(); }

 private:
  // Leaves are blocks of kBlock buffers in start order, scanned linearly;
  // the tree above them keeps each block's latest marked end.
  static constexpr std::size_t kBlock = 16;
  template <typename F>
  void forEachOverlap(BufferId b, F&& f);
  void updateBlock(std::size_t block);

  const std::vector<Buffer>& bufs_;
  Bytes floor_ = 0;
  // Per position in start order (compact, so a query touches few lines).
  std::vector<BufferId> by_start_;
  std::vector<TimeValue> starts_;
  std::vector<TimeValue> ends_;        // kUnplaced when not marked
  std::vector<Offset> lo_;             // offset when marked
  std::vector<Bytes> sizes_;
  std::vector<std::int32_t> pos_of_;   // buffer -> position in start order
  std::size_t leaves_ = 1;             // power of two >= number of blocks
  std::vector<TimeValue> max_end_;     // tree over blocks: latest marked end
  std::vector<std::pair<Offset, Offset>> ranges_;  // scratch: [lo, hi)
  std::vector<std::uint32_t> stack_;   // scratch: tree walk
  Offset best_ = 0;                    // scratch: best gap so far
  std::uint64_t work_ = 0;
};

// Runs every (order, fit) pair and keeps the lowest height (first wins
// ties). `offsets` gets the winner's merged offsets. Returns the height.
struct PortfolioResult {
  Bytes height = 0;
  std::vector<Offset> offsets;
  std::vector<BufferId> order;  // winning order
  Order which = Order::SizeDesc;
  Fit fit = Fit::Best;
  std::uint64_t work = 0;
};
// Stops early at `stop_at` or once `work_cap` work units are spent (after
// at least one pass).
PortfolioResult runPortfolio(const PoolProblem& merged, Placer& placer,
                             Bytes stop_at = 0,
                             std::uint64_t work_cap = ~std::uint64_t{0});

}  // namespace memplan::heur

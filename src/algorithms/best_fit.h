// "best_fit" and "first_fit": one pass of the placement engine (placer.h)
// over the buffers in one order; and the orders and portfolios of passes
// that "local_search" and "auto" build on.
//
// The default order is by size, largest first (ties: longer lifetime
// first, then buffer id): big buffers shape the layout, small ones fill
// its gaps. Pinned buffers come first in every order, at their pins.
// best_fit puts each buffer in the smallest free gap it fits in over its
// lifetime, first_fit in the lowest. One pass sorts once and places each
// buffer in O(k) (k = buffers live beside it; placer.h).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include "algorithms/placer.h"
#include "algorithms/stop.h"
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
inline constexpr std::array<Order, 6> kAllOrders = {
    Order::SizeDesc, Order::Conflicts, Order::Area, Order::Length, Order::Breadth, Order::Start};
std::string_view orderName(Order o);

// The buffers (not pinned) live at the steps of most live bytes, stacked
// (the "peak stack" search stage, search_stages.h): at each such step in
// time order (the first max_steps of them), those not stacked at an
// earlier one go on top of the stacked ones live there, from `base` up,
// latest end first (ties: earlier start, larger, lower id), stepping over
// stacked ones that ended but share time with them. At the first step that
// leaves no hole, and what ends last sits lowest, out of the way of what
// comes after; at the next ones the buffers still live from an earlier
// step are the lowest of its stack (they end last), so a training trace
// whose steps repeat one peak gets every peak without a hole but for the
// few small buffers that end in between. A later step whose stack would
// leave a hole of more than max_hole bytes is left out, and so is one
// whose new buffers times the ended ones above it exceed 2^24 pairs (the
// work of stepping over them). Offsets aligned; nullopt when one would
// overflow. O(max_steps (n log n + 2^24)).
struct StackPin {
  BufferId id;
  Offset offset;
  bool operator==(const StackPin&) const = default;
};
std::optional<std::vector<StackPin>> peakStack(const std::vector<Buffer>& bufs, Offset base,
                                               std::size_t max_steps, Bytes max_hole);

// Pinned buffers first (by offset), then the others in the given order.
// Ties are broken by buffer id, so orders are deterministic.
std::vector<BufferId> makeOrder(const PoolProblem& merged, Order order);

struct Pass {
  Order order = Order::SizeDesc;
  Fit fit = Fit::Best;
};

// Settings of "best_fit" / "first_fit".
struct FitParams {
  Order order = Order::SizeDesc;
};

// The best of several passes (first wins ties).
struct PortfolioResult {
  Bytes height = 0;
  std::vector<Offset> offsets;  // merged offsets of the winner
  std::vector<BufferId> order;  // winning order
  Pass pass;
  std::uint64_t work = 0;
  std::size_t passes = 0;       // passes run
};
// Runs `passes` in turn; stops at `stop_at`, or before a pass that would
// take the work past `work_cap` (as costly as the costliest so far, or
// `pass_estimate`; without an estimate the first pass always runs), or
// once `watch` is due (after the first pass).
PortfolioResult runPortfolio(const PoolProblem& merged, Placer& placer,
                             std::span<const Pass> passes, Bytes stop_at = 0,
                             std::uint64_t work_cap = ~std::uint64_t{0},
                             std::uint64_t pass_estimate = 0, StopWatch* watch = nullptr);
// Every order with best fit then first fit.
std::vector<Pass> allPasses();

// "best_fit(size)" / "first_fit(size)".
std::string passName(const Pass& p);

// "best_fit" / "first_fit" with other settings.
std::unique_ptr<Algorithm> makeFitAlgorithm(Fit fit, FitParams params);

}  // namespace memplan::heur

// "best_fit", "first_fit" and the portfolios of passes (see best_fit.h).
#include "algorithms/best_fit.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "algorithms/pool_util.h"
#include "memplan/algorithm.h"

namespace memplan::heur {

namespace {

TimeValue length(const Buffer& b) { return b.end - b.start; }

// Iterative min segment tree over ranks of time points.
class RangeMin {
 public:
  explicit RangeMin(const std::vector<std::int64_t>& v) : n_(v.size()), t_(2 * v.size()) {
    std::copy(v.begin(), v.end(), t_.begin() + static_cast<std::ptrdiff_t>(n_));
    for (std::size_t i = n_; i-- > 1;) t_[i] = std::min(t_[2 * i], t_[2 * i + 1]);
  }
  std::int64_t query(std::size_t l, std::size_t r) const {  // [l, r), l < r
    std::int64_t m = std::numeric_limits<std::int64_t>::max();
    for (l += n_, r += n_; l < r; l /= 2, r /= 2) {
      if (l & 1) m = std::min(m, t_[l++]);
      if (r & 1) m = std::min(m, t_[--r]);
    }
    return m;
  }

 private:
  std::size_t n_;
  std::vector<std::int64_t> t_;
};

// Rank of each buffer in TFLite's greedy-by-breadth order: the steps with
// the most live bytes are served first; a buffer belongs to the first
// served step of its lifetime.
std::vector<std::int64_t> breadthRanks(const std::vector<Buffer>& bufs) {
  std::vector<TimeValue> points;
  points.reserve(bufs.size());
  for (const Buffer& b : bufs) points.push_back(b.start);
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  // Live bytes at each point: starts add, ends remove (half-open).
  std::vector<Bytes> add(points.size() + 1, 0), sub(points.size() + 1, 0);
  for (const Buffer& b : bufs) {
    add[std::lower_bound(points.begin(), points.end(), b.start) - points.begin()] += b.size;
    sub[std::lower_bound(points.begin(), points.end(), b.end) - points.begin()] += b.size;
  }
  std::vector<Bytes> breadth(points.size());
  Bytes live = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    live += add[i];
    live -= sub[i];
    breadth[i] = live;
  }
  std::vector<std::int64_t> by_breadth(points.size());
  std::iota(by_breadth.begin(), by_breadth.end(), 0);
  std::stable_sort(by_breadth.begin(), by_breadth.end(),
                   [&](std::int64_t a, std::int64_t b) { return breadth[a] > breadth[b]; });
  std::vector<std::int64_t> rank(points.size());
  for (std::size_t r = 0; r < by_breadth.size(); ++r) rank[by_breadth[r]] = static_cast<std::int64_t>(r);
  RangeMin rmq(rank);
  std::vector<std::int64_t> out(bufs.size());
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    const std::size_t l = std::lower_bound(points.begin(), points.end(), bufs[i].start) - points.begin();
    const std::size_t r = std::lower_bound(points.begin(), points.end(), bufs[i].end) - points.begin();
    out[i] = rmq.query(l, std::max(r, l + 1));
  }
  return out;
}

}  // namespace

namespace {

// The steps where the most bytes are live (sizes over whole lifetimes,
// gaps ignored), the first `max_steps` of them in time order.
std::vector<TimeValue> peakSteps(const std::vector<Buffer>& bufs, std::size_t max_steps) {
  std::vector<pool::LoadDelta> deltas;
  deltas.reserve(2 * bufs.size());
  for (const Buffer& b : bufs) {
    deltas.push_back({b.start, +1, b.size});
    deltas.push_back({b.end, -1, b.size});
  }
  const Bytes most = pool::loadPeak(deltas).live;  // sorts: ends first at a step
  std::vector<TimeValue> steps;
  Bytes live = 0;
  for (std::size_t k = 0; k < deltas.size() && steps.size() < max_steps; ++k) {
    live = deltas[k].sign > 0 ? live + deltas[k].bytes : live - deltas[k].bytes;
    const bool step_done = k + 1 == deltas.size() || deltas[k + 1].t != deltas[k].t;
    if (step_done && live == most && most > 0) steps.push_back(deltas[k].t);
  }
  return steps;
}

// Latest end first (ties: earlier start, larger, lower id).
bool endsLater(const Buffer& x, const Buffer& y) {
  if (x.end != y.end) return x.end > y.end;
  if (x.start != y.start) return x.start < y.start;
  if (x.size != y.size) return x.size > y.size;
  return x.id < y.id;
}

// A later step stepping its new buffers over the ended ones above costs
// new x ended pairs: past this many the step is left out (bounded work on
// any list; training traces need a few hundred thousand).
constexpr std::size_t kMaxStepPairs = std::size_t{1} << 24;

}  // namespace

std::optional<std::vector<StackPin>> peakStack(const std::vector<Buffer>& bufs, Offset base,
                                               std::size_t max_steps, Bytes max_hole) {
  constexpr Offset kNotStacked = ~Offset{0};
  const std::vector<TimeValue> steps = peakSteps(bufs, max_steps);
  std::vector<Offset> at(bufs.size(), kNotStacked);
  std::vector<StackPin> out, trial;
  std::vector<BufferId> fresh, above;
  Bytes most = 0;
  for (TimeValue t : steps) {
    auto liveAt = [t](const Buffer& b) { return b.start <= t && t < b.end; };
    // What is stacked already and live at t lies below `top`; what is
    // stacked and no longer live may lie above it (`above`, by offset).
    Offset top = base;
    Bytes live = 0;
    fresh.clear();
    above.clear();
    for (const Buffer& b : bufs) {
      if (b.fixed_offset) continue;
      const bool live_at_t = liveAt(b);
      if (live_at_t) live += b.size;
      if (at[b.id] == kNotStacked) {
        if (live_at_t) fresh.push_back(b.id);
      } else if (live_at_t) {
        top = std::max(top, at[b.id] + b.size);
      }
    }
    if (out.empty()) most = live;
    for (const StackPin& p : out)
      if (p.offset + bufs[p.id].size > top && !liveAt(bufs[p.id]))
        above.push_back(p.id);
    if (!out.empty() && fresh.size() > kMaxStepPairs / std::max<std::size_t>(1, above.size())) continue;
    std::sort(above.begin(), above.end(), [&](BufferId a, BufferId b) { return at[a] < at[b]; });
    std::sort(fresh.begin(), fresh.end(), [&](BufferId a, BufferId b) { return endsLater(bufs[a], bufs[b]); });
    // Each on top of the last, stepping over what it shares time with above.
    trial.clear();
    Offset cursor = top;
    for (BufferId id : fresh) {
      const Buffer& b = bufs[id];
      auto x = alignUp(cursor, b.alignment);
      for (BufferId o : above) {
        if (!x || at[o] >= *x + b.size) break;
        if (bufs[o].overlaps(b) && at[o] + bufs[o].size > *x) x = alignUp(at[o] + bufs[o].size, b.alignment);
      }
      const auto end = x ? checkedAdd(*x, b.size) : std::nullopt;
      if (!end) return std::nullopt;
      trial.push_back({id, *x});
      cursor = *end;
    }
    // The first step is stacked whole; a later one only when its stack
    // leaves no hole there larger than max_hole (a larger one would keep
    // the plan above what the search accepts).
    if (!out.empty() && cursor - base > most + max_hole) continue;
    for (const StackPin& p : trial) {
      at[p.id] = p.offset;
      out.push_back(p);
    }
  }
  return out;
}

std::string_view orderName(Order o) {
  switch (o) {
    case Order::SizeDesc: return "size";
    case Order::Start: return "start";
    case Order::Length: return "length";
    case Order::Area: return "area";
    case Order::Conflicts: return "conflicts";
    case Order::Breadth: return "breadth";
  }
  return "?";
}

std::vector<BufferId> makeOrder(const PoolProblem& merged, Order order) {
  const auto& bufs = merged.buffers;
  std::vector<BufferId> pinned, free;
  for (const Buffer& b : bufs) (b.fixed_offset ? pinned : free).push_back(b.id);
  std::sort(pinned.begin(), pinned.end(), [&](BufferId a, BufferId b) {
    return std::pair(*bufs[a].fixed_offset, a) < std::pair(*bufs[b].fixed_offset, b);
  });

  // Each order is a key, compared descending, then size, then id.
  std::vector<long double> key(bufs.size(), 0);
  switch (order) {
    case Order::SizeDesc:
      for (const Buffer& b : bufs) key[b.id] = static_cast<long double>(length(b));
      break;
    case Order::Start:
      for (const Buffer& b : bufs) key[b.id] = -static_cast<long double>(b.start);
      break;
    case Order::Length:
      for (const Buffer& b : bufs) key[b.id] = static_cast<long double>(length(b));
      break;
    case Order::Area:
      for (const Buffer& b : bufs)
        key[b.id] = static_cast<long double>(b.size) * static_cast<long double>(length(b));
      break;
    case Order::Conflicts: {
      std::vector<TimeValue> starts, ends;
      for (const Buffer& b : bufs) {
        starts.push_back(b.start);
        ends.push_back(b.end);
      }
      std::sort(starts.begin(), starts.end());
      std::sort(ends.begin(), ends.end());
      for (const Buffer& b : bufs) {
        const auto before_end = std::lower_bound(starts.begin(), starts.end(), b.end) - starts.begin();
        const auto ended = std::upper_bound(ends.begin(), ends.end(), b.start) - ends.begin();
        key[b.id] = static_cast<long double>(before_end - ended);
      }
      break;
    }
    case Order::Breadth: {
      const auto rank = breadthRanks(bufs);
      for (const Buffer& b : bufs) key[b.id] = -static_cast<long double>(rank[b.id]);
      break;
    }
  }
  // Sorted on compact keys (not through the buffers: cache-friendly at a
  // million buffers). Size order: size, then the key; others the reverse.
  struct Sortable {
    long double first, second;
    BufferId id;
  };
  std::vector<Sortable> keyed;
  keyed.reserve(free.size());
  for (BufferId b : free) {
    const auto size = static_cast<long double>(bufs[b].size);
    keyed.push_back(order == Order::SizeDesc ? Sortable{size, key[b], b} : Sortable{key[b], size, b});
  }
  std::sort(keyed.begin(), keyed.end(), [](const Sortable& a, const Sortable& b) {
    if (a.first != b.first) return a.first > b.first;
    if (a.second != b.second) return a.second > b.second;
    return a.id < b.id;
  });
  for (const Sortable& k : keyed) pinned.push_back(k.id);
  return pinned;
}

PortfolioResult runPortfolio(const PoolProblem& merged, Placer& placer,
                             std::span<const Pass> passes, Bytes stop_at,
                             std::uint64_t work_cap, std::uint64_t pass_estimate,
                             StopWatch* watch) {
  PortfolioResult best;
  best.height = std::numeric_limits<Bytes>::max();
  std::vector<Offset> offsets(merged.buffers.size(), 0);
  const std::uint64_t work0 = placer.work();
  std::vector<BufferId> order;
  std::uint64_t pass_cost = pass_estimate;  // the costliest pass so far
  for (std::size_t k = 0; k < passes.size(); ++k) {
    const Pass& p = passes[k];
    const std::uint64_t spent = placer.work() - work0;
    // Not a pass that would overrun the cap (the first runs unless an
    // estimate says so).
    if ((k > 0 || pass_estimate > 0) && (spent >= work_cap || work_cap - spent < pass_cost)) break;
    if (best.passes > 0 && watch && watch->due()) break;
    if (k == 0 || p.order != passes[k - 1].order) order = makeOrder(merged, p.order);
    const std::uint64_t before = placer.work();
    const Bytes h = placer.place(order, 0, p.fit, offsets);
    pass_cost = std::max(pass_cost, placer.work() - before);
    ++best.passes;
    if (h < best.height) {
      best.height = h;
      best.offsets = offsets;
      best.order = order;
      best.pass = p;
    }
    if (best.height <= stop_at) break;
  }
  best.work = placer.work() - work0;
  return best;
}

std::vector<Pass> allPasses() {
  std::vector<Pass> out;
  for (Order o : kAllOrders)
    for (Fit f : {Fit::Best, Fit::First}) out.push_back({o, f});
  return out;
}

std::string passName(const Pass& p) {
  return fmt::format("{}_fit({})", p.fit == Fit::Best ? "best" : "first", orderName(p.order));
}

namespace {

class FitAlgorithm : public Algorithm {
 public:
  FitAlgorithm(Fit fit, FitParams params) : fit_(fit), params_(params) {}
  const AlgorithmInfo& info() const override {
    static const AlgorithmInfo kBest{
        .name = "best_fit",
        .summary = "each tensor, largest first, in the smallest free gap over its lifetime",
        .honours_gaps = true,
        .honours_hints = true};
    static const AlgorithmInfo kFirst{
        .name = "first_fit",
        .summary = "each tensor, largest first, in the lowest free gap over its lifetime",
        .honours_gaps = true,
        .honours_hints = true};
    return fit_ == Fit::Best ? kBest : kFirst;
  }
  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams&) const override {
    return pool::solveOffsets(problem, [&](const pool::MergedProblem& m, const pool::Bounds&) {
      Placer placer(m.pool());
      const Pass pass{params_.order, fit_};
      pool::Placement out;
      out.offsets.assign(m.pool().buffers.size(), 0);
      placer.place(makeOrder(m.pool(), pass.order), 0, fit_, out.offsets);
      out.label = passName(pass);
      out.work = placer.work();
      return out;
    });
  }

 private:
  Fit fit_;
  FitParams params_;
};

}  // namespace

std::unique_ptr<Algorithm> makeFitAlgorithm(Fit fit, FitParams params) {
  return std::make_unique<FitAlgorithm>(fit, params);
}

}  // namespace memplan::heur

namespace memplan {
std::unique_ptr<Algorithm> makeBestFitAlgorithm() {
  return heur::makeFitAlgorithm(heur::Fit::Best, {});
}
std::unique_ptr<Algorithm> makeFirstFitAlgorithm() {
  return heur::makeFitAlgorithm(heur::Fit::First, {});
}
}  // namespace memplan

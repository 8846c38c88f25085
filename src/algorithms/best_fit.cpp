// "best_fit": a portfolio of offset-based greedy placements (see best_fit.h).
#include "algorithms/best_fit.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "algorithms/pool_util.h"

namespace memplan::heur {

namespace {

constexpr TimeValue kUnplaced = std::numeric_limits<TimeValue>::min();

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

std::string_view fitName(Fit f) { return f == Fit::Best ? "best" : "first"; }

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
  std::sort(free.begin(), free.end(), [&](BufferId a, BufferId b) {
    if (order == Order::SizeDesc) {
      if (bufs[a].size != bufs[b].size) return bufs[a].size > bufs[b].size;
      if (key[a] != key[b]) return key[a] > key[b];
      return a < b;
    }
    if (key[a] != key[b]) return key[a] > key[b];
    if (bufs[a].size != bufs[b].size) return bufs[a].size > bufs[b].size;
    return a < b;
  });
  pinned.insert(pinned.end(), free.begin(), free.end());
  return pinned;
}

void checkPins(const PoolProblem& merged) {
  PoolProblem pins;
  pins.mem_id = merged.mem_id;
  pins.reserved = merged.reserved;
  std::vector<Offset> offsets;
  for (const Buffer& b : merged.buffers) {
    if (!b.fixed_offset) continue;
    if (*b.fixed_offset > kMaxBytes || b.size > kMaxBytes - *b.fixed_offset)
      throw PlanError(fmt::format("pool {}: buffer '{}' pinned at {} overflows", merged.mem_id,
                                  b.name, *b.fixed_offset));
    pins.buffers.push_back(b);
    pins.buffers.back().id = static_cast<BufferId>(offsets.size());
    offsets.push_back(*b.fixed_offset);
  }
  if (pins.buffers.empty()) return;
  const std::string err = pool::checkPlacement(pins, offsets);
  if (!err.empty())
    throw PlanError(fmt::format("pool {}: pinned buffers cannot be honoured: {}", merged.mem_id, err));
}

Placer::Placer(const PoolProblem& merged) : bufs_(merged.buffers), floor_(merged.reserved) {
  const std::size_t n = bufs_.size();
  by_start_.resize(n);
  std::iota(by_start_.begin(), by_start_.end(), 0);
  std::sort(by_start_.begin(), by_start_.end(), [&](BufferId a, BufferId b) {
    return std::pair(bufs_[a].start, a) < std::pair(bufs_[b].start, b);
  });
  starts_.resize(n);
  ends_.assign(n, kUnplaced);
  lo_.assign(n, 0);
  sizes_.resize(n);
  pos_of_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Buffer& b = bufs_[by_start_[i]];
    starts_[i] = b.start;
    sizes_[i] = b.size;
    pos_of_[b.id] = static_cast<std::int32_t>(i);
  }
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
  while (leaves_ < blocks) leaves_ *= 2;
  max_end_.assign(2 * leaves_, kUnplaced);
  ranges_.reserve(std::min<std::size_t>(n, 1 << 16));
  stack_.reserve(64);
}

void Placer::clear() {
  std::fill(ends_.begin(), ends_.end(), kUnplaced);
  std::fill(max_end_.begin(), max_end_.end(), kUnplaced);
}

void Placer::mark(BufferId b, Offset at) {
  if (bufs_[b].size == 0) return;  // occupies nothing; would split gaps
  const std::size_t p = static_cast<std::size_t>(pos_of_[b]);
  const TimeValue end = bufs_[b].end;
  ends_[p] = end;
  lo_[p] = at;
  for (std::size_t i = leaves_ + p / kBlock; i >= 1 && max_end_[i] < end; i /= 2) max_end_[i] = end;
}

void Placer::updateBlock(std::size_t block) {
  TimeValue m = kUnplaced;
  const std::size_t first = block * kBlock, last = std::min(first + kBlock, ends_.size());
  for (std::size_t p = first; p < last; ++p) m = std::max(m, ends_[p]);
  std::size_t i = leaves_ + block;
  max_end_[i] = m;
  for (i /= 2; i >= 1; i /= 2) {
    const TimeValue up = std::max(max_end_[2 * i], max_end_[2 * i + 1]);
    if (max_end_[i] == up) break;
    max_end_[i] = up;
  }
}

void Placer::unmark(BufferId b) {
  const std::size_t p = static_cast<std::size_t>(pos_of_[b]);
  if (ends_[p] == kUnplaced) return;
  ends_[p] = kUnplaced;
  updateBlock(p / kBlock);
}

void Placer::markAll(std::span<const BufferId> ids, const std::vector<Offset>& offsets) {
  clear();
  for (BufferId b : ids) {
    if (bufs_[b].size == 0) continue;
    const std::size_t p = static_cast<std::size_t>(pos_of_[b]);
    ends_[p] = bufs_[b].end;
    lo_[p] = offsets[b];
    TimeValue& leaf = max_end_[leaves_ + p / kBlock];
    leaf = std::max(leaf, ends_[p]);
  }
  for (std::size_t i = leaves_; i-- > 1;) max_end_[i] = std::max(max_end_[2 * i], max_end_[2 * i + 1]);
  work_ += ids.size() / 8;
}

// Calls f(position) for every marked buffer alive during b's lifetime.
template <typename F>
void Placer::forEachOverlap(BufferId id, F&& f) {
  const Buffer& b = bufs_[id];
  const TimeValue s = b.start, e = b.end;
  // Only buffers starting before b ends can overlap it.
  const std::size_t limit = std::lower_bound(starts_.begin(), starts_.end(), e) - starts_.begin();
  if (limit == 0) return;
  const std::size_t self = static_cast<std::size_t>(pos_of_[id]);
  const std::size_t last_block = (limit - 1) / kBlock;
  stack_.clear();
  stack_.push_back(1);
  while (!stack_.empty()) {
    const std::uint32_t node = stack_.back();
    stack_.pop_back();
    ++work_;
    if (max_end_[node] <= s) continue;  // nothing marked here lives past b's start
    if (node >= leaves_) {
      const std::size_t first = (node - leaves_) * kBlock;
      const std::size_t last = std::min(first + kBlock, limit);
      work_ += last - first;
      for (std::size_t p = first; p < last; ++p)
        if (ends_[p] > s && p != self) f(p);
      continue;
    }
    // The right child holds later starts: skip it when its first block
    // starts at or after b's end.
    const int level = 63 - __builtin_clzll(node);
    const std::size_t width = leaves_ >> (level + 1);
    const std::size_t right_first =
        (static_cast<std::size_t>(node) - (std::size_t{1} << level)) * 2 * width + width;
    if (right_first <= last_block) stack_.push_back(2 * node + 1);
    stack_.push_back(2 * node);
  }
}

void Placer::overlapping(BufferId b, std::vector<BufferId>& out) {
  out.clear();
  forEachOverlap(b, [&](std::size_t p) { out.push_back(by_start_[p]); });
}

Offset Placer::choose(BufferId id, Fit fit) {
  const Buffer& b = bufs_[id];
  ++work_;
  if (b.fixed_offset) return *b.fixed_offset;
  if (b.size == 0) return *alignUp(floor_, b.alignment);
  ranges_.clear();
  forEachOverlap(id, [&](std::size_t p) { ranges_.emplace_back(lo_[p], lo_[p] + sizes_[p]); });
  std::sort(ranges_.begin(), ranges_.end());
  work_ += ranges_.size();
  Offset cursor = floor_;
  Bytes best_gap = std::numeric_limits<Bytes>::max();
  for (const auto& [lo, hi] : ranges_) {
    if (lo > cursor) {
      const auto cand = alignUp(cursor, b.alignment);
      if (cand && *cand + b.size <= lo) {
        const Bytes gap = lo - cursor;
        if (fit == Fit::First || gap == b.size) return *cand;
        if (gap < best_gap) {
          best_gap = gap;
          best_ = *cand;
        }
      }
    }
    cursor = std::max(cursor, hi);
  }
  if (best_gap != std::numeric_limits<Bytes>::max()) return best_;
  const auto top = alignUp(cursor, b.alignment);
  if (!top || !checkedAdd(*top, b.size))
    throw PlanError(fmt::format("pool exceeds {} bytes placing '{}'", kMaxBytes, b.name));
  return *top;
}

Bytes Placer::place(const std::vector<BufferId>& order, std::size_t from, Fit fit,
                    std::vector<Offset>& offsets) {
  // Rebuild the marks from the kept prefix: O(n).
  Bytes height = floor_;
  for (std::size_t k = 0; k < from; ++k) {
    const Buffer& b = bufs_[order[k]];
    if (b.size > 0) height = std::max(height, offsets[b.id] + b.size);
  }
  markAll(std::span<const BufferId>(order.data(), from), offsets);
  for (std::size_t k = from; k < order.size(); ++k) {
    const BufferId id = order[k];
    const Offset at = choose(id, fit);
    offsets[id] = at;
    mark(id, at);
    if (bufs_[id].size > 0) height = std::max(height, at + bufs_[id].size);
  }
  return height;
}

PortfolioResult runPortfolio(const PoolProblem& merged, Placer& placer, Bytes stop_at,
                             std::uint64_t work_cap) {
  PortfolioResult best;
  best.height = std::numeric_limits<Bytes>::max();
  std::vector<Offset> offsets(merged.buffers.size(), 0);
  const std::uint64_t work0 = placer.work();
  for (Order o : kAllOrders) {
    const auto order = makeOrder(merged, o);
    for (Fit f : {Fit::Best, Fit::First}) {
      const Bytes h = placer.place(order, 0, f, offsets);
      if (h < best.height) {
        best.height = h;
        best.offsets = offsets;
        best.order = order;
        best.which = o;
        best.fit = f;
      }
      if (best.height <= stop_at || placer.work() - work0 >= work_cap) break;
    }
    if (best.height <= stop_at || placer.work() - work0 >= work_cap) break;
  }
  best.work = placer.work() - work0;
  return best;
}

namespace {

class BestFit : public Algorithm {
 public:
  const AlgorithmInfo& info() const override {
    static const AlgorithmInfo kInfo{
        .name = "best_fit",
        .summary = "offset-based best fit and first fit in six orders; keeps the lowest",
        .selects = true};
    return kInfo;
  }
  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams&) const override {
    const auto merged = pool::mergeInplace(problem);
    checkPins(merged.problem);
    // Portfolio minus padding target: stop early once at the lower bound.
    const Bytes lb = lowerBound(problem);
    const Bytes pad = problem.buffers.empty() ? 0 : problem.extra_padding;
    Placer placer(merged.problem);
    auto r = runPortfolio(merged.problem, placer, lb - pad);
    auto sol = pool::makeSolution(problem, pool::expandOffsets(merged, r.offsets),
                                  fmt::format("best_fit({},{})", orderName(r.which), fitName(r.fit)),
                                  lb, r.work);
    return sol;
  }
};

}  // namespace

}  // namespace memplan::heur

namespace memplan {
std::unique_ptr<Algorithm> makeBestFitAlgorithm() { return std::make_unique<heur::BestFit>(); }
}  // namespace memplan

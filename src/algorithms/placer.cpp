// The placement engine: see placer.h.
#include "algorithms/placer.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "algorithms/pool_util.h"

namespace memplan::heur {

std::string_view fitName(Fit f) { return f == Fit::Best ? "best" : "first"; }

void Placer::List::insert(const Key& k) {
  const auto pos = std::upper_bound(keys.begin(), keys.end(), k.lo,
                                    [](Offset x, const Key& y) { return x < y.lo; });
  keys.insert(pos, k);
}

void Placer::List::erase(Offset lo, BufferId id) {
  auto pos = std::lower_bound(keys.begin(), keys.end(), lo,
                              [](const Key& y, Offset x) { return y.lo < x; });
  while (pos != keys.end() && pos->id != id) ++pos;
  if (pos != keys.end()) keys.erase(pos);
}

Placer::Placer(const PoolProblem& merged) : bufs_(merged.buffers), floor_(merged.reserved) {
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
  rs_.resize(n);
  re_.resize(n);
  gapped_.resize(n);
  std::int32_t rank = -1;
  for (std::size_t k = 0; k < events.size(); ++k) {
    if (k == 0 || events[k].first != events[k - 1].first) ++rank;
    const std::uint32_t e = events[k].second;
    (e & 1 ? re_ : rs_)[e / 2] = rank;
  }
  const std::size_t ranks = static_cast<std::size_t>(rank + 1);
  std::uint64_t span = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (re_[i] <= rs_[i]) re_[i] = rs_[i] + 1;  // merged problems have end > start
    gapped_[i] = !bufs_[i].gaps.empty();
    any_gapped_ = any_gapped_ || gapped_[i];
    span += static_cast<std::uint64_t>(re_[i] - rs_[i]);
  }
  // Twice the mean lifetime: most lifetimes fit in one bucket, each bucket
  // holds about three lifetimes' worth of buffers.
  width_ = n ? std::max<std::size_t>(1, static_cast<std::size_t>(2 * span / n)) : 1;
  buckets_.resize(ranks / width_ + 1);
  // Each list gets room for every buffer it could ever hold, once: no
  // reallocation (and no copying) while placing.
  {
    std::vector<std::uint32_t> all(buckets_.size(), 0), own(buckets_.size(), 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (bufs_[i].size == 0) continue;
      ++own[firstBucket(static_cast<BufferId>(i))];
      for (std::size_t k = firstBucket(static_cast<BufferId>(i)), last = lastBucket(static_cast<BufferId>(i)); k <= last; ++k) ++all[k];
    }
    for (std::size_t k = 0; k < buckets_.size(); ++k) {
      buckets_[k].all.keys.reserve(all[k]);
      buckets_[k].own.keys.reserve(own[k]);
    }
  }
  at_.assign(n, kUnmarked);
  runs_.reserve(64);
}

void Placer::clear() {
  for (auto& b : buckets_) {
    b.all.clear();
    b.own.clear();
  }
  std::fill(at_.begin(), at_.end(), kUnmarked);
}

void Placer::mark(BufferId b, Offset at) {
  at_[b] = at;
  const Buffer& buf = bufs_[b];
  if (buf.size == 0) return;  // holds nothing; would only split gaps
  const Key k{at, at + buf.size, rs_[b], re_[b], b};
  const std::size_t first = firstBucket(b), last = lastBucket(b);
  buckets_[first].own.insert(k);
  for (std::size_t j = first; j <= last; ++j) buckets_[j].all.insert(k);
  work_ += 2 + last - first;
}

void Placer::unmark(BufferId b) {
  const Offset at = at_[b];
  if (at == kUnmarked) return;
  at_[b] = kUnmarked;
  if (bufs_[b].size == 0) return;
  const std::size_t first = firstBucket(b), last = lastBucket(b);
  buckets_[first].own.erase(at, b);
  for (std::size_t j = first; j <= last; ++j) buckets_[j].all.erase(at, b);
  work_ += 2 + last - first;
}

void Placer::markAll(std::span<const BufferId> ids, const std::vector<Offset>& offsets) {
  clear();
  for (BufferId b : ids) {
    at_[b] = offsets[b];
    const Buffer& buf = bufs_[b];
    if (buf.size == 0) continue;
    const Key k{offsets[b], offsets[b] + buf.size, rs_[b], re_[b], b};
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
  work_ += ids.size();
}

// Calls f(list, keep) for the lists b's lifetime reads, where keep(key)
// says whether the entry is alive during b's lifetime.
template <typename F>
void Placer::forEachList(BufferId id, F&& f) {
  const std::int32_t rs = rs_[id], re = re_[id];
  const std::size_t first = firstBucket(id), last = lastBucket(id);
  f(buckets_[first].all,
    [rs, re](const Key& k) { return static_cast<bool>(int{k.rs < re} & int{k.re > rs}); });
  // Later buckets: started after b did, alive if starting before b ends.
  for (std::size_t j = first + 1; j <= last; ++j)
    f(buckets_[j].own, [re](const Key& k) { return k.rs < re; });
}

// ranges_ = what b must stay clear of, ordered by lo.
void Placer::gather(BufferId id) {
  ranges_.clear();
  runs_.clear();
  runs_.push_back(0);
  const Buffer& b = bufs_[id];
  const bool slow = any_gapped_;
  std::size_t unsorted = 0;  // ranges from buffers with gaps, kept apart
  merged_.clear();
  forEachList(id, [&](const List& l, auto keep) {
    const std::size_t n = l.keys.size();
    work_ += n;
    if (n == 0) return;
    const std::size_t base = ranges_.size();
    ranges_.resize(base + n);
    Range* out = ranges_.data() + base;
    std::size_t c = 0;
    if (!slow) {
      for (const Key& k : l.keys) {  // branch-free filter
        out[c] = {k.lo, k.hi};
        c += keep(k) ? 1 : 0;
      }
    } else {
      for (std::size_t j = 0; j < n; ++j) {
        const Key& k = l.keys[j];
        if (!keep(k)) continue;
        if (!gapped_[id] && !gapped_[k.id]) {
          out[c++] = {k.lo, k.hi};
          continue;
        }
        // b at x is clear of the entry iff x >= lo + above or
        // x + below <= lo; as a range for the gap walk (x + size <= lo or
        // x >= hi): [lo - below + size, lo + above).
        const auto cl = pool::clearance(bufs_[k.id], b);
        if (!cl) continue;
        merged_.push_back({k.lo + b.size - std::min(cl->below, k.lo + b.size), k.lo + cl->above});
        ++unsorted;
      }
    }
    ranges_.resize(base + c);
    if (c > 0) runs_.push_back(ranges_.size());
  });
  if (unsorted > 0) {
    std::sort(merged_.begin(), merged_.end(),
              [](const Range& x, const Range& y) { return x.lo < y.lo; });
    ranges_.insert(ranges_.end(), merged_.begin(), merged_.end());
    runs_.push_back(ranges_.size());
  }
  // Merge the sorted runs pairwise until one is left.
  auto byLo = [](const Range& x, const Range& y) { return x.lo < y.lo; };
  while (runs_.size() > 2) {
    merged_.resize(ranges_.size());
    std::size_t w = 1;
    for (std::size_t r = 0; r + 1 < runs_.size(); r += 2) {
      const auto a = ranges_.begin() + static_cast<std::ptrdiff_t>(runs_[r]);
      const auto m = ranges_.begin() + static_cast<std::ptrdiff_t>(runs_[r + 1]);
      if (r + 2 < runs_.size()) {
        const auto e = ranges_.begin() + static_cast<std::ptrdiff_t>(runs_[r + 2]);
        std::merge(a, m, m, e, merged_.begin() + static_cast<std::ptrdiff_t>(runs_[r]), byLo);
        runs_[w++] = runs_[r + 2];
      } else {
        std::copy(a, m, merged_.begin() + static_cast<std::ptrdiff_t>(runs_[r]));
        runs_[w++] = runs_[r + 1];
      }
    }
    runs_.resize(w);
    ranges_.swap(merged_);
  }
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
          at_ = cand;
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
    if (best_gap_ != kNoGap) return at_;
    const auto top = alignUp(cursor_, align_);
    if (!top || !checkedAdd(*top, size_))
      throw PlanError(fmt::format("pool exceeds {} bytes placing '{}'", kMaxBytes, b.name));
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
  Offset at_ = 0;
};

}  // namespace

Offset Placer::choose(BufferId id, Fit fit) {
  const Buffer& b = bufs_[id];
  ++work_;
  if (b.fixed_offset) return *b.fixed_offset;
  if (b.size == 0) return *alignUp(floor_, b.alignment);
  GapWalk walk(floor_, b.size, b.alignment, fit);
  if (!any_gapped_ && firstBucket(id) == lastBucket(id)) {
    // One bucket: walk its sorted list as it is.
    const auto& keys = buckets_[firstBucket(id)].all.keys;
    const std::int32_t rs = rs_[id], re = re_[id];
    std::size_t k = 0;
    for (; k < keys.size(); ++k)
      if (!walk.visit(keys[k].lo, keys[k].hi, static_cast<bool>(int{keys[k].rs < re} & int{keys[k].re > rs}))) break;
    work_ += k;
    return walk.result(b);
  }
  gather(id);
  for (const Range& r : ranges_)
    if (!walk.visit(r.lo, r.hi, true)) break;
  return walk.result(b);
}

bool Placer::fits(BufferId id, Offset at) {
  const Buffer& b = bufs_[id];
  if (b.size == 0) return true;
  gather(id);
  for (const Range& r : ranges_)
    if (at < r.hi && at + b.size > r.lo) return false;
  return true;
}

void Placer::overlapping(BufferId id, std::vector<BufferId>& out) {
  out.clear();
  const Buffer& b = bufs_[id];
  forEachList(id, [&](const List& l, auto keep) {
    work_ += l.keys.size();
    for (std::size_t j = 0; j < l.keys.size(); ++j) {
      const BufferId o = l.keys[j].id;
      if (o == id || !keep(l.keys[j])) continue;
      if ((gapped_[id] || gapped_[o]) && !pool::clearance(bufs_[o], b)) continue;
      out.push_back(o);
    }
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

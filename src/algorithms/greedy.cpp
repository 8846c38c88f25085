// ExecuTorch's greedy planner, bit for bit ("greedy", "greedy_no_overlap"),
// and the ExecuTorch suite ("suite": the smallest of greedy,
// greedy_no_overlap and naive on one pool).
//
// The algorithm, as ExecuTorch's exir/memory_planning.py runs it:
//  1. Order. Buffers that own storage (no inplace_base) are sorted by
//     nbytes rounded up to 16 -- the spec's default alignment, not the
//     planning one -- descending; ties in REVERSE insertion order (Python's
//     bisect.insort keeps ties in insertion order, then the list is
//     reversed).
//  2. Pick a shared object for each buffer, in that order:
//     (a) the first object, in creation order, none of whose allocations
//         overlaps the buffer in time: place it at offset 0 of that object;
//     (b) else, when overlapping allocations are allowed ("greedy", not
//         "greedy_no_overlap"): the first object where
//         top = max(offset + size) over its time-overlapping allocations is
//         > 0 and top + size <= object size: place it at `top`;
//     (c) else a new object of exactly the buffer's size.
//     Objects never grow, so (a) relies on the order: an object is never
//     smaller than a later buffer (with alignment < 16 that can fail in
//     ExecuTorch, which then raises; here the buffer simply does not fit
//     and (b)/(c) apply -- the layout stays safe either way).
//  3. Materialize: objects back to back in creation order after the
//     reserved prefix; extra_padding at the end. mem_obj_id = object index.
//  4. In-place buffers (inplace_base) take their chain root's object and
//     offset, ignoring their own lifetime (ExecuTorch defect 3; kept here
//     because these algorithms must match ExecuTorch exactly).
//
// Cost: ExecuTorch scans every allocation of every object, O(n^2). Here:
//  - (a) reads an index of idle objects (IdleIndex below: one bit per
//    object at the nodes of a segment tree over time), so it costs
//    O(log n) words of 64 objects each, plus the few allocations that
//    start or end in the buffer's first and last leaf -- not the
//    allocations live beside the buffer. With m objects: O(log n * m/64)
//    word operations; m stays near the most buffers live at once divided
//    by a few (about 600-1,100 on the dense lists of docs/benchmarks.md),
//    so this is 10-20 words a node.
//  - (b) runs only when (a) finds nothing (10-35% of the buffers on those
//    lists). It reads the allocations live beside the buffer from time
//    buckets (time compressed to the ranks of the distinct start/end
//    values, buckets a quarter of a mean lifetime wide; each bucket lists
//    the allocations alive in it and, apart, those starting in it): O(k)
//    for k allocations alive during the buffer's lifetime. This is what
//    remains proportional to the live set.
// Same choices, same result as the straight transcription (tested on
// random lists against one).
#include <algorithm>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

#include "algorithms/greedy.h"
#include "memplan/algorithm.h"

namespace memplan {

std::unique_ptr<Algorithm> makeNaiveAlgorithm();  // naive.cpp


namespace {

constexpr Bytes kSortAlignment = 16;  // ExecuTorch's default spec alignment

// Which objects are busy over a lifetime, for step 2(a), at a cost that
// does not grow with the number of allocations live there.
//
// Time ranks are cut into leaves of a few ranks each; a segment tree
// stands over the leaves. Objects are bits (64 to a word, one array of
// words per 64 objects). An allocation over [rs, re) covers a run of whole
// leaves and touches up to two more in part:
//  - at the O(log) nodes that make up its whole leaves, the object's bit
//    goes into `covered` (an allocation over all of the node's time) and
//    into `touched` (some allocation over part of the node's time) of that
//    node and of every node above it;
//  - at a leaf it touches in part, the allocation goes into the leaf's
//    list, and the bit into `touched` of the leaf and every node above.
// A lifetime [rs, re) meets an object's allocation exactly when the bit
// is in `touched` of one of the nodes that make up its whole leaves, or in
// `covered` of a node above (or at) its first or last leaf, or the
// allocation is in the list of a leaf it only partly covers and shares
// time with it. So the busy objects are the OR of O(log n) words per 64
// objects, plus the few allocations that start or end in two leaves.
class IdleIndex {
 public:
  // rs/re: every buffer's lifetime in ranks; `ranks` distinct times.
  void init(const std::vector<std::int32_t>& rs, const std::vector<std::int32_t>& re,
            std::size_t ranks) {
    const std::size_t n = rs.size();
    // Most allocations live at once (a bound on objects busy at one time).
    std::vector<std::int32_t> delta(ranks + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      ++delta[static_cast<std::size_t>(rs[i])];
      --delta[static_cast<std::size_t>(std::max(rs[i], re[i]))];
    }
    std::int64_t live = 0, most = 0;
    for (std::int32_t d : delta) most = std::max(most, live += d);
    // Leaves of about 8 starts and ends each (few partial allocations to
    // read), but no more leaves than keep the words within about n (8
    // bytes a buffer; objects are rarely many more than the most live at
    // once).
    width_ = n ? std::max<std::size_t>(1, 4 * ranks / n) : 1;
    const auto words_per_node = static_cast<std::size_t>(most / 64 + 1);
    const std::size_t max_leaves = std::max<std::size_t>(1, n / (8 * words_per_node));
    width_ = std::max(width_, (ranks + max_leaves - 1) / max_leaves);
    leaves_ = ranks / width_ + 1;
    size_ = 1;
    while (size_ < leaves_) size_ *= 2;
    part_.resize(leaves_);
    // Each leaf's list reserved to what it will hold (every buffer is
    // placed once): no room left over from growth by doubling.
    std::vector<std::uint32_t> parts(leaves_, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const Span q = spanOf(rs[i], re[i]);
      for (int k = 0; k < q.nparts; ++k) ++parts[q.parts[k]];
    }
    for (std::size_t l = 0; l < leaves_; ++l) part_[l].reserve(parts[l]);
    stride_ = words_per_node;
    bits_.assign(4 * size_ * stride_, 0);
  }

  // Objects with an allocation over [rs, re) as bits: busy()[o / 64].
  // `objects` objects exist.
  const std::vector<std::uint64_t>& busy(std::int32_t rs, std::int32_t re, std::size_t objects,
                                         std::uint64_t& work) {
    const std::size_t words = (objects + 63) / 64;
    busy_.assign(words, 0);
    if (words == 0) return busy_;
    const Span q = spanOf(rs, re);
    nodes_.clear();
    paths_.clear();
    for (std::size_t l = q.fs + size_, r = q.fe + size_; l < r; l >>= 1, r >>= 1) {
      if (l & 1) nodes_.push_back(l++);
      if (r & 1) nodes_.push_back(--r);
    }
    // The nodes above the first and the last leaf (the same from where
    // the two paths meet).
    for (std::size_t a = q.ls + size_, b = q.le + size_; a >= 1; a >>= 1, b >>= 1) {
      paths_.push_back(a);
      if (b != a) paths_.push_back(b);
    }
    // Row by row: a node's words for all objects lie side by side.
    std::uint64_t* out = busy_.data();
    for (std::size_t v : nodes_) {
      const std::uint64_t* t = row(v, kTouched);
      for (std::size_t k = 0; k < words; ++k) out[k] |= t[k];
    }
    for (std::size_t v : paths_) {
      const std::uint64_t* c = row(v, kCovered);
      for (std::size_t k = 0; k < words; ++k) out[k] |= c[k];
    }
    work += words * (nodes_.size() + paths_.size());
    for (int k = 0; k < q.nparts; ++k) {
      const auto& list = part_[q.parts[k]];
      for (const Part& a : list) {
        const bool live = a.rs < re && a.re > rs;
        busy_[static_cast<std::size_t>(a.obj) / 64] |= std::uint64_t{live} << (a.obj % 64);
      }
      work += list.size();
    }
    return busy_;
  }

  void add(std::int32_t rs, std::int32_t re, std::int32_t obj) {
    const auto o = static_cast<std::size_t>(obj);
    if (o / 64 >= stride_) grow(2 * stride_);
    const std::size_t w = o / 64;
    const std::uint64_t bit = std::uint64_t{1} << (o % 64);
    auto touch = [&](std::size_t v) {
      for (; v >= 1 && !(row(v, kTouched)[w] & bit); v >>= 1) row(v, kTouched)[w] |= bit;
    };
    const Span q = spanOf(rs, re);
    for (std::size_t l = q.fs + size_, r = q.fe + size_; l < r; l >>= 1, r >>= 1) {
      if (l & 1) {
        row(l, kCovered)[w] |= bit;
        touch(l++);
      }
      if (r & 1) {
        row(--r, kCovered)[w] |= bit;
        touch(r);
      }
    }
    for (int k = 0; k < q.nparts; ++k) {
      part_[q.parts[k]].push_back(Part{rs, re, obj});
      touch(q.parts[k] + size_);
    }
  }

 private:
  struct Part {
    std::int32_t rs, re, obj;
  };
  // [rs, re) in leaves: the leaves it touches [ls, le], of which it covers
  // [fs, fe) whole and up to two in part.
  struct Span {
    std::size_t ls, le, fs, fe;
    std::size_t parts[2];
    int nparts;
  };
  Span spanOf(std::int32_t rs, std::int32_t re) const {
    const auto s = static_cast<std::size_t>(rs);
    const auto e = static_cast<std::size_t>(std::max(rs + 1, re));
    Span q{};
    q.ls = s / width_;
    q.le = (e - 1) / width_;
    q.fs = (s + width_ - 1) / width_;
    q.fe = std::max(q.fs, e / width_);
    auto whole = [&](std::size_t leaf) { return q.fs <= leaf && leaf < q.fe; };
    if (!whole(q.ls)) q.parts[q.nparts++] = q.ls;
    if (q.le != q.ls && !whole(q.le)) q.parts[q.nparts++] = q.le;
    return q;
  }
  static constexpr std::size_t kTouched = 0, kCovered = 1;
  std::uint64_t* row(std::size_t v, std::size_t kind) {
    return bits_.data() + (2 * v + kind) * stride_;
  }
  // Room for `stride` words a row (objects beyond the estimate).
  void grow(std::size_t stride) {
    std::vector<std::uint64_t> bits(4 * size_ * stride, 0);
    for (std::size_t r = 0; r < 4 * size_; ++r)
      std::copy_n(bits_.data() + r * stride_, stride_, bits.data() + r * stride);
    bits_ = std::move(bits);
    stride_ = stride;
  }

  std::size_t width_ = 1, leaves_ = 1, size_ = 1;
  // Per node two rows of stride_ words (bit o of a row: object o):
  // touched, covered.
  std::size_t stride_ = 1;
  std::vector<std::uint64_t> bits_;
  std::vector<std::vector<Part>> part_;                        // per leaf
  std::vector<std::uint64_t> busy_;                            // scratch
  std::vector<std::size_t> nodes_, paths_;                     // scratch
};

// ExecuTorch's shared objects and their allocations, indexed for steps
// 2(a)-(c) (see the header).
class Objects {
 public:
  explicit Objects(const PoolProblem& problem) : bufs_(problem.buffers) {
    const std::size_t n = bufs_.size();
    std::vector<TimeValue> times;
    times.reserve(2 * n);
    for (const Buffer& b : bufs_) {
      times.push_back(b.start);
      times.push_back(b.end);
    }
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
    rs_.resize(n);
    re_.resize(n);
    std::uint64_t span = 0;
    for (std::size_t i = 0; i < n; ++i) {
      rs_[i] = rank(times, bufs_[i].start);
      re_[i] = rank(times, bufs_[i].end);
      span += static_cast<std::uint64_t>(std::max(1, re_[i] - rs_[i]));
    }
    // A quarter of the mean lifetime: a buffer reads its first bucket's
    // whole list, so narrower buckets read fewer dead allocations (dense
    // lists of 100k buffers: half the time of one lifetime wide) at the
    // price of an allocation stored in a few more buckets.
    width_ = n ? std::max<std::size_t>(1, static_cast<std::size_t>(span / n / 4)) : 1;
    buckets_.resize(times.size() / width_ + 1);
    // Room for every buffer's allocation once, reserved up front: lists
    // grown by doubling would hold up to twice that (1M-buffer lists:
    // hundreds of MB).
    std::vector<std::uint32_t> all(buckets_.size(), 0), own(buckets_.size(), 0);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t first = bucketOf(rs_[i]), last = bucketOf(std::max(rs_[i], re_[i] - 1));
      ++own[first];
      for (std::size_t k = first; k <= last; ++k) ++all[k];
    }
    for (std::size_t k = 0; k < buckets_.size(); ++k) {
      buckets_[k].all.reserve(all[k]);
      buckets_[k].own.reserve(own[k]);
    }
    leaves_ = 1;
    while (leaves_ < n) leaves_ *= 2;
    max_size_.assign(2 * leaves_, 0);
    mark_.reserve(n);
    idle_.init(rs_, re_, times.size());
  }

  // Where buffer b goes: (object, offset inside it); creates the object
  // when none fits.
  std::pair<std::int32_t, Offset> pick(BufferId b, bool allow_overlapping) {
    const Bytes size = bufs_[b].size;
    const std::int32_t rs = rs_[b], re = re_[b];
    // (a) from the index of idle objects, without reading the allocations.
    const std::int32_t idle = firstIdle(rs, re, size);
    if (idle != kNone) {
      add(rs, re, idle, size);
      return {idle, 0};
    }
    std::int32_t picked = kNone;
    Offset at = 0;
    if (allow_overlapping) std::tie(picked, at) = pickStacked(rs, re, size);
    // (c) a new object of exactly this size.
    if (picked == kNone) {
      picked = static_cast<std::int32_t>(size_.size());
      size_.push_back(size);
      mark_.push_back(0);
      for (std::size_t i = leaves_ + static_cast<std::size_t>(picked); i >= 1; i /= 2)
        max_size_[i] = std::max(max_size_[i], size);
    }
    add(rs, re, picked, at + size);
    return {picked, at};
  }

  std::size_t count() const { return size_.size(); }
  Bytes size(std::size_t o) const { return size_[o]; }
  std::uint64_t work() const { return work_; }

 private:
  // An allocation of `obj` over ranks [rs, re) reaching `top`, in both
  // indexes.
  void add(std::int32_t rs, std::int32_t re, std::int32_t obj, Offset top) {
    const Alloc a{rs, re, obj, top};
    const std::size_t first = bucketOf(rs), last = bucketOf(std::max(rs, re - 1));
    buckets_[first].own.push_back(a);
    for (std::size_t k = first; k <= last; ++k) buckets_[k].all.push_back(a);
    idle_.add(rs, re, obj);
    ++work_;
  }

  // (a): the first object at least `size` large with no allocation over
  // [rs, re): alternately the next large enough object and the next idle
  // one, until they agree.
  std::int32_t firstIdle(std::int32_t rs, std::int32_t re, Bytes size) {
    const std::size_t count = size_.size();
    const std::vector<std::uint64_t>& busy = idle_.busy(rs, re, count, work_);
    std::size_t from = 0;
    while (true) {
      const std::int32_t big = nextAtLeast(static_cast<std::int32_t>(from), size);
      if (big == kNone) return kNone;
      // The first idle object at or after `big`.
      std::size_t o = static_cast<std::size_t>(big);
      std::size_t w = o / 64;
      std::uint64_t free = ~busy[w] & (~std::uint64_t{0} << (o % 64));
      while (free == 0 && ++w < busy.size()) free = ~busy[w];
      ++work_;
      if (free == 0) return kNone;
      o = w * 64 + static_cast<std::size_t>(__builtin_ctzll(free));
      if (o >= count) return kNone;
      if (o == static_cast<std::size_t>(big)) return big;
      from = o;
    }
  }

  // (b): the first busy object with room above its live allocations, read
  // from the allocations live beside [rs, re) (kNone: none).
  std::pair<std::int32_t, Offset> pickStacked(std::int32_t rs, std::int32_t re, Bytes size) {
    // The allocations live beside b: their objects are busy; tops per
    // object. Branch-free: whether an allocation is live, and whether its
    // object is new to the query, are data the branch predictor cannot
    // guess (an object holds one or two live allocations on dense lists).
    const std::size_t first = bucketOf(rs), last = bucketOf(std::max(rs, re - 1));
    if (busy_.size() < size_.size() + 1) busy_.resize(size_.size() + 1);
    std::size_t nb = 0;
    auto visit = [&](const Alloc& a, bool live) {
      const auto o = static_cast<std::size_t>(a.obj);
      const Offset cur = mark_[o];
      busy_[nb] = a.obj;
      nb += static_cast<std::size_t>(int{live} & int{cur == 0});
      const Offset v = (a.top + 1) & (Offset{0} - Offset{live});
      mark_[o] = std::max(cur, v);
    };
    const auto& all = buckets_[first].all;
    for (const Alloc& a : all) visit(a, static_cast<bool>(int{a.rs < re} & int{a.re > rs}));
    work_ += all.size();
    for (std::size_t k = first + 1; k <= last; ++k) {
      for (const Alloc& a : buckets_[k].own) visit(a, a.rs < re);
      work_ += buckets_[k].own.size();
    }
    std::int32_t picked = kNone;
    Offset at = 0;
    {
      for (std::size_t k = 0; k < nb; ++k) {
        const std::int32_t o = busy_[k];
        const Bytes osize = size_[o];
        const Offset top = mark_[static_cast<std::size_t>(o)] - 1;
        if (osize <= size || top == 0 || size > osize - top) continue;
        if (picked == kNone || o < picked) {
          picked = o;
          at = top;
        }
      }
    }
    for (std::size_t k = 0; k < nb; ++k) mark_[static_cast<std::size_t>(busy_[k])] = 0;
    return {picked, at};
  }

  // Packed (20 bytes, not 24): the lists are read end to end for every
  // buffer, and on large lists that reading is bound by memory bandwidth.
  struct __attribute__((packed)) Alloc {
    std::int32_t rs, re;  // lifetime in time ranks
    std::int32_t obj;
    Offset top;           // offset + size inside the object
  };
  struct Bucket {
    std::vector<Alloc> all, own;  // alive in the bucket / starting in it
  };
  static std::int32_t rank(const std::vector<TimeValue>& times, TimeValue t) {
    return static_cast<std::int32_t>(std::lower_bound(times.begin(), times.end(), t) -
                                     times.begin());
  }
  std::size_t bucketOf(std::int32_t r) const { return static_cast<std::size_t>(r) / width_; }

  // The first object >= from (creation order) of size >= size, or kNone.
  std::int32_t nextAtLeast(std::int32_t from, Bytes size) const {
    const std::size_t count = size_.size();
    if (static_cast<std::size_t>(from) >= count) return kNone;
    // Walk up from the leaf until a right sibling subtree holds a match,
    // then down to its leftmost match.
    std::size_t i = leaves_ + static_cast<std::size_t>(from);
    if (max_size_[i] >= size) return from;
    while (i > 1) {
      if ((i & 1) == 0 && max_size_[i + 1] >= size) {
        i = i + 1;
        while (i < leaves_) i = max_size_[2 * i] >= size ? 2 * i : 2 * i + 1;
        const std::size_t o = i - leaves_;
        return o < count ? static_cast<std::int32_t>(o) : kNone;
      }
      i /= 2;
    }
    return kNone;
  }

  const std::vector<Buffer>& bufs_;
  std::vector<std::int32_t> rs_, re_;
  std::size_t width_ = 1;
  std::vector<Bucket> buckets_;
  std::vector<Bytes> size_;          // per object
  // Per object during a query: 0 when idle, else 1 + the top of its live
  // allocations (zero again after the query).
  std::vector<Offset> mark_;
  std::vector<std::int32_t> busy_;   // the busy objects of the query: [0, nb)
  std::size_t leaves_ = 1;
  std::vector<Bytes> max_size_;      // max-size tree over objects
  IdleIndex idle_;
  std::uint64_t work_ = 0;
};

}  // namespace

namespace detail {

PoolSolution executorchGreedy(const PoolProblem& problem, bool allow_overlapping,
                              const std::atomic<bool>* stop) {
  const std::vector<BufferId> root = detail::inplaceRoots(problem);
  const auto& bufs = problem.buffers;
  const auto n = static_cast<BufferId>(bufs.size());

  // 1. Order: key descending, ties by insertion index descending.
  std::vector<BufferId> order;
  order.reserve(n);
  std::vector<Bytes> key(n, 0);
  for (BufferId i = 0; i < n; ++i) {
    if (root[i] != i) continue;
    // nbytes is 0 only for empty specs (then size is 0 too); buffer lists
    // without nbytes sort on their size.
    const Bytes raw = bufs[i].nbytes != 0 ? bufs[i].nbytes : bufs[i].size;
    key[i] = alignUp(raw, kSortAlignment).value_or(kMaxBytes);
    order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](BufferId a, BufferId b) {
    return key[a] != key[b] ? key[a] > key[b] : a > b;
  });

  // 2. Shared objects.
  Objects objects(problem);
  std::vector<Offset> local(n, 0);  // offset inside the object
  std::vector<std::int32_t> obj_of(n, kNone);
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (stop && (k & 1023) == 0 && stop->load(std::memory_order_relaxed)) return {};
    const BufferId b = order[k];
    const auto [picked, at] = objects.pick(b, allow_overlapping);
    local[b] = at;
    obj_of[b] = picked;
  }
  const std::uint64_t work = objects.work();

  // 3. Materialize after the reserved prefix.
  PoolSolution sol;
  sol.algorithm = allow_overlapping ? "greedy" : "greedy_no_overlap";
  sol.work = work;
  Bytes end = problem.reserved;
  std::vector<Offset> object_offset(objects.count());
  for (std::size_t o = 0; o < objects.count(); ++o) {
    object_offset[o] = end;
    const auto grown = checkedAdd(end, objects.size(o));
    if (!grown) throw PlanError(fmt::format("pool {}: size exceeds {} bytes", problem.mem_id, kMaxBytes));
    end = *grown;
  }
  if (!order.empty()) {
    const auto padded = checkedAdd(end, problem.extra_padding);
    if (!padded) throw PlanError(fmt::format("pool {}: size exceeds {} bytes", problem.mem_id, kMaxBytes));
    end = *padded;
  }
  sol.size = end;

  // 4. Offsets; in-place buffers follow their root.
  sol.offsets.assign(n, 0);
  sol.mem_obj_ids.assign(n, 0);
  for (BufferId i = 0; i < n; ++i) {
    const BufferId r = root[i];
    sol.offsets[i] = object_offset[obj_of[r]] + local[r];
    sol.mem_obj_ids[i] = obj_of[r];
  }
  return sol;
}

}  // namespace detail

namespace {

class ExecutorchGreedy final : public Algorithm {
 public:
  explicit ExecutorchGreedy(bool allow_overlapping)
      : allow_overlapping_(allow_overlapping) {}

  const AlgorithmInfo& info() const override {
    static const AlgorithmInfo kGreedy{
        .name = "greedy",
        .summary = "ExecuTorch's greedy, bit-exact (shared objects, overlapping allocations)",
        .executorch_exact = true,
        .layout = BufsizesLayout::ExecutorchGreedy,
        .honours_pins = false};
    static const AlgorithmInfo kNoOverlap{
        .name = "greedy_no_overlap",
        .summary = "ExecuTorch's greedy without overlapping allocations, bit-exact",
        .executorch_exact = true,
        .layout = BufsizesLayout::ExecutorchGreedy,
        .honours_pins = false};
    return allow_overlapping_ ? kGreedy : kNoOverlap;
  }

  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams&) const override {
    PoolSolution sol = detail::executorchGreedy(problem, allow_overlapping_, nullptr);
    sol.algorithm = std::string(name());
    return sol;
  }

 private:
  bool allow_overlapping_;
};

// ExecuTorch's MemoryPlanningAlgorithmSuite on one pool: every algorithm,
// keep the smallest, first wins ties. The winner is named in the solution.
class ExecutorchSuite final : public Algorithm {
 public:
  const AlgorithmInfo& info() const override {
    static const AlgorithmInfo kInfo{
        .name = "suite",
        .summary = "ExecuTorch's algorithm suite, bit-exact: greedy, greedy_no_overlap, naive on "
                   "the whole graph; keeps the smallest sum of bufsizes",
        .executorch_exact = true,
        .layout = BufsizesLayout::ExecutorchGreedy,
        .honours_pins = false,
        .selects = true,
        .whole_graph_candidates = {"greedy", "greedy_no_overlap", "naive"}};
    return kInfo;
  }
  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams& params) const override {
    PoolSolution best = ExecutorchGreedy(true).solve(problem, params);
    std::uint64_t work = best.work;
    PoolSolution other = ExecutorchGreedy(false).solve(problem, params);
    work += other.work;
    if (other.size < best.size) best = std::move(other);
    PoolSolution naive = makeNaiveAlgorithm()->solve(problem, params);
    work += naive.work;
    if (naive.size < best.size) best = std::move(naive);
    best.work = work;
    return best;
  }
};

}  // namespace

std::unique_ptr<Algorithm> makeGreedyAlgorithm() {
  return std::make_unique<ExecutorchGreedy>(true);
}
std::unique_ptr<Algorithm> makeGreedyNoOverlapAlgorithm() {
  return std::make_unique<ExecutorchGreedy>(false);
}
std::unique_ptr<Algorithm> makeExecutorchSuiteAlgorithm() {
  return std::make_unique<ExecutorchSuite>();
}

}  // namespace memplan

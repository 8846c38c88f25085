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
// Cost: ExecuTorch scans every allocation of every object, O(n^2). Here
// each object keeps its allocations sorted by start, so only those that can
// overlap the buffer in time are looked at (a window found by binary
// search); its lifetime hull skips even that when the buffer lies outside
// it, and (b) skips objects not larger than the buffer. Same choices,
// same result.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "memplan/algorithm.h"

namespace memplan {

std::unique_ptr<Algorithm> makeNaiveAlgorithm();  // naive.cpp

namespace detail {

// Root of each buffer's inplace_base chain (itself when it has none).
// Throws InputError on a dangling index or a cycle.
std::vector<BufferId> inplaceRoots(const PoolProblem& problem) {
  const auto n = static_cast<BufferId>(problem.buffers.size());
  std::vector<BufferId> root(n, kNone);
  for (BufferId i = 0; i < n; ++i) {
    BufferId r = i;
    BufferId steps = 0;
    while (problem.buffers[r].inplace_base != kNone) {
      const BufferId next = problem.buffers[r].inplace_base;
      if (next < 0 || next >= n)
        throw InputError(fmt::format("pool {}: buffer '{}': inplace_base {} out of range",
                                     problem.mem_id, problem.buffers[r].name, next));
      if (root[next] != kNone) {  // already resolved
        r = root[next];
        break;
      }
      r = next;
      if (++steps > n)
        throw InputError(fmt::format("pool {}: buffer '{}': inplace_base chain forms a cycle",
                                     problem.mem_id, problem.buffers[i].name));
    }
    root[i] = r;
  }
  return root;
}

}  // namespace detail

namespace {

constexpr Bytes kSortAlignment = 16;  // ExecuTorch's default spec alignment

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

    // 2. Shared objects. Each keeps its allocations sorted by start and its
    // longest lifetime, so the allocations that can overlap [s, e) are the
    // window with start in (s - longest, e): a binary search, not a scan.
    struct Alloc {
      TimeValue start, end;
      Offset top;                     // offset + size inside the object
    };
    struct Object {
      Bytes size = 0;
      TimeValue first = 0, last = 0;  // hull of the allocations' lifetimes
      TimeValue longest = 0;
      std::vector<Alloc> allocs;      // by start
      Offset offset = 0;              // materialized position
    };
    std::vector<Object> objects;
    objects.reserve(order.size());
    std::vector<Offset> local(n, 0);  // offset inside the object
    std::vector<std::int32_t> obj_of(n, kNone);
    std::uint64_t work = 0;

    auto window = [](const Object& obj, TimeValue s, TimeValue e) {
      auto lo = std::partition_point(obj.allocs.begin(), obj.allocs.end(),
                                     [&](const Alloc& a) { return a.start <= s - obj.longest; });
      auto hi = std::partition_point(lo, obj.allocs.end(),
                                     [&](const Alloc& a) { return a.start < e; });
      return std::make_pair(lo, hi);
    };

    for (BufferId b : order) {
      const Bytes size = bufs[b].size;
      const TimeValue s = bufs[b].start, e = bufs[b].end;
      const auto count = static_cast<std::int32_t>(objects.size());
      std::int32_t picked = kNone;
      Offset at = 0;
      // (a) first object with no time-overlapping allocation. Objects never
      // grow: a buffer larger than the object cannot go in (ExecuTorch
      // asserts here instead; see the header).
      for (std::int32_t o = 0; o < count && picked == kNone; ++o) {
        const Object& obj = objects[o];
        if (size > obj.size) continue;
        bool free = e <= obj.first || obj.last <= s;
        if (!free) {
          free = true;
          const auto [lo, hi] = window(obj, s, e);
          for (auto a = lo; a != hi; ++a) {
            ++work;
            if (a->end > s) { free = false; break; }
          }
        }
        if (free) picked = o;
      }
      // (b) first object with room above its overlapping allocations
      // (top > 0 and top + size <= object size needs size < object size).
      if (picked == kNone && allow_overlapping_) {
        for (std::int32_t o = 0; o < count && picked == kNone; ++o) {
          const Object& obj = objects[o];
          if (obj.size <= size) continue;
          Offset top = 0;
          const auto [lo, hi] = window(obj, s, e);
          for (auto a = lo; a != hi; ++a) {
            ++work;
            if (a->end > s) top = std::max(top, a->top);
          }
          if (top > 0 && size <= obj.size - top) {
            picked = o;
            at = top;
          }
        }
      }
      // (c) a new object of exactly this size.
      if (picked == kNone) {
        objects.push_back(Object{});
        objects.back().size = size;
        objects.back().first = s;
        objects.back().last = e;
        picked = count;
        at = 0;
      }
      Object& obj = objects[picked];
      obj.first = std::min(obj.first, s);
      obj.last = std::max(obj.last, e);
      obj.longest = std::max(obj.longest, e - s);
      const auto pos = std::partition_point(obj.allocs.begin(), obj.allocs.end(),
                                            [&](const Alloc& a) { return a.start <= s; });
      obj.allocs.insert(pos, Alloc{s, e, at + size});
      local[b] = at;
      obj_of[b] = picked;
    }

    // 3. Materialize after the reserved prefix.
    PoolSolution sol;
    sol.algorithm = std::string(name());
    sol.work = work;
    Bytes end = problem.reserved;
    for (Object& obj : objects) {
      obj.offset = end;
      const auto grown = checkedAdd(end, obj.size);
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
      sol.offsets[i] = objects[obj_of[r]].offset + local[r];
      sol.mem_obj_ids[i] = obj_of[r];
    }
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

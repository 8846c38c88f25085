// TensorFlow Lite Micro's GreedyMemoryPlanner, reproduced exactly
// ("tflm_greedy"): what a TFLM runtime would lay out for the same buffers.
//
// TFLM plans the head section of its arena like this
// (tensorflow/lite/micro/memory_planner/greedy_memory_planner.cc):
//  1. Buffers arrive in AddBuffer order (TFLM: tensor index order, then the
//     kernels' scratch buffers), each with a size already rounded up to 16
//     bytes and an inclusive lifetime [first_time_used, last_time_used].
//  2. Order: buffers with an offline offset first, in arrival order; then
//     the others by size, largest first. Equal sizes come in REVERSE arrival
//     order: TFLM fills its sort array with the online buffers from the
//     tail backwards, and its bubble sort only swaps strictly smaller
//     values forward (stable).
//  3. Each buffer in that order:
//     - offline: placed at its offset, unchecked (an offline plan may
//       overlap buffers on purpose);
//     - online: the buffers placed so far are walked in offset order (equal
//       offsets: the earlier placed first), looking only at those alive at
//       some common step. The candidate starts at 0 and moves to the end of
//       each of them it passes; the buffer goes into the first gap between
//       the candidate and the next one that holds it, else after the last.
//  4. The arena is the high-water mark, max(offset + size).
//
// memplan's side: a Buffer's half-open [start, end) is TFLM's inclusive
// [start, end - 1] (the same overlaps). Pins (fixed_offset) are the offline
// offsets. In-place groups, which TFLM does not have, are merged into one
// buffer first (hull of the lifetimes, largest size). The reserved prefix is
// the floor instead of 0, a candidate is rounded up to the buffer's
// alignment (a no-op when every size is a multiple of one alignment, as in
// TFLM), and extra_padding follows the high-water mark.
//
// Cost: TFLM walks the whole offset list for every buffer, O(n^2). Here the
// placed buffers alive during a new buffer's lifetime are found directly --
// those that started before it by a stabbing query on a segment tree over
// the start steps, the others from a start-ordered index -- and sorted by
// (offset, placement order): the list TFLM filters, in TFLM's order, so the
// same offsets in O(n log n + sum of k log k), k = placed buffers that
// overlap the new one in time.
#include <algorithm>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "memplan/algorithm.h"

namespace memplan {
namespace detail {
std::vector<BufferId> inplaceRoots(const PoolProblem& problem);  // pool_util.cpp
}  // namespace detail

namespace {

struct Group {
  TimeValue start = 0, end = 0;  // half-open
  Bytes size = 0;
  Bytes alignment = 1;
  std::optional<Offset> offline;
};

// Placed groups that started at or before a step and are still alive
// there: a segment tree over the distinct start steps, each placed group
// stored in the O(log n) nodes covering the starts inside its lifetime.
class StabIndex {
 public:
  explicit StabIndex(std::vector<TimeValue> starts) : starts_(std::move(starts)) {
    size_ = 1;
    while (size_ < starts_.size()) size_ *= 2;
    nodes_.resize(2 * size_);
  }
  void insert(BufferId id, TimeValue start, TimeValue end) {
    std::size_t lo = index(start);
    std::size_t hi = static_cast<std::size_t>(
        std::lower_bound(starts_.begin(), starts_.end(), end) - starts_.begin());
    for (lo += size_, hi += size_; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1) nodes_[lo++].push_back(id);
      if (hi & 1) nodes_[--hi].push_back(id);
    }
  }
  // Appends every stored group whose lifetime covers `step` (a start step).
  void stab(TimeValue step, std::vector<BufferId>& out) const {
    for (std::size_t n = index(step) + size_; n >= 1; n /= 2)
      out.insert(out.end(), nodes_[n].begin(), nodes_[n].end());
  }

 private:
  std::size_t index(TimeValue step) const {
    return static_cast<std::size_t>(std::lower_bound(starts_.begin(), starts_.end(), step) -
                                    starts_.begin());
  }
  std::vector<TimeValue> starts_;  // sorted, distinct
  std::size_t size_ = 1;
  std::vector<std::vector<BufferId>> nodes_;
};

// In-place groups as TFLite Micro sees them: one buffer each.
struct Grouped {
  std::vector<BufferId> group_of;  // buffer -> group
  std::vector<Group> groups;       // in arrival order of their roots
};

// Step 1: in-place groups -> one buffer each, in arrival order of their
// roots; pins must agree within a group.
Grouped groupInPlace(const PoolProblem& problem) {
  const std::vector<BufferId> root = detail::inplaceRoots(problem);
  const auto n = static_cast<BufferId>(problem.buffers.size());
  Grouped out;
  std::vector<BufferId>& group_of = out.group_of;
  std::vector<Group>& groups = out.groups;

  // In-place groups -> one buffer each, in arrival order of their roots.
  group_of.assign(n, kNone);
  std::vector<std::string_view> group_name;
  for (BufferId i = 0; i < n; ++i) {
    if (root[i] != i) continue;
    group_of[i] = static_cast<BufferId>(groups.size());
    groups.emplace_back();
    group_name.push_back(problem.buffers[i].name);
  }
  std::vector<bool> seen(groups.size(), false);
  for (BufferId i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    const BufferId g = group_of[root[i]];
    group_of[i] = g;
    Group& grp = groups[g];
    if (!seen[g]) {
      seen[g] = true;
      grp.start = b.start;
      grp.end = b.end;
    }
    grp.start = std::min(grp.start, b.start);
    grp.end = std::max(grp.end, b.end);
    grp.size = std::max(grp.size, b.size);
    grp.alignment = std::max<Bytes>({grp.alignment, b.alignment, 1});
    if (b.fixed_offset) {
      if (grp.offline && *grp.offline != *b.fixed_offset)
        throw InputError(fmt::format("pool {}: '{}' shares storage with '{}' but is pinned at {} "
                                     "instead of {}",
                                     problem.mem_id, b.name, group_name[g], *b.fixed_offset,
                                     *grp.offline));
      if (*b.fixed_offset > kMaxBytes || grp.size > kMaxBytes - *b.fixed_offset)
        throw PlanError(fmt::format("pool {}: '{}' pinned at {} overflows", problem.mem_id,
                                    b.name, *b.fixed_offset));
      grp.offline = b.fixed_offset;
    }
  }
  for (Group& g : groups)
    if (g.end <= g.start) g.end = g.start + 1;  // an empty lifetime still needs a home

  return out;
}

std::vector<BufferId> placementOrder(const std::vector<Group>& groups) {
  // Step 2: offline first in arrival order, then online by size
  // descending, ties in reverse arrival order.
  std::vector<BufferId> order;
  order.reserve(groups.size());
  for (BufferId g = 0; g < static_cast<BufferId>(groups.size()); ++g)
    if (groups[g].offline) order.push_back(g);
  const std::size_t online_from = order.size();
  for (BufferId g = static_cast<BufferId>(groups.size()) - 1; g >= 0; --g)
    if (!groups[g].offline) order.push_back(g);
  std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(online_from), order.end(),
                   [&](BufferId a, BufferId b) { return groups[a].size > groups[b].size; });

  return order;
}

// Step 3, online: the first gap among the time-overlapping placed groups
// `alive` (in TFLM's list order) that holds `want`.
Offset firstGap(const Group& want, const std::vector<BufferId>& alive, const std::vector<Group>& groups,
                const std::vector<Offset>& offset, const PoolProblem& problem) {
  const auto align = [&](Offset o) {
    const auto a = alignUp(o, want.alignment);
    if (!a) throw PlanError(fmt::format("pool {}: size exceeds {} bytes", problem.mem_id, kMaxBytes));
    return *a;
  };
  Offset candidate = align(problem.reserved);
  for (BufferId next : alive) {
    const Offset at = offset[next];
    if (at >= candidate && at - candidate >= want.size) break;
    candidate = align(std::max(candidate, at + groups[next].size));
  }
  if (candidate > kMaxBytes || want.size > kMaxBytes - candidate)
    throw PlanError(fmt::format("pool {}: size exceeds {} bytes", problem.mem_id, kMaxBytes));
  return candidate;
}

// Step 3: each group in `order` at its pin, or in the first gap among the
// placed groups alive with it. Adds the lists read to `work`.
std::vector<Offset> placeGroups(const PoolProblem& problem, const std::vector<Group>& groups,
                                const std::vector<BufferId>& order, std::uint64_t& work) {
  // Step 3.
  std::vector<TimeValue> starts;
  starts.reserve(groups.size());
  for (const Group& g : groups) starts.push_back(g.start);
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  StabIndex stab(std::move(starts));
  std::multimap<TimeValue, BufferId> by_start;     // placed groups
  std::vector<Offset> offset(groups.size(), 0);
  std::vector<std::uint64_t> placed_at(groups.size(), 0);  // placement sequence
  std::vector<BufferId> alive;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const BufferId g = order[k];
    const Group& want = groups[g];
    if (want.offline) {
      offset[g] = *want.offline;
    } else {
      alive.clear();
      stab.stab(want.start, alive);
      for (auto it = by_start.upper_bound(want.start);
           it != by_start.end() && it->first < want.end; ++it)
        alive.push_back(it->second);
      std::sort(alive.begin(), alive.end(), [&](BufferId a, BufferId b) {
        return std::pair(offset[a], placed_at[a]) < std::pair(offset[b], placed_at[b]);
      });
      work += alive.size() + 1;
      offset[g] = firstGap(want, alive, groups, offset, problem);
    }
    placed_at[g] = k;
    stab.insert(g, want.start, want.end);
    by_start.emplace(want.start, g);
  }

  return offset;
}

class TflmGreedy final : public Algorithm {
 public:
  const AlgorithmInfo& info() const override {
    static const AlgorithmInfo kInfo{
        .name = "tflm_greedy",
        .summary = "TensorFlow Lite Micro's GreedyMemoryPlanner, exact: offline (pinned) "
                   "first, then largest first, first gap",
        .honours_pins = true};
    return kInfo;
  }

  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams&) const override {
    const auto n = static_cast<BufferId>(problem.buffers.size());
    const Grouped grouped = groupInPlace(problem);
    const std::vector<Group>& groups = grouped.groups;
    const std::vector<BufferId>& group_of = grouped.group_of;
    std::uint64_t work = 0;
    const std::vector<Offset> offset = placeGroups(problem, groups, placementOrder(groups), work);

    PoolSolution sol;
    sol.algorithm = "tflm_greedy";
    sol.offsets.resize(n);
    sol.mem_obj_ids.assign(n, 0);
    Bytes top = problem.reserved;
    for (BufferId g = 0; g < static_cast<BufferId>(groups.size()); ++g)
      if (groups[g].size > 0) top = std::max(top, offset[g] + groups[g].size);
    for (BufferId i = 0; i < n; ++i) sol.offsets[i] = offset[group_of[i]];
    if (n > 0) {
      const auto padded = checkedAdd(top, problem.extra_padding);
      if (!padded) throw PlanError(fmt::format("pool {}: size exceeds {} bytes", problem.mem_id, kMaxBytes));
      top = *padded;
    }
    sol.size = top;
    sol.work = work;
    return sol;
  }
};

}  // namespace

std::unique_ptr<Algorithm> makeTflmGreedyAlgorithm() { return std::make_unique<TflmGreedy>(); }

}  // namespace memplan

// The "exact" algorithm: a quick best-fit placement gives an upper bound,
// then exact search (exact_search.h) lowers it toward the lower bound.
//
//  1. Merge in-place groups (pool_util.h).
//  2. Best-fit: buffers by size (descending, then longer lifetime first),
//     each at the lowest aligned offset where it clears every time-
//     overlapping buffer already placed and every pinned buffer.
//  3. minimizeHeight from that placement, with a node budget scaled by
//     AlgorithmParams::effort (deterministic) and the optional time cap.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "algorithms/exact_search.h"
#include "algorithms/pool_util.h"
#include "memplan/algorithm.h"

namespace memplan {
namespace {

// Lowest-gap best fit on a merged problem (no in-place pairs left).
std::vector<Offset> bestFit(const PoolProblem& p) {
  const std::size_t n = p.buffers.size();
  std::vector<Offset> off(n, 0);
  std::vector<std::size_t> order;
  std::vector<std::size_t> placed;
  for (std::size_t b = 0; b < n; ++b) {
    if (p.buffers[b].fixed_offset) {
      off[b] = *p.buffers[b].fixed_offset;
      placed.push_back(b);
    } else {
      order.push_back(b);
    }
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Buffer& x = p.buffers[a];
    const Buffer& y = p.buffers[b];
    if (x.size != y.size) return x.size > y.size;
    if (x.end - x.start != y.end - y.start) return x.end - x.start > y.end - y.start;
    return a < b;
  });
  std::vector<std::pair<Offset, Offset>> busy;  // reused: [lo, hi) taken
  for (std::size_t b : order) {
    const Buffer& buf = p.buffers[b];
    const Bytes align = std::max<Bytes>(1, buf.alignment);
    busy.clear();
    for (std::size_t o : placed)
      if (p.buffers[o].size > 0 && buf.overlaps(p.buffers[o]))
        busy.push_back({off[o], off[o] + p.buffers[o].size});
    std::sort(busy.begin(), busy.end());
    Offset x = alignUp(p.reserved, align).value_or(kMaxBytes);
    for (const auto& [lo, hi] : busy) {
      if (buf.size > 0 && x + buf.size <= lo) break;
      if (hi > x) x = alignUp(hi, align).value_or(kMaxBytes);
    }
    off[b] = x;
    placed.push_back(b);
  }
  return off;
}

class ExactAlgorithm : public Algorithm {
 public:
  const AlgorithmInfo& info() const override {
    static const AlgorithmInfo kInfo{
        .name = "exact",
        .summary = "branch-and-bound search from the best heuristic plan toward the lower bound"};
    return kInfo;
  }
  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams& params) const override {
    const pool::MergedProblem merged = pool::mergeInplace(problem);
    // Start from the best heuristic plan (auto without its exact stage: the
    // best-fit portfolio, ExecuTorch's greedy when safe, local search), so
    // the search never ends above any heuristic; minimizeHeight needs a
    // placement of the merged groups, which greedy's may not be.
    AlgorithmParams heuristic = params;
    heuristic.use_exact_search = false;
    heuristic.progress = nullptr;
    std::vector<Offset> start = makeAlgorithm("auto")->solve(problem, heuristic).offsets;
    if (!pool::checkPlacement(problem, start).empty())
      start = pool::expandOffsets(merged, bestFit(merged.problem));
    const Bytes lb = lowerBound(problem);
    exact::ExactParams ep;
    const double scaled = std::max(0.0, params.effort) * static_cast<double>(ep.node_limit);
    ep.node_limit = static_cast<std::uint64_t>(std::min(scaled, 1e15));
    ep.time_limit_seconds = params.time_limit_seconds;
    // The bound counts extra_padding; the search works on the bare height.
    const Bytes bare_lb = problem.buffers.empty() ? lb : lb - std::min(lb, problem.extra_padding);
    const exact::ExactResult r = exact::minimizeHeight(problem, start, bare_lb, ep);
    PoolSolution s = pool::makeSolution(problem, r.offsets, "exact", lb, r.nodes);
    s.proven_optimal = s.proven_optimal || r.proven_optimal;
    return s;
  }
};

}  // namespace

std::unique_ptr<Algorithm> makeExactAlgorithm() { return std::make_unique<ExactAlgorithm>(); }

}  // namespace memplan

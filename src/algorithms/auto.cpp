// "auto", memplan's default algorithm. Per pool:
//  1. Lower bound (sweep). No plan can be smaller.
//  2. Heuristic portfolio: best fit and first fit in six orders (best_fit.h),
//     plus ExecuTorch's greedy when params.use_executorch_in_portfolio, so
//     auto is never worse than ExecuTorch. Stops at the lower bound.
//  3. Iterated local search from the best heuristic placement
//     (local_search.h) within a work budget; stops at the lower bound.
//  4. Exact search (exact_search.h) from the best placement toward the
//     lower bound, within a node budget.
// The best placement wins; it is proven optimal when it reaches the lower
// bound (or the exact search proves nothing lower fits). Budgets are work
// counters scaled by params.effort; params.time_limit_seconds optionally
// caps the wall clock on top.
#include <chrono>
#include <limits>

#include <fmt/format.h>

#include "algorithms/best_fit.h"
#include "algorithms/exact_search.h"
#include "algorithms/local_search.h"
#include "algorithms/pool_util.h"

namespace memplan {

namespace {

// Default budgets at effort 1.
constexpr std::uint64_t kLocalSearchBaseWork = 4'000'000;
constexpr std::uint64_t kLocalSearchWorkPerBuffer = 2'000;
constexpr std::uint64_t kLocalSearchMaxWork = 40'000'000;
// The portfolio stops starting passes after this much work: on very large
// lists a few orders (the usual winners come first) must do.
constexpr std::uint64_t kPortfolioMaxWork = 20'000'000;
// Exact search only on pools up to this many (merged) buffers; above, the
// local search alone works on the plan.
constexpr std::size_t kExactMaxBuffers = 5'000;
// ExecuTorch's greedy scans all shared objects per spec: skip it on lists
// so large that it would dominate the run.
constexpr std::size_t kExecutorchMaxBuffers = 20'000;

class Auto : public Algorithm {
 public:
  const AlgorithmInfo& info() const override {
    static const AlgorithmInfo kInfo{
        .name = "auto",
        .summary = "memplan's default: lower bound, best-fit portfolio with ExecuTorch's greedy, "
                   "local search, exact search; keeps the smallest",
        .selects = true};
    return kInfo;
  }

  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams& params) const override {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
    auto report = [&](std::string_view stage, Bytes height, Bytes lb) {
      if (!params.progress) return;
      params.progress(fmt::format("{}: height {} ({:.4f}x lower bound {})", stage, height,
                                  lb ? static_cast<double>(height) / static_cast<double>(lb) : 1.0,
                                  lb));
    };

    const auto merged = pool::mergeInplace(problem);
    heur::checkPins(merged.problem);
    const Bytes lb = lowerBound(problem);
    const Bytes pad = problem.buffers.empty() ? 0 : problem.extra_padding;
    // Heights exclude the padding. Merged in-place groups may need more
    // than the bound: nothing this pipeline builds goes below the merged
    // problem's own bound, so search stops there.
    const Bytes target =
        (merged.merged_any ? std::max(lb, lowerBound(merged.problem)) : lb) - pad;

    heur::Placer placer(merged.problem);
    auto port = heur::runPortfolio(
        merged.problem, placer, target,
        static_cast<std::uint64_t>(std::max(0.0, params.effort) * kPortfolioMaxWork));
    std::uint64_t work = port.work;
    PoolSolution best = pool::makeSolution(
        problem, pool::expandOffsets(merged, port.offsets),
        fmt::format("best_fit({},{})", heur::orderName(port.which), heur::fitName(port.fit)), lb,
        work);
    report("heuristics", best.size, lb);
    // Best placement of the merged groups so far (the exact search's start).
    std::vector<Offset> own_offsets = best.offsets;
    Bytes own_height = port.height;

    if (!best.proven_optimal && params.use_executorch_in_portfolio &&
        problem.buffers.size() <= kExecutorchMaxBuffers) {
      if (auto greedy = makeAlgorithm("greedy")) {
        try {
          PoolSolution g = greedy->solve(problem, params);
          // ExecuTorch ignores per-buffer alignment and places in-place
          // results late (its defect 3): keep its plan only if it is safe.
          if (pool::poolSize(problem, g.offsets) < best.size &&
              pool::checkPlacementExact(problem, g.offsets).empty()) {
            best = std::move(g);
            best.size = pool::poolSize(problem, best.offsets);
            best.proven_optimal = best.size <= lb;
          }
        } catch (const PlanError&) {
          // ExecuTorch's own failure modes (e.g. unsorted specs) are not ours.
        }
      }
    }

    const bool out_of_time = params.time_limit_seconds > 0 && elapsed() >= params.time_limit_seconds;
    if (!best.proven_optimal && params.use_local_search && !out_of_time) {
      heur::LocalSearchParams lp;
      lp.seed = params.seed;
      lp.target = target;
      if (params.time_limit_seconds > 0)
        lp.time_limit_seconds = std::max(1e-3, params.time_limit_seconds - elapsed());
      lp.progress = params.progress;
      const double budget =
          params.effort *
          static_cast<double>(std::min(kLocalSearchMaxWork,
                                       kLocalSearchBaseWork + kLocalSearchWorkPerBuffer *
                                                                  merged.problem.buffers.size()));
      lp.work_limit = static_cast<std::uint64_t>(std::max(0.0, budget));
      auto r = heur::improvePlacement(merged.problem, placer, port.order, port.fit,
                                      port.offsets, lp);
      work += r.work;
      const Bytes size = r.height + pad;
      if (size < best.size || (size == best.size && best.algorithm == "greedy")) {
        best = pool::makeSolution(problem, pool::expandOffsets(merged, r.offsets), "local_search",
                                  lb, work);
      }
      if (r.height < own_height) {
        own_height = r.height;
        own_offsets = pool::expandOffsets(merged, r.offsets);
      }
      report("local search", best.size, lb);
    }
    const bool exact_time_left =
        params.time_limit_seconds <= 0 || elapsed() < params.time_limit_seconds;
    if (!best.proven_optimal && params.use_exact_search && exact_time_left &&
        merged.problem.buffers.size() <= kExactMaxBuffers) {
      exact::ExactParams ep;
      ep.node_limit = static_cast<std::uint64_t>(
          std::min(1e15, std::max(0.0, params.effort) * static_cast<double>(ep.node_limit)));
      if (params.time_limit_seconds > 0)
        ep.time_limit_seconds = std::max(1e-3, params.time_limit_seconds - elapsed());
      // The exact search starts from a placement of the merged groups:
      // ours (ExecuTorch's may rely on its own in-place rule).
      const Bytes height = best.size - pad;
      const bool ours = pool::checkPlacement(problem, best.offsets).empty();
      const exact::ExactResult r =
          exact::minimizeHeight(problem, ours ? best.offsets : own_offsets, target, ep);
      work += r.nodes;
      if (r.found && r.height < height && pool::checkPlacement(problem, r.offsets).empty()) {
        best = pool::makeSolution(problem, r.offsets, "exact", lb, work);
      }
      // With in-place groups merged, the search's floor is the merged
      // problem's bound, which can exceed the true one: only a plan at the
      // true bound is then proven optimal.
      if (r.proven_optimal && r.height <= height && !merged.merged_any) best.proven_optimal = true;
      report("exact search", best.size, lb);
    }
    best.work = work;
    best.proven_optimal = best.proven_optimal || best.size <= lb;
    if (best.algorithm.rfind("auto", 0) != 0) best.algorithm = "auto:" + best.algorithm;
    return best;
  }
};

}  // namespace

std::unique_ptr<Algorithm> makeAutoAlgorithm() { return std::make_unique<Auto>(); }

}  // namespace memplan

// "auto": see auto.h.
#include "algorithms/auto.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "algorithms/best_fit.h"
#include "algorithms/exact_search.h"
#include "algorithms/greedy.h"
#include "algorithms/local_search.h"
#include "algorithms/pool_util.h"

namespace memplan {

namespace {

using Clock = std::chrono::steady_clock;

// The lowest placement so far.
struct Best {
  Bytes height = std::numeric_limits<Bytes>::max();
  std::vector<Offset> offsets;  // merged
  std::string label;
  std::vector<BufferId> order;  // the order that built it (empty: none)
  heur::Fit fit = heur::Fit::Best;
  bool offer(Bytes h, const std::vector<Offset>& o, std::string_view l) {
    if (h >= height) return false;
    height = h;
    offsets = o;
    label = l;
    return true;
  }
};

class Auto : public Algorithm {
 public:
  explicit Auto(const AutoParams& p) : p_(p) {}

  const AlgorithmInfo& info() const override {
    static const AlgorithmInfo kInfo{
        .name = "auto",
        .summary = "memplan's default: best fit, first fit and ExecuTorch's greedy, then other "
                   "orders, local search and exact search; keeps the smallest",
        .honours_gaps = true,
        .honours_hints = true,
        .selects = true};
    return kInfo;
  }

  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams& params) const override {
    const auto t0 = Clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
    auto outOfTime = [&] {
      return params.time_limit_seconds > 0 && elapsed() >= params.time_limit_seconds;
    };
    const double effort = std::max(0.0, params.effort);
    auto budget = [&](std::uint64_t work) {
      return static_cast<std::uint64_t>(std::min(1e18, effort * static_cast<double>(work)));
    };

    PoolSolution sol = pool::solveOffsets(problem, [&](const pool::MergedProblem& m,
                                                       const pool::Bounds& bounds) {
      const PoolProblem& mp = m.problem;
      const Bytes target = bounds.target;
      auto report = [&](std::string_view stage, Bytes height) {
        if (!params.progress) return;
        params.progress(fmt::format("{}: height {} ({:.4f}x lower bound {})", stage, height,
                                    target ? static_cast<double>(height) /
                                                 static_cast<double>(target)
                                           : 1.0,
                                    target));
      };
      Best best;
      std::uint64_t work = 0;

      // 1. The built-in heuristics, in full.
      const heur::Order def = heur::FitParams{}.order;
      const std::vector<BufferId> order = heur::makeOrder(mp, def);
      std::uint64_t pass_work = 0;  // one pass of first fit
      runParts(problem, m, order, target, best, work, pass_work);
      report("heuristics", best.height);

      // 2. The other orders and fits.
      heur::Placer placer(mp);
      std::uint64_t portfolio_work = budget(p_.portfolio_work);
      if (mp.buffers.size() <= p_.portfolio_min_passes_max_buffers && effort > 0)
        portfolio_work = std::max(portfolio_work, p_.portfolio_min_passes * (pass_work + 1));
      if (p_.portfolio && best.height > target && portfolio_work > 0 && !outOfTime()) {
        std::vector<heur::Pass> passes;
        for (const heur::Pass& pass : heur::allPasses())
          if (pass.order != def) passes.push_back(pass);
        auto r = heur::runPortfolio(mp, placer, passes, target, portfolio_work,
                                    std::max<std::uint64_t>(1, pass_work));
        if (best.offer(r.height, r.offsets, heur::passName(r.pass))) {
          best.order = r.order;
          best.fit = r.pass.fit;
        }
        report("portfolio", best.height);
      }
      work += placer.work();

      // 3. Local search.
      if (p_.local_search && best.height > target && effort > 0 &&
          mp.buffers.size() <= p_.local_search_max_buffers && !outOfTime()) {
        heur::LocalSearchParams lp;
        lp.seed = params.seed;
        lp.target = target;
        if (params.time_limit_seconds > 0)
          lp.time_limit_seconds = std::max(1e-3, params.time_limit_seconds - elapsed());
        lp.progress = params.progress;
        lp.work_limit = budget(std::min(p_.local_search_max_work,
                                        p_.local_search_base_work +
                                            p_.local_search_work_per_buffer * mp.buffers.size()));
        if (best.order.empty()) best.order = order;
        auto r = heur::improvePlacement(mp, placer, best.order, best.fit, best.offsets, lp);
        work += r.work;
        best.offer(r.height, r.offsets, "local_search");
        report("local search", best.height);
      }

      // 4. Exact search.
      pool::Placement out;
      if (p_.exact_search && best.height > target && effort > 0 &&
          mp.buffers.size() <= p_.exact_max_buffers && !outOfTime()) {
        exact::ExactParams ep;
        ep.node_limit = budget(ep.node_limit);
        if (params.time_limit_seconds > 0)
          ep.time_limit_seconds = std::max(1e-3, params.time_limit_seconds - elapsed());
        const exact::ExactResult r = exact::minimizeHeight(mp, best.offsets, target, ep);
        work += r.nodes;
        if (r.found && r.height < best.height &&
            pool::checkPlacement(mp, r.offsets).empty())
          best.offer(r.height, r.offsets, "exact");
        if (r.proven_optimal && r.height <= best.height) out.proven_optimal = true;
        out.proven_height = r.proven_bound;
        report("exact search", best.height);
      }
      out.offsets = std::move(best.offsets);
      out.label = "auto:" + best.label;
      out.work = work;
      return out;
    });
    return sol;
  }

 private:
  // Stage 1: first fit and best fit in the default order and ExecuTorch's
  // greedy, each in full, concurrently when threads allow. The lowest
  // wins, ties in that order. Only first fit, the first in that order,
  // may cut the others short (once at the target nothing beats it), so
  // the result never depends on timing.
  void runParts(const PoolProblem& problem, const pool::MergedProblem& m,
                const std::vector<BufferId>& order, Bytes target, Best& best,
                std::uint64_t& work, std::uint64_t& pass_work) const {
    const PoolProblem& mp = m.problem;
    struct Part {
      Bytes height = heur::Placer::kStopped;
      std::vector<Offset> offsets;  // merged
      std::string label;
      heur::Fit fit = heur::Fit::First;
      std::uint64_t work = 0;
      std::exception_ptr error;
    };
    Part parts[3];
    std::atomic<bool> stop{false};
    const heur::Order def = heur::FitParams{}.order;
    auto fitPart = [&](int k, heur::Fit fit) {
      try {
        heur::Placer placer(mp);
        Part& part = parts[k];
        part.offsets.assign(mp.buffers.size(), 0);
        part.height = placer.place(order, 0, fit, part.offsets, k == 0 ? nullptr : &stop);
        part.label = heur::passName({def, fit});
        part.fit = fit;
        part.work = placer.work();
        if (k == 0 && part.height <= target) stop = true;
      } catch (...) {
        parts[k].error = std::current_exception();
        if (k == 0) stop = true;
      }
    };
    auto greedyPart = [&] {
      if (!p_.executorch_greedy) return;
      for (const Buffer& b : problem.buffers)
        if (b.fixed_offset) return;  // greedy places every buffer itself
      try {
        const PoolSolution g = detail::executorchGreedy(problem, true, &stop);
        if (g.offsets.empty()) return;  // stopped
        Part& part = parts[2];
        part.offsets.resize(m.members.size());
        for (std::size_t k = 0; k < part.offsets.size(); ++k)
          part.offsets[k] = g.offsets[m.members[k].front()];
        part.height = pool::placementHeight(mp, part.offsets);
        part.label = "greedy";
        part.work = g.work;
      } catch (const PlanError&) {
        // ExecuTorch's own failure modes (e.g. a pool too large) are not ours.
      }
    };
    const unsigned threads = p_.threads ? p_.threads : std::thread::hardware_concurrency();
    if (threads >= 2) {
      std::thread second([&] { fitPart(1, heur::Fit::Best); });
      std::thread third;
      if (threads >= 3) third = std::thread(greedyPart);
      fitPart(0, heur::Fit::First);
      if (threads < 3) greedyPart();
      second.join();
      if (third.joinable()) third.join();
    } else {
      fitPart(0, heur::Fit::First);
      if (!stop) fitPart(1, heur::Fit::Best);
      if (!stop) greedyPart();
    }
    if (parts[0].error) std::rethrow_exception(parts[0].error);
    if (!stop && parts[1].error) std::rethrow_exception(parts[1].error);
    const bool done = parts[0].height <= target;
    pass_work = parts[0].work;
    for (int k = 0; k < 3; ++k) {
      Part& part = parts[k];
      if (done && k > 0) continue;  // cut short or not: first fit stands
      work += part.work;
      if (part.height == heur::Placer::kStopped || part.height >= best.height) continue;
      // ExecuTorch's greedy ignores alignment above 16 and may place
      // in-place results unsafely: kept only when its plan is safe.
      if (k == 2 && !pool::checkPlacement(problem, pool::expandOffsets(m, part.offsets)).empty())
        continue;
      best.offer(part.height, part.offsets, part.label);
      if (k < 2) {
        best.order = order;
        best.fit = part.fit;
      } else {
        best.order.clear();
      }
    }
  }

  AutoParams p_;
};

}  // namespace

std::unique_ptr<Algorithm> makeAutoAlgorithm(const AutoParams& params) {
  return std::make_unique<Auto>(params);
}
std::unique_ptr<Algorithm> makeAutoAlgorithm() { return makeAutoAlgorithm(AutoParams{}); }

}  // namespace memplan

// "auto": see auto.h.
#include "algorithms/auto.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "algorithms/best_fit.h"
#include "algorithms/exact_search.h"
#include "algorithms/greedy.h"
#include "algorithms/local_search.h"
#include "algorithms/pool_util.h"
#include "algorithms/stop.h"

namespace memplan {

namespace {

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
        .summary = "memplan's default: first fit, best fit (on pools of at most 50,000 buffers "
                   "by default) and ExecuTorch's greedy, then other orders, local search and exact "
                   "search while above the lower bound; keeps the smallest",
        .honours_gaps = true,
        .honours_hints = true,
        .selects = true};
    return kInfo;
  }

  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams& params) const override {
    StopWatch watch(params.time_limit_seconds, params.stop);
    const double effort = std::max(0.0, params.effort);
    auto budget = [&](std::uint64_t work) {
      return static_cast<std::uint64_t>(std::min(1e18, effort * static_cast<double>(work)));
    };
    std::vector<SearchStage> stages;

    PoolSolution sol = pool::solveOffsets(problem, [&](const pool::MergedProblem& m,
                                                       const pool::Bounds& bounds) {
      const PoolProblem& mp = m.problem;
      const std::size_t n = mp.buffers.size();
      const Bytes target = bounds.target;
      // Good enough: at most gap_tolerance above the bound.
      const Bytes enough =
          target + static_cast<Bytes>(std::max(0.0, p_.gap_tolerance) * static_cast<double>(target));
      auto report = [&](std::string_view stage, Bytes height) {
        if (!params.progress) return;
        params.progress(fmt::format("{}: height {} ({:.4f}x lower bound {})", stage, height,
                                    target ? static_cast<double>(height) /
                                                 static_cast<double>(target)
                                           : 1.0,
                                    target));
      };
      Best best;
      std::uint64_t work = 0, stage_work = 0;
      auto record = [&](const char* stage) {
        stages.push_back({stage, best.height + bounds.padding, work - stage_work});
        stage_work = work;
        report(stage, best.height);
      };
      auto open = [&] { return best.height > enough && !watch.due(); };

      // 1. The built-in heuristics, in full.
      const heur::Order def = heur::FitParams{}.order;
      const std::vector<BufferId> order = heur::makeOrder(mp, def);
      std::uint64_t pass_work = 0;  // one pass of first fit
      runParts(problem, m, order, target, best, work, pass_work);

      // 2. The other orders and fits.
      heur::Placer placer(mp);
      std::uint64_t portfolio_work = budget(p_.portfolio_work);
      if (n <= p_.portfolio_full_max_buffers && effort > 0) portfolio_work = ~std::uint64_t{0};
      if (p_.portfolio && best.height > target && portfolio_work > 0 && !watch.due()) {
        std::vector<heur::Pass> passes;
        for (const heur::Pass& pass : heur::allPasses())
          if (pass.order != def) passes.push_back(pass);
        auto r = heur::runPortfolio(mp, placer, passes, target, portfolio_work,
                                    std::max<std::uint64_t>(1, pass_work), &watch);
        if (best.offer(r.height, r.offsets, heur::passName(r.pass))) {
          best.order = r.order;
          best.fit = r.pass.fit;
        }
        work += placer.work();
      }
      record("heuristics");

      // 3. Local search.
      const bool searchable = effort > 0 && n <= p_.local_search_max_buffers;
      auto localSearch = [&](std::uint64_t limit, std::uint64_t seed) {
        heur::LocalSearchParams lp;
        lp.seed = seed;
        lp.target = enough;
        lp.watch = &watch;
        lp.progress = params.progress;
        lp.work_limit = limit;
        lp.pass_work = pass_work;
        if (best.order.empty()) best.order = order;
        const std::uint64_t before = placer.work();
        auto r = heur::improvePlacement(mp, placer, best.order, best.fit, best.offsets, lp);
        work += placer.work() - before;
        return best.offer(r.height, r.offsets, "local_search");
      };
      if (p_.local_search && searchable && open()) {
        const std::uint64_t linear =
            p_.local_search_base_work + p_.local_search_work_per_buffer * static_cast<std::uint64_t>(n);
        localSearch(budget(std::min(p_.local_search_max_work,
                                    std::max(linear, p_.local_search_min_passes * pass_work))),
                    params.seed);
        record("local search");
      }
      pool::Placement out;
      if (p_.stop_after_local_search) {
        out.offsets = std::move(best.offsets);
        out.label = best.label;
        out.work = work;
        return out;
      }

      // 4. Exact search.
      auto exactSearch = [&](std::uint64_t steps) {
        exact::ExactParams ep;
        ep.node_limit = budget(p_.exact_node_limit);
        ep.step_limit = std::max<std::uint64_t>(1, budget(steps));
        if (watch.limited()) ep.time_limit_seconds = watch.remaining();
        ep.stop = params.stop;
        const exact::ExactResult r = exact::minimizeHeight(mp, best.offsets, target, ep);
        work += r.steps;
        bool gained = false;
        if (r.found && r.height < best.height && pool::checkPlacement(mp, r.offsets).empty())
          gained = best.offer(r.height, r.offsets, "exact");
        if (r.proven_optimal && r.height <= best.height) out.proven_optimal = true;
        out.proven_height = std::max(out.proven_height, r.proven_bound);
        if (r.stopped) watch.due();
        return gained;
      };
      if (p_.exact_search && effort > 0 && open()) {
        exactSearch(p_.exact_step_limit);
        record("exact");
      }

      // 5. Anytime: rounds of local search from the best placement, each
      //    with a seed of its own (which moves pay off is a matter of
      //    chance on large pools), then exact search if a round gained.
      if (p_.anytime && p_.local_search && searchable && open() && !out.proven_optimal) {
        const std::uint64_t more = std::min(
            p_.anytime_max_work,
            p_.anytime_base_work + p_.anytime_work_per_buffer * static_cast<std::uint64_t>(n));
        const std::uint64_t rounds = std::max<std::uint64_t>(1, p_.anytime_rounds);
        bool gained = false;
        for (std::uint64_t k = 1; k <= rounds && open(); ++k)
          gained = localSearch(budget(more / rounds), params.seed + k) || gained;
        record("local search");
        if (gained && p_.exact_search && open()) {
          exactSearch(p_.anytime_exact_step_limit);
          record("exact");
        }
      }
      out.offsets = std::move(best.offsets);
      out.label = "auto:" + best.label;
      out.work = work;
      return out;
    });
    sol.stages = std::move(stages);
    // Cut short only if the search would have gone on.
    if (!watch.reason().empty() && !sol.proven_optimal) sol.stopped = watch.reason();
    return sol;
  }

 private:
  // Stage 1: first fit and best fit (up to best_fit_max_buffers) in the
  // default order and ExecuTorch's greedy, each in full, concurrently
  // when threads allow. The lowest wins, ties in that order. Only first
  // fit, the first in that order, may cut the others short (once at the
  // target nothing beats it), so the result never depends on timing.
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
    // First fit here; the others on threads of their own while there are
    // cores for them, the rest here after first fit.
    std::vector<std::function<void()>> others;
    if (mp.buffers.size() <= p_.best_fit_max_buffers)
      others.emplace_back([&] { fitPart(1, heur::Fit::Best); });
    others.emplace_back(greedyPart);
    const unsigned threads = p_.threads ? p_.threads : std::thread::hardware_concurrency();
    if (threads >= 2) {
      const std::size_t spawned = std::min<std::size_t>(threads - 1, others.size());
      std::vector<std::thread> running;
      for (std::size_t k = 0; k < spawned; ++k) running.emplace_back(others[k]);
      fitPart(0, heur::Fit::First);
      for (std::size_t k = spawned; k < others.size(); ++k) others[k]();
      for (std::thread& t : running) t.join();
    } else {
      fitPart(0, heur::Fit::First);
      for (const auto& run : others)
        if (!stop) run();
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

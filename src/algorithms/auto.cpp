// "auto": see auto.h.
#include "algorithms/auto.h"

#include <chrono>
#include <limits>

#include <fmt/format.h>

#include "algorithms/best_fit.h"
#include "algorithms/exact_search.h"
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
      heur::Placer placer(mp);
      Best best;
      std::uint64_t work = 0;
      std::vector<Offset> offsets(mp.buffers.size(), 0);

      // 1. The built-in heuristics, in full.
      const heur::Order def = heur::FitParams{}.order;
      const std::vector<BufferId> order = heur::makeOrder(mp, def);
      for (heur::Fit fit : {heur::Fit::Best, heur::Fit::First}) {
        const Bytes h = placer.place(order, 0, fit, offsets);
        if (best.offer(h, offsets, heur::passName({def, fit}))) {
          best.order = order;
          best.fit = fit;
        }
        if (best.height <= target) break;
      }
      if (p_.executorch_greedy && best.height > target) offerGreedy(problem, m, best);
      report("heuristics", best.height);

      // 2. The other orders and fits.
      if (p_.portfolio && best.height > target && budget(p_.portfolio_work) > 0 && !outOfTime()) {
        std::vector<heur::Pass> passes;
        for (const heur::Pass& pass : heur::allPasses())
          if (pass.order != def) passes.push_back(pass);
        auto r = heur::runPortfolio(mp, placer, passes, target, budget(p_.portfolio_work));
        if (best.offer(r.height, r.offsets, heur::passName(r.pass))) {
          best.order = r.order;
          best.fit = r.pass.fit;
        }
        report("portfolio", best.height);
      }
      work = placer.work();

      // 3. Local search.
      if (p_.local_search && best.height > target && effort > 0 && !outOfTime()) {
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
  // ExecuTorch's greedy on the original problem; kept when safe (members of
  // a group share the root's offset there, so a safe plan is a placement
  // of the merged problem too).
  static void offerGreedy(const PoolProblem& problem, const pool::MergedProblem& m, Best& best) {
    for (const Buffer& b : problem.buffers)
      if (b.fixed_offset) return;  // greedy places every buffer itself
    const auto greedy = makeAlgorithm("greedy");
    if (!greedy) return;
    PoolSolution g;
    try {
      g = greedy->solve(problem, {});
    } catch (const PlanError&) {
      return;  // ExecuTorch's own failure modes are not ours
    }
    if (!pool::checkPlacement(problem, g.offsets).empty()) return;
    std::vector<Offset> merged(m.members.size());
    for (std::size_t k = 0; k < merged.size(); ++k) merged[k] = g.offsets[m.members[k].front()];
    if (best.offer(pool::placementHeight(m.problem, merged), merged, "greedy")) best.order.clear();
  }

  AutoParams p_;
};

}  // namespace

std::unique_ptr<Algorithm> makeAutoAlgorithm(const AutoParams& params) {
  return std::make_unique<Auto>(params);
}
std::unique_ptr<Algorithm> makeAutoAlgorithm() { return makeAutoAlgorithm(AutoParams{}); }

}  // namespace memplan

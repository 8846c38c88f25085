// The heuristic stages of the searching algorithms: the built-in
// heuristics in full and the portfolio of other orders and fits
// (search_stages.h).
#include <atomic>
#include <exception>
#include <functional>
#include <thread>

#include "algorithms/best_fit.h"
#include "algorithms/greedy.h"
#include "algorithms/search_stages.h"

namespace memplan::search {

namespace {

// One built-in heuristic's result.
struct Part {
  Bytes height = heur::Placer::kStopped;  // kStopped: cut short or not run
  std::vector<Offset> offsets;            // merged
  std::string label;
  heur::Fit fit = heur::Fit::First;
  std::uint64_t work = 0;                 // placer work units
  std::exception_ptr error;               // what it threw, rethrown by the caller
};

// The three parts in their tie order, and the flag that ends them early.
struct Parts {
  Part first_fit, best_fit, greedy;
  // Set by first fit once it reaches the lower bound (nothing beats it
  // then) or fails; the others give up when they see it.
  std::atomic<bool> stop{false};
};

// First or best fit in the default order, in full. Only first fit may end
// the others (it is first in the tie order), so the result never depends
// on timing.
void runFit(const SearchState& s, heur::Fit fit, Parts& parts) {
  const bool first = fit == heur::Fit::First;
  Part& part = first ? parts.first_fit : parts.best_fit;
  try {
    heur::Placer placer(s.pool());
    part.offsets.assign(s.buffers(), 0);
    part.height = placer.place(s.default_order, 0, fit, part.offsets, first ? nullptr : &parts.stop);
    part.label = heur::passName({heur::FitParams{}.order, fit});
    part.fit = fit;
    part.work = placer.work();
    if (first && part.height <= s.bounds.target) parts.stop = true;
  } catch (...) {
    part.error = std::current_exception();
    if (first) parts.stop = true;
  }
}

// ExecuTorch's greedy on the pool as given (it merges in-place buffers
// its own way), mapped to the merged buffers. Not run when a buffer is
// pinned: greedy places every buffer itself.
void runGreedy(const SearchState& s, Parts& parts) {
  for (const Buffer& b : s.problem.buffers)
    if (b.fixed_offset) return;
  try {
    const PoolSolution g = detail::executorchGreedy(s.problem, true, &parts.stop);
    if (g.offsets.empty()) return;  // stopped
    Part& part = parts.greedy;
    part.offsets = pool::mergedOffsets(s.merged, g.offsets);
    part.height = pool::placementHeight(s.pool(), part.offsets);
    part.label = "greedy";
    part.work = g.work;
  } catch (const PlanError&) {
    // ExecuTorch's own failure modes (e.g. a pool too large) are not ours.
  }
}

// First fit here; the others on threads of their own while there are
// cores for them (on pools of at most concurrent_max_buffers), the rest
// here after first fit (skipped once it stopped them when there is one
// thread).
void runParts(const SearchState& s, const BuiltInHeuristics& set, Parts& parts) {
  std::vector<std::function<void()>> others;
  if (s.buffers() <= set.best_fit_max_buffers)
    others.emplace_back([&] { runFit(s, heur::Fit::Best, parts); });
  if (set.executorch_greedy) others.emplace_back([&] { runGreedy(s, parts); });
  unsigned threads = set.threads ? set.threads : std::thread::hardware_concurrency();
  if (s.buffers() > set.concurrent_max_buffers) threads = 1;
  if (threads >= 2) {
    const std::size_t spawned = std::min<std::size_t>(threads - 1, others.size());
    std::vector<std::thread> running;
    for (std::size_t k = 0; k < spawned; ++k) running.emplace_back(others[k]);
    runFit(s, heur::Fit::First, parts);
    for (std::size_t k = spawned; k < others.size(); ++k) others[k]();
    for (std::thread& t : running) t.join();
  } else {
    runFit(s, heur::Fit::First, parts);
    for (const auto& run : others)
      if (!parts.stop) run();
  }
}

// The lowest part becomes the incumbent (ties: first fit, best fit,
// greedy); at the lower bound first fit stands alone, whether or not it
// cut the others short.
void keepLowest(SearchState& s, Parts& parts) {
  if (parts.first_fit.error) std::rethrow_exception(parts.first_fit.error);
  if (!parts.stop && parts.best_fit.error) std::rethrow_exception(parts.best_fit.error);
  const bool done = parts.first_fit.height <= s.bounds.target;
  s.pass_work = parts.first_fit.work;
  Part* order[] = {&parts.first_fit, &parts.best_fit, &parts.greedy};
  for (Part* part : order) {
    const bool greedy = part == &parts.greedy;
    if (done && part != &parts.first_fit) continue;
    s.work += part->work;
    if (part->height == heur::Placer::kStopped || part->height >= s.best.height) continue;
    // ExecuTorch's greedy ignores alignment above 16 and may place
    // in-place results unsafely: kept only when its plan is safe.
    if (greedy &&
        !pool::checkPlacement(s.problem, pool::expandOffsets(s.merged, part->offsets)).empty())
      continue;
    s.best.offer(part->height, part->offsets, part->label);
    if (greedy) {
      s.best.order.clear();
    } else {
      s.best.order = s.default_order;
      s.best.fit = part->fit;
    }
  }
}

class BuiltInHeuristicsStage : public Stage {
 public:
  explicit BuiltInHeuristicsStage(const BuiltInHeuristics& settings) : set_(settings) {}
  std::string_view name() const override { return ""; }
  bool run(SearchState& s) const override {
    Parts parts;
    runParts(s, set_, parts);
    keepLowest(s, parts);
    return true;
  }

 private:
  BuiltInHeuristics set_;
};

class PortfolioStage : public Stage {
 public:
  explicit PortfolioStage(const Portfolio& settings) : set_(settings) {}
  std::string_view name() const override { return "heuristics"; }
  // Always recorded (it closes the heuristics), whether or not it ran a pass.
  bool run(SearchState& s) const override {
    std::uint64_t work = s.budget(set_.work);
    if (s.buffers() <= set_.full_max_buffers && s.effort() > 0) work = ~std::uint64_t{0};
    heur::Placer& placer = s.placer();
    if (s.best.height <= s.bounds.target || work == 0 || s.watch.due()) return true;
    const heur::Order def = heur::FitParams{}.order;
    std::vector<heur::Pass> passes;
    for (const heur::Pass& pass : heur::allPasses())
      if (pass.order != def) passes.push_back(pass);
    auto r = heur::runPortfolio(s.pool(), placer, passes, s.bounds.target, work,
                                std::max<std::uint64_t>(1, s.pass_work), &s.watch);
    if (s.best.offer(r.height, r.offsets, heur::passName(r.pass))) {
      s.best.order = r.order;
      s.best.fit = r.pass.fit;
    }
    s.work += placer.work();
    return true;
  }

 private:
  Portfolio set_;
};

}  // namespace

std::shared_ptr<const Stage> builtInHeuristicsStage(const BuiltInHeuristics& settings) {
  return std::make_shared<BuiltInHeuristicsStage>(settings);
}

std::shared_ptr<const Stage> portfolioStage(const Portfolio& settings) {
  return std::make_shared<PortfolioStage>(settings);
}

}  // namespace memplan::search

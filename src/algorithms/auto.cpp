// The searching algorithms as declared lists of stages: "auto" (auto.h),
// "local_search" (auto's list up to and including its local search) and
// "exact" (auto's list and one more exact search).
#include "algorithms/auto.h"

namespace memplan {

namespace {

// Stages 1-3: the "local_search" algorithm (with `local_search` as its
// local search).
search::StageList throughLocalSearch(const AutoParams& p, const search::LocalSearch& local_search) {
  search::StageList list = {search::builtInHeuristicsStage(p.heuristics),
                            search::portfolioStage(p.portfolio)};
  if (p.with_local_search) list.push_back(search::localSearchStage(local_search));
  return list;
}

}  // namespace

search::StageList autoStages(const AutoParams& p) {
  search::StageList list = throughLocalSearch(p, p.local_search);
  if (p.with_exact) list.push_back(search::boundedExactStage(p.exact));
  if (p.with_local_search && p.with_anytime) {
    list.push_back(search::localSearchStage(p.anytime));
    if (p.with_exact) list.push_back(search::boundedExactStage(p.anytime_exact));
  }
  if (p.with_peak_stack) {
    // Stages 1-3 again around the pinned stack, and exact search.
    search::StageList inner = throughLocalSearch(p, p.peak_stack_local_search);
    if (p.with_exact) inner.push_back(search::boundedExactStage(p.peak_stack_exact));
    list.push_back(search::peakStackStage(p.peak_stack, std::move(inner)));
  }
  return list;
}

std::unique_ptr<Algorithm> makeAutoAlgorithm(const AutoParams& params) {
  static const AlgorithmInfo kInfo{
      .name = "auto",
      .summary = "memplan's default: first fit, best fit (on pools of at most 50,000 buffers "
                 "by default) and ExecuTorch's greedy, then other orders, local search, exact "
                 "search and a search around the buffers of the peak steps stacked while above the "
                 "lower bound; keeps the smallest",
      .honours_gaps = true,
      .honours_hints = true,
      .selects = true};
  return search::makeStagedAlgorithm(kInfo, autoStages(params), params.search);
}
std::unique_ptr<Algorithm> makeAutoAlgorithm() { return makeAutoAlgorithm(AutoParams{}); }

// Auto's first stages: its heuristics and its local search, at the same
// budgets, so that auto, which goes on from there, is never larger.
std::unique_ptr<Algorithm> makeLocalSearchAlgorithm() {
  static const AlgorithmInfo kInfo{
      .name = "local_search",
      .summary = "iterated local search over placements and orders from the best heuristic plan",
      .honours_gaps = true,
      .honours_hints = true};
  const AutoParams p;
  return search::makeStagedAlgorithm(kInfo, throughLocalSearch(p, p.local_search), p.search);
}

// Auto's whole list, then an exact search with a node budget of its own
// (scaled by the effort) and no step limit: never larger than auto or
// anything auto contains.
std::unique_ptr<Algorithm> makeExactAlgorithm() {
  static const AlgorithmInfo kInfo{
      .name = "exact",
      .summary = "branch-and-bound search from auto's plan toward the lower bound",
      .honours_gaps = true,
      .honours_hints = true};
  const AutoParams p;
  search::StageList list = autoStages(p);
  list.push_back(search::finalExactStage());
  return search::makeStagedAlgorithm(kInfo, std::move(list), p.search);
}

}  // namespace memplan

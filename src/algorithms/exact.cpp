// The exact-search stages of the searching algorithms (search_stages.h):
// auto's bounded one, and the "exact" algorithm's own. Both call the
// branch-and-bound search of exact_search.h from the incumbent.
#include <algorithm>

#include "algorithms/exact_search.h"
#include "algorithms/search_stages.h"

namespace memplan::search {

namespace {

// Limits every call shares: the time left and the stop flag.
exact::ExactParams callParams(const SearchState& s) {
  exact::ExactParams ep;
  if (s.watch.limited()) ep.time_limit_seconds = s.watch.remaining();
  ep.stop = s.params.stop;
  return ep;
}

// What the search proved, kept whatever it placed.
void keepProof(SearchState& s, const exact::ExactResult& r) {
  s.proof.height = std::max(s.proof.height, r.proven_bound);
  if (r.stopped) s.watch.due();  // the watch now says why
}

class BoundedExactStage : public Stage {
 public:
  explicit BoundedExactStage(const BoundedExact& settings) : set_(settings) {}
  std::string_view name() const override { return "exact"; }
  bool run(SearchState& s) const override {
    if (s.effort() <= 0 || (set_.after_gain && !s.last_gained) || s.buffers() <= set_.min_buffers ||
        !s.open())
      return false;
    exact::ExactParams ep = callParams(s);
    ep.node_limit = s.budget(set_.node_limit);
    ep.step_limit = std::max<std::uint64_t>(1, s.budget(set_.step_limit));
    const exact::ExactResult r = exact::minimizeMergedHeight(s.pool(), s.best.offsets, s.bounds.target, ep);
    s.work += r.steps;
    // Taken only when lower and checked independently.
    // The order stays: a later local search re-places in it.
    if (r.found && r.height < s.best.height && pool::checkPlacement(s.pool(), r.offsets).empty())
      s.best.offer(r.height, r.offsets, "exact");
    if (r.proven_optimal && r.height <= s.best.height) s.proof.optimal = true;
    keepProof(s, r);
    return true;
  }

 private:
  BoundedExact set_;
};

class FinalExactStage : public Stage {
 public:
  std::string_view name() const override { return "exact"; }
  bool run(SearchState& s) const override {
    if (s.watch.due()) return false;
    // The search starts from the plan as the skeleton would return it.
    std::vector<Offset> incumbent = s.best.offsets;
    pool::moveToHints(s.pool(), incumbent);
    exact::ExactParams ep = callParams(s);
    const double nodes = s.effort() * static_cast<double>(ep.node_limit);
    ep.node_limit = static_cast<std::uint64_t>(std::min(nodes, 1e15));
    exact::ExactResult r = exact::minimizeMergedHeight(s.pool(), incumbent, s.bounds.target, ep);
    s.work += r.nodes;
    if (r.height > pool::placementHeight(s.pool(), incumbent)) r.offsets = std::move(incumbent);
    s.best.height = pool::placementHeight(s.pool(), r.offsets);
    s.best.offsets = std::move(r.offsets);
    s.best.label = "exact";
    s.best.order.clear();
    if (r.proven_optimal) s.proof.optimal = true;
    keepProof(s, r);
    return true;
  }
};

}  // namespace

std::shared_ptr<const Stage> boundedExactStage(const BoundedExact& settings) {
  return std::make_shared<BoundedExactStage>(settings);
}

std::shared_ptr<const Stage> finalExactStage() { return std::make_shared<FinalExactStage>(); }

}  // namespace memplan::search

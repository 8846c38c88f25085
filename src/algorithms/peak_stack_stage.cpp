// The "peak stack" stage (search_stages.h): the search again, on the pool
// with the buffers live at its steps of most live bytes pinned in stacks.
//
// Why: on training traces the plan's peak often sits at that step, above
// the bound only by a hole under long-lived buffers there (gpt2_train: two
// holes of 464 and 408 KiB under the parameters). Local moves lift one
// buffer and a few around it; closing such a hole needs every buffer of
// the step moved at once. Pinning them without a hole, the latest to end
// lowest (heur::peakStack), removes the hole by construction; the search
// then only has to fit the other buffers around the stack. A training
// trace repeats its peak once a training step (17 times in
// gpt2_long_train): the buffers still live from an earlier peak are the
// lowest of the next one's stack (they end last), so each later peak step
// is stacked on top of them, when the hole that leaves there is within
// the search's gap tolerance.
//
//   step of most live bytes t*        stacked at t* (pinned)
//   |  a  ====================>        d  [=====]        ends first: top
//   |  b  ==========>                  b  [=====]
//   |  c  =============>               c  [=====]
//   |  d  ======>                      a  [=====]        ends last: bottom
//
// Costs one more run of `inner` (auto's stages up to its local search, and
// exact search on large pools), at the same budgets, two when the stack of
// every peak step leaves the plan above the tolerance and the first step's
// alone is tried too (more pins can leave the other buffers too little
// room: resnet101ish_train); taken only when lower and checked.
#include "algorithms/best_fit.h"
#include "algorithms/pool_util.h"
#include "algorithms/search_stages.h"

namespace memplan::search {

namespace {

// The pool with the peak stack of its first `max_steps` peak steps pinned
// from its reserved prefix up, and how many buffers that pins; nullopt
// when it holds pins of its own (the stack could meet them).
std::optional<std::pair<PoolProblem, std::size_t>> pinnedStack(const PoolProblem& pool,
                                                               std::size_t max_steps,
                                                               Bytes max_hole) {
  for (const Buffer& b : pool.buffers)
    if (b.fixed_offset) return std::nullopt;
  const auto pins = heur::peakStack(pool.buffers, pool.reserved, max_steps, max_hole);
  if (!pins) return std::nullopt;
  PoolProblem out = pool;
  for (const heur::StackPin& p : *pins) out.buffers[p.id].fixed_offset = p.offset;
  return std::pair{std::move(out), pins->size()};
}

class PeakStackStage : public Stage {
 public:
  PeakStackStage(const PeakStack& settings, StageList inner)
      : set_(settings), inner_(std::move(inner)) {}
  std::string_view name() const override { return "peak stack"; }
  bool run(SearchState& s) const override {
    if (s.effort() <= 0 || s.buffers() > set_.max_buffers || !s.open() || s.proof.optimal)
      return false;
    // Every peak step that stacks without a hole the tolerance would not
    // accept, then the first alone (more pins can leave the others too
    // little room), while above the tolerance.
    std::size_t pinned_before = 0;
    for (const std::size_t steps : {set_.max_steps, std::size_t{1}}) {
      if (!s.open()) break;
      // Holes the gap tolerance accepts (the search ends within it).
      auto pinned = pinnedStack(s.pool(), steps, s.enough - std::min(s.enough, s.bounds.target));
      if (!pinned) return pinned_before > 0;
      if (pinned->second == pinned_before) break;  // the same stack again
      pinned_before = pinned->second;
      searchAround(s, pinned->first);
    }
    return true;
  }

 private:
  // Runs the inner stages on the pinned pool; takes their plan when lower.
  void searchAround(SearchState& s, const PoolProblem& pinned) const {
    static const AlgorithmInfo kInner{.name = "peak stack", .honours_gaps = true, .honours_hints = true};
    AlgorithmParams params = s.params;
    // A time limit covers the whole search: the inner one gets what is left.
    if (s.watch.limited()) params.time_limit_seconds = s.watch.remaining();
    PoolSolution sol;
    try {
      sol = runStages(inner_, kInner, {}, pinned, params);
    } catch (const PlanError&) {
      return;  // e.g. the stack does not fit a capacity: nothing to take
    }
    s.work += sol.work;
    s.watch.due();  // records a time limit the inner search ran into
    const Bytes h = pool::placementHeight(s.pool(), sol.offsets);
    if (h < s.best.height && pool::checkPlacement(s.pool(), sol.offsets).empty() &&
        s.best.offer(h, sol.offsets, "peak_stack"))
      s.best.order.clear();  // a later local search starts from the default order
  }

  PeakStack set_;
  StageList inner_;
};

}  // namespace

std::shared_ptr<const Stage> peakStackStage(const PeakStack& settings, StageList inner) {
  return std::make_shared<PeakStackStage>(settings, std::move(inner));
}

}  // namespace memplan::search

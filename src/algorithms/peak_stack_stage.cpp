// The "peak stack" stage (search_stages.h): the search again, on the pool
// with the buffers live at its step of most live bytes pinned in a stack.
//
// Why: on training traces the plan's peak often sits at that step, above
// the bound only by a hole under long-lived buffers there (gpt2_train: two
// holes of 464 and 408 KiB under the parameters). Local moves lift one
// buffer and a few around it; closing such a hole needs every buffer of
// the step moved at once. Pinning them without a hole, the latest to end
// lowest (heur::peakStack), removes the hole by construction; the search
// then only has to fit the other buffers around the stack.
//
//   step of most live bytes t*        stacked at t* (pinned)
//   |  a  ====================>        d  [=====]        ends first: top
//   |  b  ==========>                  b  [=====]
//   |  c  =============>               c  [=====]
//   |  d  ======>                      a  [=====]        ends last: bottom
//
// Costs one more run of `inner` (auto's stages up to its local search), at
// the same budgets; taken only when lower and checked.
#include "algorithms/best_fit.h"
#include "algorithms/pool_util.h"
#include "algorithms/search_stages.h"

namespace memplan::search {

namespace {

// The pool with the peak stack pinned from its reserved prefix up; nullopt
// when it holds pins of its own (the stack could meet them).
std::optional<PoolProblem> pinnedStack(const PoolProblem& pool) {
  for (const Buffer& b : pool.buffers)
    if (b.fixed_offset) return std::nullopt;
  PoolProblem out = pool;
  Offset at = pool.reserved;
  for (BufferId id : heur::peakStack(pool.buffers)) {
    Buffer& b = out.buffers[id];
    const auto aligned = alignUp(at, b.alignment);
    if (!aligned || !checkedAdd(*aligned, b.size)) return std::nullopt;
    b.fixed_offset = *aligned;
    at = *aligned + b.size;
  }
  return out;
}

class PeakStackStage : public Stage {
 public:
  PeakStackStage(const PeakStack& settings, StageList inner)
      : set_(settings), inner_(std::move(inner)) {}
  std::string_view name() const override { return "peak stack"; }
  bool run(SearchState& s) const override {
    if (s.effort() <= 0 || s.buffers() > set_.max_buffers || !s.open() || s.proof.optimal)
      return false;
    const std::optional<PoolProblem> pinned = pinnedStack(s.pool());
    if (!pinned) return false;
    static const AlgorithmInfo kInner{.name = "peak stack", .honours_gaps = true, .honours_hints = true};
    AlgorithmParams params = s.params;
    // A time limit covers the whole search: the inner one gets what is left.
    if (s.watch.limited()) params.time_limit_seconds = s.watch.remaining();
    PoolSolution sol;
    try {
      sol = runStages(inner_, kInner, {}, *pinned, params);
    } catch (const PlanError&) {
      return true;  // e.g. the stack does not fit a capacity: nothing to take
    }
    s.work += sol.work;
    s.watch.due();  // records a time limit the inner search ran into
    const Bytes h = pool::placementHeight(s.pool(), sol.offsets);
    if (h < s.best.height && pool::checkPlacement(s.pool(), sol.offsets).empty() &&
        s.best.offer(h, sol.offsets, "peak_stack"))
      s.best.order.clear();  // a later local search starts from the default order
    return true;
  }

 private:
  PeakStack set_;
  StageList inner_;
};

}  // namespace

std::shared_ptr<const Stage> peakStackStage(const PeakStack& settings, StageList inner) {
  return std::make_shared<PeakStackStage>(settings, std::move(inner));
}

}  // namespace memplan::search

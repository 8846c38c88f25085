// The searching algorithms ("auto", "local_search", "exact") as declared
// lists of stages over one interface.
//
// A list runs per pool on the merged problem (pool::solveOffsets). Every
// stage reads and improves one SearchState:
//
//   runStages(list)
//     solveOffsets ── per pool, merged problem ──────────────────────────┐
//       SearchState { pool, bounds, budget, incumbent, proof, work }     │
//         stage 1 ─► stage 2 ─► ... ─► stage k    (in the declared order) │
//         after each named stage that ran: PoolSolution::stages += {name, │
//         size of the incumbent, work the stage spent}                    │
//       the incumbent's offsets ─► hints, expansion, the solution ◄──────┘
//
// A stage never leaves the incumbent higher than it found it (most take a
// placement only when strictly lower: Incumbent::offer; the "exact"
// algorithm's last stage also takes its search's placement at the same
// height), so a list is never larger than any of its prefixes:
// "local_search" is auto's list up to and including its local search,
// "exact" is auto's list followed by one more exact search, and each is
// never larger than what it extends. Stages spend work counted in units
// (placer work, exact-search steps), scaled by AlgorithmParams::effort,
// never time; the optional time limit and stop flag only cut them short.
// The stages themselves are in search_stages.h; the lists in auto.h.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/placer.h"
#include "algorithms/pool_util.h"
#include "algorithms/stop.h"
#include "memplan/algorithm.h"

namespace memplan::search {

// The lowest placement found so far (the first found wins ties).
struct Incumbent {
  Bytes height = std::numeric_limits<Bytes>::max();
  std::vector<Offset> offsets;   // one per merged buffer
  std::string label;             // what produced it, e.g. "best_fit(size)"
  // The greedy order and fit the local search re-places in: those of the
  // greedy pass that built the incumbent or the placement it improved on
  // (a local or exact search keeps them). Empty order: ExecuTorch's greedy
  // built it; the local search starts from the default order.
  std::vector<BufferId> order;
  heur::Fit fit = heur::Fit::Best;
  // Takes (h, o) when strictly lower; returns whether it did.
  bool offer(Bytes h, const std::vector<Offset>& o, std::string_view l);
};

// What the search proved about the pool beyond its lower bound.
struct Proof {
  bool optimal = false;          // the incumbent's height is the minimum
  Bytes height = 0;              // no placement is lower (0: nothing proven)
};

// Everything a stage reads and updates, for one pool.
struct SearchState {
  // The pool as given (ExecuTorch's greedy places it whole) and merged
  // (in-place groups as one buffer: every stage places this one).
  const PoolProblem& problem;
  const pool::MergedProblem& merged;
  const pool::Bounds& bounds;
  const AlgorithmParams& params;
  StopWatch& watch;
  Bytes enough = 0;              // at or below this height the search ends
  // Buffers of the merged problem in the default greedy order (best_fit.h).
  std::vector<BufferId> default_order;
  // One pass of first fit in the default order, in placer work units: what
  // a greedy pass costs here (set by the heuristics stage).
  std::uint64_t pass_work = 0;
  Incumbent best;
  Proof proof;
  std::uint64_t work = 0;        // units spent by every stage so far
  // True when the last stage that ran lowered the incumbent.
  bool last_gained = false;

  const PoolProblem& pool() const { return merged.pool(); }
  std::size_t buffers() const { return merged.pool().buffers.size(); }
  double effort() const;
  // A budget given at effort 1, scaled by the effort.
  std::uint64_t budget(std::uint64_t work_at_effort_1) const;
  // Above the good-enough height, and neither out of time nor stopped.
  bool open();
  // The placement engine the greedy stages share (its marks and work
  // counter carry from one stage to the next), made at first use.
  heur::Placer& placer();
  std::optional<heur::Placer> shared_placer;  // what placer() returns
};

// One step of a search.
class Stage {
 public:
  virtual ~Stage() = default;
  // Recorded in PoolSolution::stages after the stage ran ("heuristics",
  // "local search", "exact"); empty: what it reached is recorded with the
  // next stage that has a name.
  virtual std::string_view name() const = 0;
  // Improves state.best if it can; false when the stage's condition did not
  // hold and it did nothing.
  virtual bool run(SearchState& state) const = 0;
};

using StageList = std::vector<std::shared_ptr<const Stage>>;

// How a list's solution is named and when its search is good enough.
struct SearchSettings {
  // A plan at most this share above the lower bound ends the search.
  double gap_tolerance = 1e-4;
};

// Runs `stages` in order on every pool. The solution is named after
// `info`: "<name>:<winner>" when the algorithm selects
// (AlgorithmInfo::selects), else "<name>".
PoolSolution runStages(const StageList& stages, const AlgorithmInfo& info,
                       const SearchSettings& settings, const PoolProblem& problem,
                       const AlgorithmParams& params);

// An algorithm that is a declared list of stages.
std::unique_ptr<Algorithm> makeStagedAlgorithm(const AlgorithmInfo& info, StageList stages,
                                               SearchSettings settings = {});

}  // namespace memplan::search

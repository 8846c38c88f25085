// Runs a declared list of search stages (search_stage.h).
#include "algorithms/search_stage.h"

#include <algorithm>

#include <fmt/format.h>

#include "algorithms/best_fit.h"

namespace memplan::search {

bool Incumbent::offer(Bytes h, const std::vector<Offset>& o, std::string_view l) {
  if (h >= height) return false;
  height = h;
  offsets = o;
  label = l;
  return true;
}

double SearchState::effort() const { return std::max(0.0, params.effort); }

std::uint64_t SearchState::budget(std::uint64_t work_at_effort_1) const {
  return static_cast<std::uint64_t>(
      std::min(1e18, effort() * static_cast<double>(work_at_effort_1)));
}

bool SearchState::open() { return best.height > enough && !watch.due(); }

heur::Placer& SearchState::placer() {
  if (!shared_placer) shared_placer.emplace(merged.pool());
  return *shared_placer;
}

namespace {

// One progress line: the stage, the height reached and its ratio to the bound.
void reportProgress(const SearchState& s, std::string_view stage) {
  if (!s.params.progress) return;
  const Bytes target = s.bounds.target;
  const double ratio =
      target ? static_cast<double>(s.best.height) / static_cast<double>(target) : 1.0;
  s.params.progress(fmt::format("{}: height {} ({:.4f}x lower bound {})", stage, s.best.height,
                                ratio, target));
}

// One pool: the stages in order on its merged problem.
pool::Placement runOnPool(const StageList& stages, const AlgorithmInfo& info,
                          const SearchSettings& settings, SearchState& s,
                          std::vector<SearchStage>& record) {
  const Bytes target = s.bounds.target;
  s.enough = target + static_cast<Bytes>(std::max(0.0, settings.gap_tolerance) *
                                         static_cast<double>(target));
  s.default_order = heur::makeOrder(s.pool(), heur::FitParams{}.order);
  std::uint64_t recorded_work = 0;  // work up to the last record
  for (const auto& stage : stages) {
    const Bytes before = s.best.height;
    if (!stage->run(s)) continue;
    s.last_gained = s.best.height < before;
    if (stage->name().empty()) continue;
    record.push_back({std::string(stage->name()), s.best.height + s.bounds.padding,
                      s.work - recorded_work});
    recorded_work = s.work;
    reportProgress(s, stage->name());
  }
  pool::Placement out;
  out.offsets = std::move(s.best.offsets);
  out.label = info.selects ? fmt::format("{}:{}", info.name, s.best.label) : std::string(info.name);
  out.work = s.work;
  out.proven_optimal = s.proof.optimal;
  out.proven_height = s.proof.height;
  return out;
}

class StagedAlgorithm : public Algorithm {
 public:
  StagedAlgorithm(const AlgorithmInfo& info, StageList stages, SearchSettings settings)
      : info_(info), stages_(std::move(stages)), settings_(settings) {}
  const AlgorithmInfo& info() const override { return info_; }
  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams& params) const override {
    return runStages(stages_, info_, settings_, problem, params);
  }

 private:
  const AlgorithmInfo& info_;  // static data
  StageList stages_;
  SearchSettings settings_;
};

}  // namespace

PoolSolution runStages(const StageList& stages, const AlgorithmInfo& info,
                       const SearchSettings& settings, const PoolProblem& problem,
                       const AlgorithmParams& params) {
  StopWatch watch(params.time_limit_seconds, params.stop);
  std::vector<SearchStage> record;
  PoolSolution sol = pool::solveOffsets(
      problem, [&](const pool::MergedProblem& m, const pool::Bounds& bounds) {
        SearchState s{.problem = problem, .merged = m, .bounds = bounds, .params = params,
                      .watch = watch};
        return runOnPool(stages, info, settings, s, record);
      });
  sol.stages = std::move(record);
  // Cut short only if the search would have gone on.
  if (!watch.reason().empty() && !sol.proven_optimal) sol.stopped = watch.reason();
  return sol;
}

std::unique_ptr<Algorithm> makeStagedAlgorithm(const AlgorithmInfo& info, StageList stages,
                                               SearchSettings settings) {
  return std::make_unique<StagedAlgorithm>(info, std::move(stages), settings);
}

}  // namespace memplan::search

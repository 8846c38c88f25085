// Planner speed by list size: model-like synthetic lists of 1k to 1M
// buffers (bounded concurrency, like real models). One greedy pass should
// grow as O(n log n); the lower bound is a sort and a sweep.
#include <benchmark/benchmark.h>

#include "algorithms/best_fit.h"
#include "algorithms/pool_util.h"
#include "synthetic.h"

namespace {

using namespace memplan;

const PoolProblem& listOf(std::size_t n) {
  static std::map<std::size_t, PoolProblem> cache;
  auto it = cache.find(n);
  if (it == cache.end()) it = cache.emplace(n, bench::modelLike(n, n)).first;
  return it->second;
}

void BM_LowerBound(benchmark::State& state) {
  const PoolProblem& p = listOf(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(lowerBound(p));
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_LowerBound)->RangeMultiplier(10)->Range(1000, 1000000)->Complexity(benchmark::oNLogN)
    ->Unit(benchmark::kMillisecond);

// One best-fit pass in the conflicts order (the portfolio's first).
void BM_BestFitPass(benchmark::State& state) {
  const PoolProblem& p = listOf(static_cast<std::size_t>(state.range(0)));
  const auto merged = pool::mergeInplace(p);
  heur::Placer placer(merged.pool());
  const auto order = heur::makeOrder(merged.pool(), heur::Order::Conflicts);
  std::vector<Offset> offsets(merged.pool().buffers.size());
  for (auto _ : state) benchmark::DoNotOptimize(placer.place(order, 0, heur::Fit::Best, offsets));
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_BestFitPass)->RangeMultiplier(10)->Range(1000, 1000000)->Complexity(benchmark::oNLogN)
    ->Unit(benchmark::kMillisecond);

// A whole algorithm as the CLI runs it (merge, pins, orders, passes).
void runAlgorithm(benchmark::State& state, const char* name) {
  const PoolProblem& p = listOf(static_cast<std::size_t>(state.range(0)));
  auto algo = makeAlgorithm(name);
  for (auto _ : state) benchmark::DoNotOptimize(algo->solve(p, {}).size);
  state.SetComplexityN(state.range(0));
}
void BM_BestFitPortfolio(benchmark::State& state) { runAlgorithm(state, "best_fit"); }
// TFLite Micro's greedy, exact (TFLM itself is O(n^2); see tflm_greedy.cpp).
void BM_TflmGreedy(benchmark::State& state) { runAlgorithm(state, "tflm_greedy"); }
BENCHMARK(BM_TflmGreedy)->RangeMultiplier(10)->Range(1000, 1000000)->Complexity(benchmark::oNLogN)
    ->Unit(benchmark::kMillisecond);
void BM_Auto(benchmark::State& state) { runAlgorithm(state, "auto"); }
BENCHMARK(BM_BestFitPortfolio)->RangeMultiplier(10)->Range(1000, 100000)
    ->Complexity(benchmark::oNLogN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Auto)->RangeMultiplier(10)->Range(1000, 100000)->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();

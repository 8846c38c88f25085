// Fuzzes the MiniMalloc CSV reader; accepted buffer lists are solved by
// best_fit and the solution replayed (pinned offsets must be kept).
#include "fuzz_common.h"
#include "memplan/io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memplan;
  BufferList list;
  try {
    list = readMiniMallocCsv(fuzz::asText(data, size), "fuzz.csv");
  } catch (const InputError&) {
    return 0;
  }
  const PoolProblem& problem = list.problem;
  if (problem.buffers.size() > fuzz::kMaxTensors) return 0;
  PoolSolution solution;
  try {
    solution = makeAlgorithm("best_fit")->solve(problem, fuzz::smallEffort());
  } catch (const PlanError&) {
    return 0;
  } catch (const InputError&) {
    return 0;
  }
  if (solution.offsets.size() != problem.buffers.size())
    fuzz::bug("best_fit", "one offset per buffer expected");
  // The solution as a one-pool spec plan: closed lifetimes [start, end - 1].
  GraphPlan plan;
  plan.bufsizes = {0, solution.size};
  PoolInfo pool;
  pool.mem_id = 1;
  pool.reserved = problem.reserved;
  plan.pools.push_back(pool);
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    const Offset off = solution.offsets[i];
    if (b.fixed_offset && *b.fixed_offset != off) fuzz::bug("best_fit", "pinned offset moved");
    if (b.alignment > 1 && off % b.alignment != 0) fuzz::bug("best_fit", "misaligned offset");
    Spec s;
    s.id = static_cast<SpecId>(i);
    s.name = b.name;
    s.nbytes = b.size;
    s.first = b.start;
    s.last = b.end - 1;
    s.planned = true;
    plan.specs.specs.push_back(s);
    plan.allocations.push_back({s.id, 1, 0, off, b.size});
  }
  ReplayOptions o;
  o.max_dense_bytes = std::uint64_t{64} << 20;
  const ReplayResult r = replaySpecs(plan, o);
  if (!r.ok()) fuzz::bug("replay rejected a plan", r.message);
  return 0;
}

// The algorithm interface: one pool's buffers in, one offset per buffer out.
//
// Every algorithm lives in one file under src/algorithms/ and is registered
// by name in src/algorithms/registry.cpp. An algorithm sees only a
// PoolProblem: buffers with a size, a half-open lifetime [start, end), an
// alignment and optional constraints. It never sees the graph. What it is
// (AlgorithmInfo) is data: planning, the verifier and the readers act on
// those facts, never on an algorithm's name.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/types.h"

namespace memplan {

struct Buffer {
  BufferId id = 0;          // position in PoolProblem::buffers
  BufferId inplace_base = kNone;  // ExecuTorch inplace_base: same offset as
                                  // that buffer, own lifetime
  std::string name;         // for messages only
  TimeValue start = 0;      // first step alive
  TimeValue end = 0;        // one past the last step alive (start < end)
  Bytes size = 0;           // bytes to reserve (already rounded to alignment)
  Bytes nbytes = 0;         // unrounded size (ExecuTorch's greedy sorts on it)
  Bytes alignment = 1;      // offsets must be multiples of this (any value >= 1)
  std::optional<Offset> fixed_offset;   // pinned placement: absolute offset
                                        // in the pool (>= reserved prefix)
  std::optional<Offset> hint;           // preferred offset, if the algorithm
                                        // honours hints (AlgorithmInfo)
  std::vector<Gap> gaps;                // windows holding fewer bytes
  bool overlaps(const Buffer& o) const { return start < o.end && o.start < end; }
};

struct PoolProblem {
  MemId mem_id = 1;
  std::vector<Buffer> buffers;          // in insertion (first-appearance) order
  Bytes reserved = 0;                   // prefix held by control-flow bodies
  Bytes extra_padding = 0;              // added to the end of a used pool
  std::optional<Bytes> capacity;        // pool size limit, if any
};

// What one stage of a search had reached when it ended.
struct SearchStage {
  std::string stage;                    // "heuristics", "local search", "exact"
  Bytes size = 0;                       // pool bytes of the best plan so far
  std::uint64_t work = 0;               // work units the stage spent
};

struct PoolSolution {
  std::vector<Offset> offsets;          // absolute (reserved prefix included)
  std::vector<std::int32_t> mem_obj_ids;  // ExecuTorch shared object ids, or
                                          // all 0 for offset-based algorithms
  Bytes size = 0;                       // pool bytes (prefix + padding incl.)
  std::string algorithm;                // who produced it (suite: the winner)
  bool proven_optimal = false;          // size is the minimum possible
  // Proven: no plan of this pool is smaller (at least lowerBound(); higher
  // when a search proved more; 0 = not computed). size - lower_bound is the
  // most a better algorithm could still gain.
  Bytes lower_bound = 0;
  std::uint64_t work = 0;               // search nodes / moves spent
  // The searches' stages in order, each with the size reached (empty for
  // the one-pass algorithms).
  std::vector<SearchStage> stages;
  // Why the search ended before its work budget: "" (it did not),
  // "time limit" (AlgorithmParams::time_limit_seconds) or "interrupted"
  // (AlgorithmParams::stop). The plan is the best found until then.
  std::string stopped;
};

// What every algorithm shares. Effort is counted in work units (nodes,
// moves), never in time, so results are deterministic; each algorithm's own
// switches live in its own params struct (src/algorithms).
struct AlgorithmParams {
  double effort = 1.0;                  // scales every work budget
  double time_limit_seconds = 0;        // 0 = none; optional wall-clock cap on
                                        // top of the work budgets. Where it cuts
                                        // a search short, the plan depends on
                                        // the machine's speed and load: not
                                        // repeatable (PoolSolution::stopped)
  std::uint64_t seed = 0x6d656d706c616eULL;  // for randomized perturbation
  std::function<void(std::string_view)> progress;  // optional status line
  // Optional: another thread (the CLI on Ctrl-C) sets it to end the search
  // early; the best plan found so far is returned (PoolSolution::stopped).
  // The first complete plan is always finished.
  const std::atomic<bool>* stop = nullptr;
};

// How a plan's bufsizes are laid out around the pools' reserved prefixes.
enum class BufsizesLayout : std::uint8_t {
  // bufsizes[m] = max(reserved[m], pool size), as long as the longer of the
  // reserved list and the largest used mem_id, at least [0, 0].
  Memplan,
  // ExecuTorch's greedy: one entry per mem_id up to the largest used (pools
  // without specs 0), at least [0, 0].
  ExecutorchGreedy,
  // ExecuTorch's naive: the reserved list (or [0, 0]) extended to the
  // largest used mem_id, used pools replaced by their size.
  ExecutorchNaive,
};

// What an algorithm is. Every algorithm declares it once.
struct AlgorithmInfo {
  std::string_view name;
  std::string_view summary;          // one line, for `memplan algorithms`
  // Reproduces ExecuTorch bit for bit: in-place (inplace_base) buffers keep
  // their own lifetimes at their base's offset, as ExecuTorch places them,
  // so a plan may be unsafe exactly where ExecuTorch's is (it is reported,
  // not refused); pinned offsets are refused.
  bool executorch_exact = false;
  BufsizesLayout layout = BufsizesLayout::Memplan;
  bool honours_extra_padding = true;  // ExecuTorch's naive ignores it
  bool honours_pins = true;           // Buffer::fixed_offset
  bool honours_gaps = false;          // else gaps are dropped before solving
                                      // (the buffer holds all its bytes)
  bool honours_hints = false;         // Buffer::hint
  // Runs other algorithms and keeps the smallest result, naming the winner.
  bool selects = false;
  // Selects over whole graphs (sum of bufsizes, first wins ties) among these
  // algorithms, as ExecuTorch's suite does; empty = works pool by pool.
  std::vector<std::string_view> whole_graph_candidates;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  // Static data: the reference outlives the algorithm object.
  virtual const AlgorithmInfo& info() const = 0;
  std::string_view name() const { return info().name; }
  virtual PoolSolution solve(const PoolProblem& problem,
                             const AlgorithmParams& params) const = 0;
};

// Registry. Names: "naive", "greedy", "greedy_no_overlap", "suite" (the
// ExecuTorch suite), "auto" (default) and the offset-based algorithms.
std::unique_ptr<Algorithm> makeAlgorithm(std::string_view name);  // null if unknown
std::vector<std::string> algorithmNames();
// The info of a registered algorithm; null if unknown.
const AlgorithmInfo* findAlgorithmInfo(std::string_view name);

// Max over time of the summed sizes of live buffers (sweep, O(n log n)),
// plus the reserved prefix, plus extra_padding when any buffer exists; also
// at least max(fixed_offset + size). No placement can be smaller.
Bytes lowerBound(const PoolProblem& problem);

}  // namespace memplan

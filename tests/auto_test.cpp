// "auto", the default algorithm: never worse than ExecuTorch's greedy on
// the ExecuTorch conformance spec lists, at the bound when the bound is
// reachable by its stages, deterministic, switches honoured.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "algorithms/auto.h"
#include "algorithms/pool_util.h"
#include "algorithms/random.h"
#include "memplan/algorithm.h"
#include "memplan/io.h"
#include "support/placement_check.h"
#include "support/test_support.h"

namespace memplan {
namespace {

// Auto's list with only its first fit and best fit: no ExecuTorch greedy,
// no portfolio passes, no search stages.
AutoParams heuristicsOnly() {
  AutoParams p;
  p.heuristics.executorch_greedy = false;
  p.portfolio = {.work = 0, .full_max_buffers = 0};
  p.with_local_search = false;
  p.with_exact = false;
  return p;
}

// Buffer i of a generated list, id and name set; the caller fills in the rest.
Buffer listBuffer(std::size_t i) {
  Buffer b;
  b.id = static_cast<BufferId>(i);
  b.name = "t" + std::to_string(i);
  return b;
}

struct Case {
  std::string name;
  std::string algorithm;
  std::map<MemId, PoolProblem> pools;
  std::map<MemId, Bytes> expected;  // ExecuTorch's bufsizes
};

Bytes roundUp(Bytes v, Bytes a) { return a <= 1 ? v : (v + a - 1) / a * a; }

// The spec list as pools, read with a few lines of JSON: closed lifetimes
// [a, b] become [a, b + 1); an in-place spec joins its base's pool.
Case readCase(const std::filesystem::path& path) {
  const auto j = nlohmann::json::parse(test::readText(path));
  Case c;
  c.name = j.at("name").get<std::string>();
  c.algorithm = j.at("algorithm").get<std::string>();
  const Bytes align = j.at("alignment").get<Bytes>();
  const Bytes padding = c.algorithm == "naive" ? 0 : j.at("extra_padding").get<Bytes>();
  std::map<std::int64_t, const nlohmann::json*> by_id;
  for (const auto& s : j.at("specs")) by_id[s.at("id").get<std::int64_t>()] = &s;
  auto memOf = [&](const nlohmann::json& s) {
    const nlohmann::json* x = &s;
    for (int hops = 0; hops < 64 && !x->at("inplace_base").is_null(); ++hops)
      x = by_id.at(x->at("inplace_base").get<std::int64_t>());
    return x->at("mem_id").is_null() ? MemId{1} : x->at("mem_id").get<MemId>();
  };
  std::map<std::int64_t, std::pair<MemId, BufferId>> where;
  for (const auto& s : j.at("specs")) {
    const MemId mem = memOf(s);
    PoolProblem& p = c.pools[mem];
    p.mem_id = mem;
    Buffer b;
    b.id = static_cast<BufferId>(p.buffers.size());
    b.name = "spec" + std::to_string(s.at("id").get<std::int64_t>());
    b.start = s.at("lifetime").at(0).get<TimeValue>();
    b.end = s.at("lifetime").at(1).get<TimeValue>() + 1;
    b.nbytes = s.at("nbytes").get<Bytes>();
    b.size = roundUp(b.nbytes, align);
    b.alignment = std::max<Bytes>(1, align);
    where[s.at("id").get<std::int64_t>()] = {mem, b.id};
    p.buffers.push_back(b);
  }
  for (const auto& s : j.at("specs")) {
    if (s.at("inplace_base").is_null()) continue;
    const auto [mem, id] = where.at(s.at("id").get<std::int64_t>());
    c.pools[mem].buffers[id].inplace_base = where.at(s.at("inplace_base").get<std::int64_t>()).second;
  }
  const auto& reserved = j.at("input_mem_buffer_sizes");
  for (auto& [mem, p] : c.pools) {
    p.extra_padding = padding;
    if (reserved.is_array() && static_cast<std::size_t>(mem) < reserved.size())
      p.reserved = reserved.at(mem).get<Bytes>();
  }
  if (j.contains("expected")) {
    const auto& sizes = j.at("expected").at("bufsizes");
    for (auto& [mem, p] : c.pools)
      if (static_cast<std::size_t>(mem) < sizes.size()) c.expected[mem] = sizes.at(mem).get<Bytes>();
  }
  return c;
}

std::vector<std::filesystem::path> conformanceFiles() {
  std::vector<std::filesystem::path> files;
  const auto dir = test::dataDir() / "executorch-conformance";
  if (!std::filesystem::exists(dir)) return files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(Auto, NeverWorseThanItsPartsOnConformanceLists) {
  const auto files = conformanceFiles();
  ASSERT_GE(files.size(), 300u) << "conformance cases missing from " << test::dataDir();
  auto automatic = makeAlgorithm("auto");
  auto greedy = makeAlgorithm("greedy");
  ASSERT_TRUE(automatic);
  ASSERT_TRUE(greedy);
  int pools = 0, better = 0, unsafe = 0, at_bound = 0;
  for (const auto& f : files) {
    const Case c = readCase(f);
    for (const auto& [mem, p] : c.pools) {
      const PoolSolution s = automatic->solve(p, {});
      // Checked by the test's own checker: auto accepts its candidates with
      // pool::checkPlacement, which therefore cannot judge them (with its
      // overlap sweep broken and one of auto's buffers moved down by its
      // alignment, this fails: "'spec31' and 'spec56' share bytes [1855,
      // 1856) at step 269").
      ASSERT_EQ(test::checkPoolPlacement(p, s.offsets), "") << c.name << " pool " << mem;
      ASSERT_EQ(s.size, test::placementBytes(p, s.offsets)) << c.name;
      const Bytes lb = lowerBound(p);
      ASSERT_GE(s.size, lb) << c.name;
      if (s.size == lb) {
        ++at_bound;
        EXPECT_TRUE(s.proven_optimal) << c.name;
      }
      ++pools;
      // ExecuTorch places in-place results last, at their base's offset,
      // where another tensor may already live (its defect 3): such a plan
      // is unsafe and its size no bar to clear. Only that comparison is
      // skipped: a build whose auto grows only where greedy is unsafe fails
      // below (greedy-101-0045: 160 bytes, best_fit 128).
      const PoolSolution g = greedy->solve(p, {});
      if (test::checkPoolPlacement(p, g.offsets).empty())
        ASSERT_LE(s.size, g.size) << c.name << " pool " << mem;
      else
        ++unsafe;
      for (const char* part : {"best_fit", "first_fit"})
        ASSERT_LE(s.size, makeAlgorithm(part)->solve(p, {}).size) << c.name << " " << part;
      // ExecuTorch's own numbers for the same pool, when the plan they come
      // from (the case's algorithm, bit-exact with ExecuTorch) is safe.
      const bool executorch_safe =
          c.algorithm == "greedy"
              ? test::checkPoolPlacement(p, g.offsets).empty()
              : test::checkPoolPlacement(p, makeAlgorithm(c.algorithm)->solve(p, {}).offsets).empty();
      if (c.expected.count(mem) && c.algorithm != "naive" && executorch_safe) {
        ASSERT_LE(s.size, c.expected.at(mem)) << c.name << " pool " << mem;
        if (s.size < c.expected.at(mem)) ++better;
      }
    }
  }
  std::printf("%d pools: %d at the lower bound, smaller than ExecuTorch on %d, "
              "ExecuTorch's plan unsafe on %d\n", pools, at_bound, better, unsafe);
  EXPECT_GT(pools, 300);
  EXPECT_GT(better, 60);  // 74 at the time of writing
  EXPECT_GE(at_bound * 10, pools * 9);
}

TEST(Auto, DeterministicOnConformanceLists) {
  const auto files = conformanceFiles();
  ASSERT_GE(files.size(), 300u) << "conformance cases missing from " << test::dataDir();
  auto automatic = makeAlgorithm("auto");
  AlgorithmParams params;
  params.effort = 0.1;
  for (std::size_t i = 0; i < files.size(); i += 7) {
    const Case c = readCase(files[i]);
    for (const auto& [mem, p] : c.pools) {
      const PoolSolution a = automatic->solve(p, params);
      const PoolSolution b = automatic->solve(p, params);
      ASSERT_EQ(a.offsets, b.offsets) << c.name;
      ASSERT_EQ(a.algorithm, b.algorithm) << c.name;
      ASSERT_EQ(a.work, b.work) << c.name;
    }
  }
}

TEST(Auto, SwitchesAndProgress) {
  // MiniMalloc's challenging instance C: best fit alone is 1.36x the bound.
  const auto csv = test::dataDir() / "minimalloc-challenging" / "C.1048576.csv";
  const PoolProblem p = readMiniMallocCsv(test::readText(csv), "C.1048576.csv").problem;
  const Bytes lb = lowerBound(p);
  std::vector<std::string> lines;
  AlgorithmParams params;
  params.progress = [&](std::string_view line) { lines.emplace_back(line); };
  const PoolSolution full = makeAlgorithm("auto")->solve(p, params);
  EXPECT_EQ(test::checkPoolPlacement(p, full.offsets), "");
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.front().find("height"), std::string::npos) << lines.front();
  EXPECT_NE(lines.front().find("lower bound"), std::string::npos) << lines.front();

  // Every stage off: the better of first fit and best fit (first wins ties).
  const AutoParams none = heuristicsOnly();
  const PoolSolution heur = makeAutoAlgorithm(none)->solve(p, {});
  const PoolSolution best = makeAlgorithm("best_fit")->solve(p, {});
  const PoolSolution first = makeAlgorithm("first_fit")->solve(p, {});
  const PoolSolution& winner = first.size <= best.size ? first : best;
  ASSERT_GT(winner.size, lb) << "the list should need the search";
  EXPECT_EQ(heur.size, winner.size);
  EXPECT_EQ(heur.offsets, winner.offsets);
  EXPECT_EQ(heur.algorithm, "auto:" + winner.algorithm);
  EXPECT_LE(full.size, heur.size);
  EXPECT_GE(full.size, lb);

  // Effort 0: the two passes, no search budget, still a valid plan.
  AlgorithmParams zero;
  zero.effort = 0;
  AutoParams no_greedy;
  no_greedy.heuristics.executorch_greedy = false;
  const PoolSolution quick = makeAutoAlgorithm(no_greedy)->solve(p, zero);
  EXPECT_EQ(test::checkPoolPlacement(p, quick.offsets), "");
  EXPECT_EQ(quick.size, heur.size);
  EXPECT_LE(quick.work, heur.work);
}

// Best fit is one of stage 1's heuristics only on pools of at most
// AutoParams::heuristics.best_fit_max_buffers buffers: on a list where it beats first
// fit, auto with the later stages off returns best fit's plan at the
// threshold and first fit's one buffer above it.
TEST(Auto, BestFitOnlyUpToItsThreshold) {
  SplitMix64 rng(5);
  for (int tries = 0; tries < 500; ++tries) {
    PoolProblem p;
    const std::size_t n = 20 + rng.below(40);
    for (std::size_t i = 0; i < n; ++i) {
      Buffer b = listBuffer(i);
      b.start = static_cast<TimeValue>(rng.below(30));
      b.end = b.start + 1 + static_cast<TimeValue>(rng.below(8));
      b.size = b.nbytes = 1 + rng.below(100);
      p.buffers.push_back(b);
    }
    const PoolSolution best = makeAlgorithm("best_fit")->solve(p, {});
    const PoolSolution first = makeAlgorithm("first_fit")->solve(p, {});
    if (best.size >= first.size) continue;
    AutoParams none = heuristicsOnly();
    none.heuristics.best_fit_max_buffers = n;
    const PoolSolution at = makeAutoAlgorithm(none)->solve(p, {});
    EXPECT_EQ(at.size, best.size);
    EXPECT_EQ(at.offsets, best.offsets);
    EXPECT_EQ(at.algorithm, "auto:" + best.algorithm);
    none.heuristics.best_fit_max_buffers = n - 1;
    const PoolSolution above = makeAutoAlgorithm(none)->solve(p, {});
    EXPECT_EQ(above.size, first.size);
    EXPECT_EQ(above.offsets, first.offsets);
    EXPECT_EQ(above.algorithm, "auto:" + first.algorithm);
    return;
  }
  FAIL() << "no list where best fit beats first fit";
}

// Stage 1's parts run on threads of their own, on one thread, or one
// after another above concurrent_max_buffers: the plan, the work counted
// and the part that won are the same every way. The seeds are lists where
// first fit, greedy, best fit and greedy win.
TEST(Auto, SameResultOnAnyNumberOfThreads) {
  for (const std::uint64_t seed : {1, 3, 7, 11}) {
    SplitMix64 rng(seed);
    PoolProblem p;
    const std::size_t n = 2'000;
    for (std::size_t i = 0; i < n; ++i) {
      Buffer b = listBuffer(i);
      b.start = static_cast<TimeValue>(rng.below(600));
      b.end = b.start + 1 + static_cast<TimeValue>(rng.below(1 + seed * 10));
      b.size = b.nbytes = 1 + rng.below(std::uint64_t{1} << (1 + rng.below(20)));
      p.buffers.push_back(b);
    }
    AutoParams threads = heuristicsOnly();
    threads.heuristics.executorch_greedy = true;
    threads.heuristics.threads = 3;
    threads.peak_stack.max_buffers = 0;
    const PoolSolution base = makeAutoAlgorithm(threads)->solve(p, {});
    AutoParams one = threads, serial = threads;
    one.heuristics.threads = 1;
    serial.heuristics.concurrent_max_buffers = n - 1;
    for (const AutoParams& other : {one, serial}) {
      const PoolSolution got = makeAutoAlgorithm(other)->solve(p, {});
      EXPECT_EQ(got.size, base.size) << "seed " << seed;
      EXPECT_EQ(got.offsets, base.offsets) << "seed " << seed;
      EXPECT_EQ(got.work, base.work) << "seed " << seed;
      EXPECT_EQ(got.algorithm, base.algorithm) << "seed " << seed;
    }
    EXPECT_EQ(test::checkPoolPlacement(p, base.offsets), "");
  }
}

// On large dense lists (above best_fit_max_buffers, so auto's stage 1 is
// first fit and ExecuTorch's greedy alone): auto is never larger than
// greedy, whose plan it must beat or match on its own. Three shapes: short
// and long lifetimes mixed with sizes over six orders of magnitude, sizes
// and lengths log-uniform, and the same with alignment 64 (greedy sorts on
// nbytes, so its objects are not always in size order).
TEST(Auto, NeverAboveGreedyOnLargeDenseLists) {
  auto automatic = makeAlgorithm("auto");
  auto greedy = makeAlgorithm("greedy");
  for (int shape = 0; shape < 3; ++shape) {
    SplitMix64 rng(100 + static_cast<std::uint64_t>(shape));
    PoolProblem p;
    const std::size_t n = 60'000;
    for (std::size_t i = 0; i < n; ++i) {
      Buffer b = listBuffer(i);
      TimeValue len;
      if (shape == 0) {
        b.start = static_cast<TimeValue>(i / 2);
        len = rng.below(10) < 6 ? 1 + static_cast<TimeValue>(rng.below(8))
                                : static_cast<TimeValue>(std::exp(rng.unit() * std::log(3000.0)));
        b.nbytes = static_cast<Bytes>(std::exp2(4 + rng.unit() * 20));
      } else {
        b.start = static_cast<TimeValue>(rng.below(n * 145 / 1600));
        len = static_cast<TimeValue>(std::exp(rng.unit() * std::log(1000.0)));
        b.nbytes = static_cast<Bytes>(std::exp2(6 + rng.unit() * 14));
      }
      b.end = b.start + std::max<TimeValue>(1, len);
      b.alignment = shape == 2 ? 64 : 1;
      b.size = roundUp(b.nbytes, b.alignment);
      p.buffers.push_back(b);
    }
    const PoolSolution s = automatic->solve(p, {});
    const PoolSolution g = greedy->solve(p, {});
    ASSERT_EQ(test::checkPoolPlacement(p, s.offsets), "") << "shape " << shape;
    ASSERT_EQ(test::checkPoolPlacement(p, g.offsets), "") << "shape " << shape;
    EXPECT_LE(s.size, g.size) << "shape " << shape;
    EXPECT_GE(s.size, lowerBound(p)) << "shape " << shape;
  }
}

TEST(Auto, EmptyPool) {
  PoolProblem p;
  p.reserved = 64;
  p.extra_padding = 16;
  const PoolSolution s = makeAlgorithm("auto")->solve(p, {});
  EXPECT_TRUE(s.offsets.empty());
  EXPECT_EQ(s.size, 64u);
  EXPECT_TRUE(s.proven_optimal);
}

}  // namespace
}  // namespace memplan

// Exact search checked against a brute force on small random pools, plus
// feasibility at the bounds, validity, anytime behaviour and determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "algorithms/exact_search.h"
#include "algorithms/random.h"
#include "memplan/algorithm.h"
#include "memplan/io.h"
#include "support/test_support.h"

namespace memplan {
std::unique_ptr<Algorithm> makeExactAlgorithm();  // exact.cpp
}

namespace memplan::exact {
namespace {

// Independent validity check: returns "" or the first problem.
std::string invalid(const PoolProblem& p, const std::vector<Offset>& off, Bytes capacity) {
  if (off.size() != p.buffers.size()) return "wrong offset count";
  for (std::size_t a = 0; a < off.size(); ++a) {
    const Buffer& x = p.buffers[a];
    if (off[a] < p.reserved) return "below reserved prefix";
    if (off[a] % std::max<Bytes>(1, x.alignment) != 0) return "misaligned";
    if (x.fixed_offset && off[a] != *x.fixed_offset) return "pin moved";
    if (x.inplace_base != kNone && off[a] != off[x.inplace_base]) return "in-place pair split";
    if (off[a] + x.size > capacity) return "above capacity";
    for (std::size_t b = a + 1; b < off.size(); ++b) {
      const Buffer& y = p.buffers[b];
      if (x.inplace_base == static_cast<BufferId>(b) || y.inplace_base == static_cast<BufferId>(a))
        continue;
      if (x.size == 0 || y.size == 0 || !x.overlaps(y)) continue;
      if (off[a] < off[b] + y.size && off[b] < off[a] + x.size) return "buffers collide";
    }
  }
  return "";
}

// Brute force: the best over every order of "lowest aligned offset that
// clears the buffers placed so far" is optimal (process any optimal layout
// by offset: each buffer fits at or below its place there).
Bytes bruteForce(const PoolProblem& p) {
  const std::size_t n = p.buffers.size();
  std::vector<std::size_t> perm, pinned;
  for (std::size_t i = 0; i < n; ++i)
    (p.buffers[i].fixed_offset ? pinned : perm).push_back(i);
  Bytes best = std::numeric_limits<Bytes>::max();
  std::vector<Offset> off(n, 0);
  do {
    std::vector<std::size_t> placed = pinned;
    Bytes h = p.reserved;
    for (std::size_t f : pinned) {
      off[f] = *p.buffers[f].fixed_offset;
      h = std::max(h, off[f] + p.buffers[f].size);
    }
    for (std::size_t b : perm) {
      const Buffer& buf = p.buffers[b];
      const Bytes al = std::max<Bytes>(1, buf.alignment);
      Offset x = (p.reserved + al - 1) / al * al;
      for (bool moved = true; moved;) {
        moved = false;
        for (std::size_t o : placed) {
          const Buffer& ob = p.buffers[o];
          if (ob.overlaps(buf) && x < off[o] + ob.size && off[o] < x + buf.size) {
            x = (off[o] + ob.size + al - 1) / al * al;
            moved = true;
          }
        }
      }
      off[b] = x;
      placed.push_back(b);
      h = std::max(h, x + buf.size);
    }
    best = std::min(best, h);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

// Draws from memplan's own generator (std distributions differ between
// standard libraries: a seed must name the same pools everywhere).
PoolProblem randomProblem(SplitMix64& rng, int n, bool extras) {
  PoolProblem p;
  const auto t = [](SplitMix64& r) { return static_cast<TimeValue>(r.range(0, 6)); };
  const auto len = [](SplitMix64& r) { return static_cast<TimeValue>(r.range(1, 5)); };
  const auto sz = [](SplitMix64& r) { return r.range(1, 9); };
  const auto coin = [](SplitMix64& r) { return r.range(0, 5); };
  if (extras && coin(rng) == 0) p.reserved = 3;
  for (int i = 0; i < n; ++i) {
    Buffer b;
    b.id = i;
    b.start = t(rng);
    b.end = b.start + len(rng);
    b.size = static_cast<Bytes>(sz(rng));
    if (extras && coin(rng) == 0) b.alignment = 4;
    if (b.alignment > 1) b.size = (b.size + 3) / 4 * 4;
    b.nbytes = b.size;
    p.buffers.push_back(b);
  }
  if (extras && n > 2 && coin(rng) < 2) {
    // Pin the first buffer somewhere plausible (above the prefix).
    p.buffers[0].fixed_offset = p.reserved + 4 * static_cast<Offset>(coin(rng));
    p.buffers[0].alignment = 1;
  }
  return p;
}

Bytes sweepBound(const PoolProblem& p) {
  Bytes lb = p.reserved;
  for (const Buffer& a : p.buffers) {
    Bytes live = p.reserved;
    for (const Buffer& b : p.buffers)
      if (b.start <= a.start && a.start < b.end) live += b.size;
    lb = std::max(lb, live);
    if (a.fixed_offset) lb = std::max(lb, *a.fixed_offset + a.size);
  }
  return lb;
}

TEST(ExactSearch, MatchesBruteForceOnRandomPools) {
  SplitMix64 rng(12345);
  const ExactParams params;
  int reached_bound = 0, above_bound = 0;
  for (int round = 0; round < 1000; ++round) {
    const int n = 2 + round % 6 + (round % 40 == 0 ? 1 : 0);  // 2..8 buffers
    const PoolProblem p = randomProblem(rng, n, round % 2 == 1);
    const Bytes opt = bruteForce(p);
    const Bytes lb = sweepBound(p);
    (opt == lb ? reached_bound : above_bound)++;
    SCOPED_TRACE("round " + std::to_string(round));
    // At the optimum: found, valid; one below: proven impossible.
    const ExactResult at = solveWithinCapacity(p, opt, params);
    ASSERT_TRUE(at.found);
    EXPECT_EQ(invalid(p, at.offsets, opt), "");
    EXPECT_EQ(at.height, opt);
    if (opt > 0) {
      const ExactResult below = solveWithinCapacity(p, opt - 1, params);
      EXPECT_FALSE(below.found);
      EXPECT_TRUE(below.proven_infeasible);
    }
    // Around the lower bound.
    if (lb > 0) {
      const ExactResult r = solveWithinCapacity(p, lb - 1, params);
      EXPECT_FALSE(r.found);
      EXPECT_TRUE(r.proven_infeasible);
    }
    for (Bytes cap : {lb, lb + 1}) {
      const ExactResult r = solveWithinCapacity(p, cap, params);
      EXPECT_EQ(r.found, opt <= cap) << "capacity " << cap << " optimum " << opt;
      EXPECT_EQ(r.proven_infeasible, opt > cap);
      if (r.found) {
        EXPECT_EQ(invalid(p, r.offsets, cap), "");
      }
    }
  }
  // The generator must exercise both outcomes.
  EXPECT_GT(reached_bound, 100) << above_bound;
  EXPECT_GT(above_bound, 30) << reached_bound;
}

TEST(ExactSearch, EverySwitchOffStillExact) {
  SplitMix64 rng(777);
  for (int sw = 0; sw < 14; ++sw) {
    ExactParams params;
    switch (sw) {
      case 0: params.canonical_only = false; break;
      case 1: params.section_inference = false; break;
      case 2: params.check_dominance = false; break;
      case 3: params.dynamic_decomposition = false; break;
      case 4: params.restarts = false; break;
      case 5: params.unallocated_floor = false; break;
      case 6: params.dynamic_ordering = false; break;
      case 7: params.static_preordering = false; break;
      case 8: params.monotonic_floor = false; break;
      case 9: params.hatless_pruning = false; break;
      case 10: params.symmetry_breaking = false; break;
      case 11: params.capacity_inference = false; break;
      case 12: params.pin_obstacles = false; break;
      case 13: params.preorders = {"ZLU"}; break;
    }
    for (int round = 0; round < 40; ++round) {
      const PoolProblem p = randomProblem(rng, 2 + round % 6, round % 2 == 0);
      const Bytes opt = bruteForce(p);
      SCOPED_TRACE("switch " + std::to_string(sw) + " round " + std::to_string(round));
      const ExactResult at = solveWithinCapacity(p, opt, params);
      ASSERT_TRUE(at.found);
      EXPECT_EQ(invalid(p, at.offsets, opt), "");
      if (opt > 0) {
        EXPECT_TRUE(solveWithinCapacity(p, opt - 1, params).proven_infeasible);
      }
    }
  }
}

TEST(ExactSearch, MinimizeNeverAboveIncumbentAndProvesOptimum) {
  SplitMix64 rng(4242);
  for (int round = 0; round < 80; ++round) {
    const PoolProblem p = randomProblem(rng, 3 + round % 5, round % 3 == 0);
    // Incumbent: everything stacked (valid, usually poor).
    std::vector<Offset> stacked(p.buffers.size());
    Offset x = p.reserved;
    Bytes h = p.reserved;
    bool pinned = false;
    for (const Buffer& b : p.buffers) pinned = pinned || b.fixed_offset.has_value();
    if (pinned) continue;  // a plain stack may collide with a pin
    for (std::size_t i = 0; i < p.buffers.size(); ++i) {
      const Bytes al = std::max<Bytes>(1, p.buffers[i].alignment);
      x = (x + al - 1) / al * al;
      stacked[i] = x;
      x += p.buffers[i].size;
      h = std::max(h, x);
    }
    ASSERT_EQ(invalid(p, stacked, h), "");
    const ExactResult r = minimizeHeight(p, stacked, sweepBound(p), ExactParams{});
    SCOPED_TRACE("round " + std::to_string(round));
    EXPECT_TRUE(r.found);
    EXPECT_LE(r.height, h);
    EXPECT_EQ(invalid(p, r.offsets, r.height), "");
    EXPECT_EQ(r.height, bruteForce(p));
    EXPECT_TRUE(r.proven_optimal);
    // A budget of one node cannot search, so the incumbent comes back.
    ExactParams tiny;
    tiny.node_limit = 1;
    tiny.restarts = false;
    const ExactResult t = minimizeHeight(p, stacked, sweepBound(p), tiny);
    EXPECT_LE(t.height, h);
    EXPECT_EQ(invalid(p, t.offsets, t.height), "");
  }
}

TEST(ExactSearch, WindowAroundThePeakKeepsPlacementValid) {
  SplitMix64 rng(2024);
  PoolProblem p;
  const auto t = [](SplitMix64& r) { return static_cast<TimeValue>(r.range(0, 60)); };
  const auto len = [](SplitMix64& r) { return static_cast<TimeValue>(r.range(1, 8)); };
  const auto sz = [](SplitMix64& r) { return r.range(1, 16); };
  for (int i = 0; i < 60; ++i) {
    Buffer b;
    b.id = i;
    b.start = t(rng);
    b.end = b.start + len(rng);
    b.size = b.nbytes = static_cast<Bytes>(sz(rng));
    p.buffers.push_back(b);
  }
  // Incumbent: everything stacked.
  std::vector<Offset> stacked;
  Offset x = 0;
  for (const Buffer& b : p.buffers) {
    stacked.push_back(x);
    x += b.size;
  }
  ExactParams params;
  params.window_threshold = 12;
  params.whole_probe_max_pairs = 0;  // the window alone
  const ExactResult r = minimizeHeight(p, stacked, sweepBound(p), params);
  EXPECT_EQ(invalid(p, r.offsets, r.height), "");
  EXPECT_LT(r.height, x);  // the top of the stack came down
  EXPECT_GT(r.height, sweepBound(p));  // ... but not to the bound
  EXPECT_GT(r.nodes, 0u);
  // Buffers far from the peak's window keep their offsets.
  std::size_t kept = 0;
  for (std::size_t b = 0; b < p.buffers.size(); ++b) kept += r.offsets[b] == stacked[b];
  EXPECT_GT(kept, 0u);

  // With the bound probed on the whole pool first, every buffer may move:
  // the bound fits and is proven.
  params.whole_probe_max_pairs = 1'000;
  const ExactResult whole = minimizeHeight(p, stacked, sweepBound(p), params);
  EXPECT_EQ(invalid(p, whole.offsets, whole.height), "");
  EXPECT_EQ(whole.height, sweepBound(p));
  EXPECT_TRUE(whole.proven_optimal);
  // Above the cap on pairs alive together, the window alone again.
  params.whole_probe_max_pairs = 10;
  EXPECT_EQ(minimizeHeight(p, stacked, sweepBound(p), params).offsets, r.offsets);
}

TEST(ExactSearch, InplacePairsShareOffsets) {
  PoolProblem p;
  auto add = [&](TimeValue s, TimeValue e, Bytes size, BufferId base) {
    Buffer b;
    b.id = static_cast<BufferId>(p.buffers.size());
    b.start = s;
    b.end = e;
    b.size = b.nbytes = size;
    b.inplace_base = base;
    p.buffers.push_back(b);
  };
  add(0, 3, 8, kNone);  // 0
  add(2, 6, 8, 0);      // 1 reuses 0's bytes
  add(0, 6, 4, kNone);  // 2 lives through both
  add(4, 6, 4, kNone);  // 3
  const ExactResult r = solveWithinCapacity(p, 16, ExactParams{});
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.offsets[0], r.offsets[1]);
  EXPECT_EQ(invalid(p, r.offsets, 16), "");
  EXPECT_EQ(r.height, 16u);  // 8 (pair) + 4 + 4 at time 4..6
  // The pair and buffer 2 are alive together at times 0..2 with 12 bytes,
  // but at 4..6 the pair, 2 and 3 need 16.
  EXPECT_TRUE(solveWithinCapacity(p, 15, ExactParams{}).proven_infeasible);
}

TEST(ExactSearch, PinnedBufferIsAnObstacle) {
  PoolProblem p;
  for (int i = 0; i < 3; ++i) {
    Buffer b;
    b.id = i;
    b.start = 0;
    b.end = 4;
    b.size = b.nbytes = 4;
    p.buffers.push_back(b);
  }
  p.buffers[0].fixed_offset = 4;  // sits in the middle: [4, 8)
  const ExactResult r = solveWithinCapacity(p, 12, ExactParams{});
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.offsets[0], 4u);
  EXPECT_EQ(invalid(p, r.offsets, 12), "");
  EXPECT_TRUE(solveWithinCapacity(p, 11, ExactParams{}).proven_infeasible);
  p.buffers[0].fixed_offset = 6;  // leaves [0, 6) and [10, ..): 4 + 4 needs 14
  const ExactResult r2 = solveWithinCapacity(p, 14, ExactParams{});
  ASSERT_TRUE(r2.found);
  EXPECT_EQ(invalid(p, r2.offsets, 14), "");
  EXPECT_TRUE(solveWithinCapacity(p, 13, ExactParams{}).proven_infeasible);
}

TEST(ExactSearch, ReservedPrefixAndAlignment) {
  PoolProblem p;
  p.reserved = 5;
  for (int i = 0; i < 2; ++i) {
    Buffer b;
    b.id = i;
    b.start = 0;
    b.end = 2;
    b.size = b.nbytes = 8;
    b.alignment = 8;
    p.buffers.push_back(b);
  }
  const ExactResult r = solveWithinCapacity(p, 24, ExactParams{});
  ASSERT_TRUE(r.found);
  std::vector<Offset> sorted = r.offsets;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<Offset>{8, 16}));
  EXPECT_FALSE(solveWithinCapacity(p, 23, ExactParams{}).found);
}

TEST(ExactSearch, Deterministic) {
  SplitMix64 rng(99);
  PoolProblem p = randomProblem(rng, 8, false);
  for (int i = 0; i < 30; ++i) {  // a bigger pool from the same generator
    PoolProblem q = randomProblem(rng, 1, false);
    q.buffers[0].id = static_cast<BufferId>(p.buffers.size());
    p.buffers.push_back(q.buffers[0]);
  }
  const Bytes lb = sweepBound(p);
  const ExactResult a = solveWithinCapacity(p, lb + 2, ExactParams{});
  const ExactResult b = solveWithinCapacity(p, lb + 2, ExactParams{});
  EXPECT_EQ(a.found, b.found);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.nodes, b.nodes);
}

TEST(ExactAlgorithm, RegisteredSolverReachesBoundOnChallengingC) {
  const auto path = test::dataDir() / "minimalloc-challenging/C.1048576.csv";
  const BufferList list = readMiniMallocCsv(test::readText(path), path.string());
  const auto algo = makeExactAlgorithm();
  const PoolSolution s = algo->solve(list.problem, AlgorithmParams{});
  EXPECT_EQ(s.size, 1039360u);  // the lower bound
  EXPECT_TRUE(s.proven_optimal);
  EXPECT_EQ(invalid(list.problem, s.offsets, s.size), "");
}

TEST(ExactAlgorithm, SmallExampleAtItsBound) {
  const auto path = test::dataDir() / "minimalloc-challenging/example.12.csv";
  const BufferList list = readMiniMallocCsv(test::readText(path), path.string());
  const PoolSolution s = makeExactAlgorithm()->solve(list.problem, AlgorithmParams{});
  EXPECT_EQ(s.size, 12u);
  EXPECT_TRUE(s.proven_optimal);
  EXPECT_EQ(invalid(list.problem, s.offsets, 12), "");
}

}  // namespace
}  // namespace memplan::exact

// What every offset-based algorithm (today best_fit, first_fit, local_search,
// exact, auto) must honour beyond sizes and lifetimes: lifetime gaps (with
// and without windows), in-place groups with holes (XLA's colocated heap
// simulator cases), preferred offsets (hints), alignments that are not
// powers of two, and pinned offsets, feasible or not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/exact_search.h"
#include "algorithms/pool_util.h"
#include "algorithms/random.h"
#include "memplan/algorithm.h"
#include "support/placement_check.h"

namespace memplan {
namespace {

// Every registered algorithm that declares it honours gaps and hints.
const std::vector<std::string> kOffsetAlgorithms = [] {
  std::vector<std::string> out;
  for (const std::string& name : algorithmNames()) {
    const AlgorithmInfo* info = findAlgorithmInfo(name);
    if (info->honours_gaps && info->honours_hints) out.push_back(name);
  }
  return out;
}();

Buffer buffer(TimeValue start, TimeValue end, Bytes size, Bytes alignment = 1) {
  Buffer b;
  b.start = start;
  b.end = end;
  b.size = b.nbytes = size;
  b.alignment = alignment;
  return b;
}

PoolProblem pool(std::vector<Buffer> buffers, Bytes reserved = 0) {
  PoolProblem p;
  p.reserved = reserved;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    buffers[i].id = static_cast<BufferId>(i);
    buffers[i].name = "b" + std::to_string(i);
  }
  p.buffers = std::move(buffers);
  return p;
}

// Every offset-based algorithm plans `p` validly at exactly `expected`
// bytes, proven optimal. Validity is judged by the tests' own checker
// (support/placement_check.h), not pool::checkPlacement, which auto itself
// uses to accept candidates.
void expectAll(const PoolProblem& p, Bytes expected, const std::string& what) {
  for (const std::string& name : kOffsetAlgorithms) {
    SCOPED_TRACE(what + ": " + name);
    const auto algo = makeAlgorithm(name);
    ASSERT_TRUE(algo->info().honours_gaps);
    ASSERT_TRUE(algo->info().honours_hints);
    const PoolSolution s = algo->solve(p, {});
    EXPECT_EQ(test::checkPoolPlacement(p, s.offsets), "");
    EXPECT_EQ(s.size, expected);
    EXPECT_TRUE(s.proven_optimal);
    EXPECT_EQ(s.lower_bound, expected);
  }
}

// XLA's GlobalDecreasingSizeBestFitHeap colocation cases: a (alloc, free)
// then b, then c sharing a's storage; one step per event, lifetimes
// [alloc, free + 1). XLA's expected heap sizes.
TEST(Colocated, XlaHeapSimulatorCases) {
  struct Case {
    const char* name;
    Bytes a, b, c;
    TimeValue b_end;  // b freed before c starts (hole) or after
    Bytes expected;
  };
  const Case cases[] = {
      {"Colocated", 40, 20, 40, 4, 40},         // b lives in the group's hole
      {"ColocatedII", 40, 20, 40, 6, 60},       // b beside c
      {"ColocatedIII", 10, 30, 10, 6, 40},
      {"ColocatedDifferentSize1", 40, 20, 30, 6, 50},
      {"ColocatedDifferentSize2", 40, 20, 50, 6, 70},
  };
  for (const Case& c : cases) {
    // a: steps 0-1; b: from step 2; c: steps 3-4 (4-5 when b is freed
    // first), in-place with a.
    const TimeValue c_start = c.b_end == 4 ? 4 : 3;
    PoolProblem p = pool({buffer(0, 2, c.a), buffer(2, c.b_end, c.b), buffer(c_start, c_start + 2, c.c)});
    p.buffers[2].inplace_base = 0;
    EXPECT_EQ(lowerBound(p), c.expected) << c.name;
    expectAll(p, c.expected, c.name);
  }
}

TEST(Gaps, BytesOfAGapWithoutWindowAreFree) {
  // a holds 100 bytes over [0, 10) except [3, 6); b (100) lives in [3, 6).
  PoolProblem p = pool({buffer(0, 10, 100), buffer(3, 6, 100), buffer(0, 10, 8)});
  p.buffers[0].gaps = {Gap{3, 6, std::nullopt}};
  EXPECT_EQ(lowerBound(p), 108u);
  expectAll(p, 108, "no window");
}

TEST(Gaps, AWindowHoldsOnlyItsBytes) {
  // Inside [3, 6) a holds only its first 40 bytes: b (60) fits above them.
  PoolProblem p = pool({buffer(0, 10, 100), buffer(3, 6, 60)});
  p.buffers[0].gaps = {Gap{3, 6, std::pair<Bytes, Bytes>{0, 40}}};
  EXPECT_EQ(lowerBound(p), 100u);
  expectAll(p, 100, "window");
  // And the placement check sees the window: b overlapping a's 40 bytes
  // inside the gap is a collision, above them it is not.
  EXPECT_EQ(pool::checkPlacement(p, {0, 40}), "");
  EXPECT_NE(pool::checkPlacement(p, {0, 39}), "");
  // The tests' own checker (which judges the algorithms' plans here) too.
  EXPECT_EQ(test::checkPoolPlacement(p, {0, 40}), "");
  EXPECT_EQ(test::checkPoolPlacement(p, {0, 39}), "'b0' and 'b1' share bytes [39, 40) at step 3");
}

// The tests' own placement checker holds every rule it judges by.
TEST(PlacementCheck, EveryRuleIsChecked) {
  // In-place group: b1 reuses b0's storage; b2 lands in b1's extra
  // lifetime (ExecuTorch's defect 3 shape) at one offset, then above it.
  PoolProblem p = pool({buffer(0, 2, 64), buffer(1, 5, 64), buffer(3, 5, 64)});
  p.buffers[1].inplace_base = 0;
  EXPECT_EQ(test::checkPoolPlacement(p, {0, 0, 64}), "");
  EXPECT_EQ(test::checkPoolPlacement(p, {0, 0, 0}), "'b1' and 'b2' share bytes [0, 64) at step 3");
  EXPECT_EQ(test::checkPoolPlacement(p, {0, 64, 128}), "'b1' at 64 but its in-place base 'b0' at 0");
  // A member that outlives a larger base holds only its own bytes after.
  PoolProblem q = pool({buffer(0, 3, 64), buffer(2, 5, 16), buffer(3, 5, 48)});
  q.buffers[1].inplace_base = 0;
  EXPECT_EQ(test::checkPoolPlacement(q, {0, 0, 16}), "");
  EXPECT_EQ(test::checkPoolPlacement(q, {0, 0, 8}), "'b1' and 'b2' share bytes [8, 16) at step 3");
  // Alignment, reserved prefix, pins, the offset count.
  PoolProblem r = pool({buffer(0, 2, 8, 8), buffer(0, 2, 8)}, 16);
  r.buffers[1].fixed_offset = 32;
  EXPECT_EQ(test::checkPoolPlacement(r, {16, 32}), "");
  EXPECT_EQ(test::checkPoolPlacement(r, {20, 32}), "'b0' at 20 is not aligned to 8");
  EXPECT_EQ(test::checkPoolPlacement(r, {8, 32}), "'b0' at 8 lies in the reserved prefix of 16 bytes");
  EXPECT_EQ(test::checkPoolPlacement(r, {16, 40}), "'b1' at 40 is pinned at 32");
  EXPECT_EQ(test::checkPoolPlacement(r, {16}), "1 offsets for 2 buffers");
  // Half-open lifetimes: one ending where the other starts shares nothing.
  EXPECT_EQ(test::checkPoolPlacement(pool({buffer(0, 2, 8), buffer(2, 4, 8)}), {0, 0}), "");
  EXPECT_EQ(test::placementBytes(r, {16, 32}), 40u);
}

TEST(Gaps, MalformedGapsAreInputErrors) {
  PoolProblem p = pool({buffer(0, 10, 100)});
  p.buffers[0].gaps = {Gap{5, 7, std::nullopt}, Gap{6, 8, std::nullopt}};  // overlap
  for (const std::string& name : kOffsetAlgorithms)
    EXPECT_THROW(makeAlgorithm(name)->solve(p, {}), InputError) << name;
  p.buffers[0].gaps = {Gap{5, 7, std::pair<Bytes, Bytes>{0, 200}}};  // window too large
  EXPECT_THROW(makeAlgorithm("auto")->solve(p, {}), InputError);
}

TEST(Gaps, ExactSearchUsesTheHoles) {
  // a and b (64 each) live over [0, 9), a absent in [3, 6); c (64) lives
  // in [3, 6): only in a's hole do 128 bytes suffice.
  PoolProblem p = pool({buffer(0, 9, 64), buffer(0, 9, 64), buffer(3, 6, 64)});
  p.buffers[0].gaps = {Gap{3, 6, std::nullopt}};
  EXPECT_EQ(lowerBound(p), 128u);
  const exact::ExactResult r = exact::solveWithinCapacity(p, 128, {});
  ASSERT_TRUE(r.found);
  EXPECT_EQ(test::checkPoolPlacement(p, r.offsets), "");
  EXPECT_EQ(r.offsets[2], r.offsets[0]);
  EXPECT_TRUE(exact::solveWithinCapacity(p, 127, {}).proven_infeasible);
  // Three such buffers absent a third of the time each, in turn, still
  // share bytes pairwise at some step: three slots, not two.
  PoolProblem q = pool({buffer(0, 9, 64), buffer(0, 9, 64), buffer(0, 9, 64)});
  for (int i = 0; i < 3; ++i) q.buffers[i].gaps = {Gap{3 * i, 3 * i + 3, std::nullopt}};
  EXPECT_EQ(lowerBound(q), 128u);
  EXPECT_TRUE(exact::solveWithinCapacity(q, 191, {}).proven_infeasible);
  EXPECT_TRUE(exact::solveWithinCapacity(q, 192, {}).found);
}

TEST(Hints, AFreeHintIsTakenAnOccupiedOneIsNot) {
  // a and b fill [0, 64) at steps 0-1; c (steps 2-3) would go to 0 and
  // asks for 32, free then and within the height.
  PoolProblem p = pool({buffer(0, 2, 32), buffer(0, 2, 32), buffer(2, 4, 16)});
  for (const std::string& name : kOffsetAlgorithms)
    EXPECT_EQ(makeAlgorithm(name)->solve(p, {}).offsets[2], 0u) << name;
  p.buffers[2].hint = 32;
  for (const std::string& name : kOffsetAlgorithms) {
    const PoolSolution s = makeAlgorithm(name)->solve(p, {});
    EXPECT_EQ(s.offsets[2], 32u) << name;
    EXPECT_EQ(s.size, 64u) << name;
  }
  // A hint that would raise the pool, or collide, is not taken.
  p.buffers[2].hint = 64;
  for (const std::string& name : kOffsetAlgorithms)
    EXPECT_EQ(makeAlgorithm(name)->solve(p, {}).size, 64u) << name;
  p.buffers[2] = buffer(1, 4, 16);
  p.buffers[2].id = 2;
  p.buffers[2].hint = 16;  // inside a while a lives
  for (const std::string& name : kOffsetAlgorithms) {
    const PoolSolution s = makeAlgorithm(name)->solve(p, {});
    EXPECT_EQ(test::checkPoolPlacement(p, s.offsets), "") << name;
    EXPECT_NE(s.offsets[2], 16u) << name;
  }
}

TEST(Alignment, AnyPositiveAlignmentWorks) {
  // XLA's heap simulator tests align to 20. Offsets are multiples of each
  // buffer's alignment, after a 7-byte prefix.
  SplitMix64 rng(20);
  for (int round = 0; round < 60; ++round) {
    std::vector<Buffer> bufs;
    const std::size_t n = 2 + rng.below(12);
    const Bytes aligns[] = {1, 3, 6, 20, 24, 100};
    for (std::size_t i = 0; i < n; ++i) {
      const auto s = static_cast<TimeValue>(rng.below(8));
      bufs.push_back(buffer(s, s + 1 + static_cast<TimeValue>(rng.below(5)), 1 + rng.below(90),
                            aligns[rng.below(6)]));
    }
    const PoolProblem p = pool(std::move(bufs), 7);
    const Bytes lb = lowerBound(p);
    AlgorithmParams quick;
    quick.effort = 0.05;
    for (const std::string& name : kOffsetAlgorithms) {
      const PoolSolution s = makeAlgorithm(name)->solve(p, quick);
      ASSERT_EQ(test::checkPoolPlacement(p, s.offsets), "") << name << " round " << round;
      for (std::size_t i = 0; i < p.buffers.size(); ++i)
        ASSERT_EQ(s.offsets[i] % p.buffers[i].alignment, 0u) << name;
      EXPECT_GE(s.size, lb);
    }
  }
  // Two 20-aligned buffers of 20 bytes after a 7-byte prefix: at 20 and 40.
  const PoolProblem p = pool({buffer(0, 2, 20, 20), buffer(0, 2, 20, 20)}, 7);
  EXPECT_EQ(lowerBound(p), 60u);
  expectAll(p, 60, "alignment 20");
}

TEST(Pins, FeasiblePinsAreKeptExactly) {
  // MiniMalloc's FixedBufferFeasible: a pinned buffer stays where it is;
  // the others go around it.
  PoolProblem p = pool({buffer(0, 4, 4), buffer(0, 4, 4), buffer(0, 4, 4)});
  p.buffers[0].fixed_offset = 4;
  for (const std::string& name : kOffsetAlgorithms) {
    const PoolSolution s = makeAlgorithm(name)->solve(p, {});
    EXPECT_EQ(s.offsets[0], 4u) << name;
    EXPECT_EQ(test::checkPoolPlacement(p, s.offsets), "") << name;
    EXPECT_EQ(s.size, 12u) << name;
  }
}

TEST(Pins, InfeasiblePinsAreAPlanError) {
  // MiniMalloc's FixedBufferInfeasible: two pins sharing bytes while alive
  // together; a pin off its alignment; a pin inside the reserved prefix;
  // an in-place group pinned twice. Never reported as fitting.
  std::vector<PoolProblem> bad;
  {
    PoolProblem p = pool({buffer(0, 4, 8), buffer(2, 6, 8)});
    p.buffers[0].fixed_offset = 0;
    p.buffers[1].fixed_offset = 4;
    bad.push_back(p);
  }
  {
    PoolProblem p = pool({buffer(0, 4, 20, 20)});
    p.buffers[0].fixed_offset = 30;
    bad.push_back(p);
  }
  {
    PoolProblem p = pool({buffer(0, 4, 8)}, 16);
    p.buffers[0].fixed_offset = 8;
    bad.push_back(p);
  }
  {
    PoolProblem p = pool({buffer(0, 4, 8), buffer(2, 6, 8)});
    p.buffers[1].inplace_base = 0;
    p.buffers[0].fixed_offset = 0;
    p.buffers[1].fixed_offset = 8;
    bad.push_back(p);
  }
  for (std::size_t k = 0; k < bad.size(); ++k)
    for (const std::string& name : kOffsetAlgorithms)
      EXPECT_THROW(makeAlgorithm(name)->solve(bad[k], {}), PlanError) << name << " case " << k;
  // The exact search proves it too.
  EXPECT_TRUE(exact::solveWithinCapacity(bad[0], 1000, {}).proven_infeasible);
}

}  // namespace
}  // namespace memplan

// tflm_greedy: TensorFlow Lite Micro's GreedyMemoryPlanner, exact. The
// expected numbers are those of TFLM's own planner tests
// (greedy_memory_planner_test.cc, micro_allocator_test.cc); random problems
// are checked against a literal O(n^2) transcription of TFLM's list walk
// written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "memplan/algorithm.h"
#include "memplan/plan.h"
#include "memplan/verify.h"

namespace memplan {
namespace {

// TFLM's AddBuffer(size, first_time_used, last_time_used[, offline_offset]):
// inclusive lifetimes.
struct TflmBuffer {
  Bytes size;
  TimeValue first, last;
  std::optional<Offset> offline = std::nullopt;
};

PoolProblem problemOf(const std::vector<TflmBuffer>& buffers) {
  PoolProblem p;
  for (const TflmBuffer& t : buffers) {
    Buffer b;
    b.id = static_cast<BufferId>(p.buffers.size());
    b.name = "t" + std::to_string(b.id);
    b.start = t.first;
    b.end = t.last + 1;
    b.size = t.size;
    b.nbytes = t.size;
    b.fixed_offset = t.offline;
    p.buffers.push_back(b);
  }
  return p;
}

PoolSolution solve(const PoolProblem& p) {
  return makeAlgorithm("tflm_greedy")->solve(p, AlgorithmParams{});
}

// TFLM's planner, transcribed literally: a sort array filled with offline
// buffers from the head and online ones from the tail, a stable descending
// sort of the online part, and an offset-ordered list walked from the start
// for every buffer.
std::vector<Offset> reference(const PoolProblem& p, Bytes* high_water) {
  const std::size_t n = p.buffers.size();
  std::vector<std::size_t> sorted(n);
  std::size_t head = 0, tail = n;
  for (std::size_t i = 0; i < n; ++i)
    (p.buffers[i].fixed_offset ? sorted[head++] : sorted[--tail]) = i;
  // Bubble sort as TFLM writes it: swap while the left one is smaller.
  for (bool swapped = true; swapped;) {
    swapped = false;
    for (std::size_t i = head + 1; i < n; ++i)
      if (p.buffers[sorted[i - 1]].size < p.buffers[sorted[i]].size) {
        std::swap(sorted[i - 1], sorted[i]);
        swapped = true;
      }
  }
  std::vector<Offset> offset(n, 0);
  std::vector<std::size_t> list;  // placed buffers, by offset, ties by placement
  for (std::size_t k = 0; k < n; ++k) {
    const Buffer& b = p.buffers[sorted[k]];
    Offset candidate = 0;
    if (b.fixed_offset) {
      candidate = *b.fixed_offset;
    } else {
      for (std::size_t e : list) {
        const Buffer& o = p.buffers[e];
        if (!(o.start < b.end && b.start < o.end)) continue;
        if (offset[e] >= candidate && offset[e] - candidate >= b.size) break;
        candidate = std::max(candidate, offset[e] + o.size);
      }
    }
    offset[sorted[k]] = candidate;
    auto at = std::find_if(list.begin(), list.end(), [&](std::size_t e) { return offset[e] > candidate; });
    list.insert(at, sorted[k]);
  }
  *high_water = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (p.buffers[i].size > 0) *high_water = std::max(*high_water, offset[i] + p.buffers[i].size);
  return offset;
}

TEST(TflmGreedy, DeclaresItself) {
  const AlgorithmInfo* info = findAlgorithmInfo("tflm_greedy");
  ASSERT_NE(info, nullptr);
  EXPECT_TRUE(info->honours_pins);  // offline offsets
  EXPECT_FALSE(info->executorch_exact);
  EXPECT_FALSE(info->selects);
  const auto names = algorithmNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "tflm_greedy"), names.end());
}

// greedy_memory_planner_test.cc, TestGreedyBasics.
TEST(TflmGreedy, TfliteMicroBasics) {
  const PoolSolution s = solve(problemOf({{10, 0, 1}, {20, 2, 3}}));
  EXPECT_EQ(s.offsets, (std::vector<Offset>{0, 0}));
  EXPECT_EQ(s.size, 20u);
}

// TestGreedyMedium: offsets 50, 70, 40, 0, 0 and a high-water mark of 90.
TEST(TflmGreedy, TfliteMicroMedium) {
  const PoolSolution s =
      solve(problemOf({{10, 0, 1}, {20, 1, 2}, {30, 2, 3}, {40, 3, 4}, {50, 0, 1}}));
  EXPECT_EQ(s.offsets, (std::vector<Offset>{50, 70, 40, 0, 0}));
  EXPECT_EQ(s.size, 90u);
}

// TestOverlapCase: 120.
TEST(TflmGreedy, TfliteMicroOverlapCase) {
  const PoolSolution s = solve(problemOf({{100, 0, 1}, {50, 2, 3}, {20, 1, 2}}));
  EXPECT_EQ(s.size, 120u);
  EXPECT_EQ(s.offsets, (std::vector<Offset>{0, 0, 100}));
}

// TestPersonDetectionModel: the 250 KB MobileNet's buffers. TFLM only
// asserts that the plan is below the 241,027-byte sum and overlap-free; the
// exact mark is the reference transcription's: 64,512 bytes, the lower
// bound (the live bytes at step 2).
TEST(TflmGreedy, TfliteMicroPersonDetection) {
  const std::vector<TflmBuffer> buffers = {
      {9216, 0, 29},   {3, 28, 29},     {256, 27, 28},   {2304, 26, 27},  {2304, 25, 26},
      {2304, 24, 25},  {1152, 23, 24},  {4608, 22, 23},  {4608, 21, 22},  {4608, 20, 21},
      {4608, 19, 20},  {4608, 18, 19},  {4608, 17, 18},  {4608, 16, 17},  {4608, 15, 16},
      {4608, 14, 15},  {4608, 13, 14},  {4608, 12, 13},  {2304, 11, 12},  {9216, 10, 11},
      {9216, 9, 10},   {9216, 8, 9},    {4608, 7, 8},    {18432, 6, 7},   {18432, 5, 6},
      {18432, 4, 5},   {9216, 3, 4},    {36864, 2, 3},   {18432, 1, 2},   {18432, 0, 1}};
  const PoolProblem p = problemOf(buffers);
  const PoolSolution s = solve(p);
  Bytes mark = 0;
  EXPECT_EQ(s.offsets, reference(p, &mark));
  EXPECT_EQ(s.size, mark);
  EXPECT_LT(s.size, 241027u);
  EXPECT_EQ(s.size, 64512u);
  EXPECT_EQ(lowerBound(p), 64512u);  // step 2: 9216 + 18432 + 36864
}

// micro_allocator_test.cc, OfflinePlannerBranchesAllOnline (four 48-byte
// tensors, lifetimes as TFLM's allocation scopes mark them): equal sizes
// are placed in reverse arrival order, so t1 lands at 96 and t2 at 48.
TEST(TflmGreedy, TfliteMicroBranchesAllOnline) {
  const PoolSolution s = solve(problemOf({{48, 0, 2}, {48, 1, 3}, {48, 2, 3}, {48, 3, 3}}));
  EXPECT_EQ(s.offsets, (std::vector<Offset>{0, 96, 48, 0}));
  EXPECT_EQ(s.size, 144u);
}

// OfflinePlannerOverlappingAllocation: t0 and t1 are both offline at 0
// (deliberately, while both alive), t2 at 48, t3 online goes to 0.
TEST(TflmGreedy, TfliteMicroOverlappingOfflineAllocation) {
  const PoolSolution s = solve(problemOf({{48, 0, 1, 0}, {48, 0, 1, 0}, {48, 1, 2, 48}, {48, 2, 2}}));
  EXPECT_EQ(s.offsets, (std::vector<Offset>{0, 0, 48, 0}));
  EXPECT_EQ(s.size, 96u);
}

// OfflinePlannerOfflineOnline: t0=0, t1=48, t3=0 offline; t2 -> 96, t4 -> 48.
TEST(TflmGreedy, TfliteMicroOfflineOnline) {
  const PoolSolution s =
      solve(problemOf({{48, 0, 1, 0}, {48, 0, 1, 48}, {48, 1, 2}, {48, 2, 2, 0}, {48, 2, 2}}));
  EXPECT_EQ(s.offsets, (std::vector<Offset>{0, 48, 96, 0, 48}));
  EXPECT_EQ(s.size, 144u);
}

TEST(TflmGreedy, ReservedPrefixAlignmentPaddingAndInPlace) {
  PoolProblem p = problemOf({{32, 0, 1}, {16, 1, 2}, {16, 2, 3}});
  p.reserved = 8;
  p.extra_padding = 5;
  for (Buffer& b : p.buffers) b.alignment = 16;
  p.buffers[2].inplace_base = 1;  // one storage with buffer 1, lifetime [1, 3]
  const PoolSolution s = solve(p);
  EXPECT_EQ(s.offsets[0], 16u);   // the prefix rounded up to 16
  EXPECT_EQ(s.offsets[1], 48u);   // after buffer 0 (alive together at step 1)
  EXPECT_EQ(s.offsets[2], 48u);   // with its base
  EXPECT_EQ(s.size, 64u + 5u);
}

// The same offsets as the literal transcription on random problems: equal
// sizes, offline offsets (overlapping ones included), zero sizes.
TEST(TflmGreedy, MatchesLiteralTranscription) {
  std::mt19937_64 rng(20240611);
  for (int round = 0; round < 400; ++round) {
    const std::size_t n = 1 + rng() % 60;
    std::vector<TflmBuffer> buffers;
    for (std::size_t i = 0; i < n; ++i) {
      const TimeValue first = static_cast<TimeValue>(rng() % 30);
      const TimeValue last = first + static_cast<TimeValue>(rng() % 8);
      const Bytes size = 16 * (rng() % 6);  // many ties, some zero
      std::optional<Offset> offline;
      if (rng() % 5 == 0) offline = 16 * (rng() % 12);
      buffers.push_back({size, first, last, offline});
    }
    const PoolProblem p = problemOf(buffers);
    Bytes mark = 0;
    const std::vector<Offset> expected = reference(p, &mark);
    const PoolSolution s = solve(p);
    ASSERT_EQ(s.offsets, expected) << "round " << round;
    ASSERT_EQ(s.size, mark) << "round " << round;
  }
}

TEST(TflmGreedy, ScalesToManyBuffers) {
  // A long chain with a few long-lived tensors: near-linear work.
  PoolProblem p;
  const int n = 50000;
  for (int i = 0; i < n; ++i) {
    Buffer b;
    b.id = i;
    b.start = i;
    b.end = i % 1000 == 0 ? i + 5000 : i + 2;
    b.size = 16 * (1 + i % 7);
    b.nbytes = b.size;
    p.buffers.push_back(b);
  }
  const PoolSolution s = solve(p);
  EXPECT_LT(s.work, std::uint64_t{20} * n);
  EXPECT_GE(s.size, lowerBound(p));
}

TEST(TflmGreedy, PlansAreVerifiedThroughTheLibrary) {
  GraphSpecs specs;
  for (int i = 0; i < 6; ++i) {
    Spec s;
    s.id = i;
    s.name = "s" + std::to_string(i);
    s.nbytes = 100 + 10 * static_cast<Bytes>(i);
    s.first = i;
    s.last = i + 2;
    s.planned = true;
    specs.specs.push_back(s);
  }
  specs.steps = 9;
  PlanRequest request;
  request.algorithm = "tflm_greedy";
  const GraphPlan g = planSpecs(specs, request, {});
  EXPECT_TRUE(verifyGraphPlan(g, request.options).ok());
  EXPECT_EQ(g.pools.at(0).algorithm, "tflm_greedy");
}

}  // namespace
}  // namespace memplan

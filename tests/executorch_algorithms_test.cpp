// Hand-computed cases for the ExecuTorch algorithms (naive, greedy,
// greedy_no_overlap, suite), planSpecs' layouts, capacities and spill, and
// the spec-list reader's error messages.
#include <gtest/gtest.h>

#include "memplan/io.h"
#include "memplan/plan.h"

namespace memplan {
namespace {

Spec spec(std::string name, Bytes nbytes, TimeValue first, TimeValue last) {
  Spec s;
  s.name = std::move(name);
  s.nbytes = nbytes;
  s.first = first;
  s.last = last;
  s.planned = true;
  return s;
}

GraphSpecs graphOf(std::vector<Spec> specs, Bytes alignment = 16) {
  GraphSpecs g;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    specs[i].id = static_cast<SpecId>(i);
    specs[i].alignment = alignment;
    g.steps = std::max(g.steps, specs[i].last + 1);
  }
  g.specs = std::move(specs);
  return g;
}

GraphPlan plan(const GraphSpecs& g, const std::string& algorithm,
               const std::vector<Bytes>& reserved = {}, Bytes extra_padding = 0) {
  PlanRequest r;
  r.algorithm = algorithm;
  r.extra_padding = extra_padding;
  return planSpecs(g, r, reserved);
}

std::vector<Offset> offsets(const GraphPlan& p) {
  std::vector<Offset> out;
  for (const Allocation& a : p.allocations) out.push_back(a.offset);
  return out;
}
std::vector<std::int32_t> objects(const GraphPlan& p) {
  std::vector<std::int32_t> out;
  for (const Allocation& a : p.allocations) out.push_back(a.mem_obj_id);
  return out;
}

// The defect-1 example: A96[0,1] B32[2,3] C32[2,10] D32[5,10] E32[5,10].
GraphSpecs defectOne() {
  return graphOf({spec("A", 96, 0, 1), spec("B", 32, 2, 3), spec("C", 32, 2, 10),
                  spec("D", 32, 5, 10), spec("E", 32, 5, 10)});
}

TEST(ExecutorchGreedy, DefectOneNeeds128Bytes) {
  // Order: A, then the 32s in reverse insertion order E, D, C, B.
  // E and D and C stack in A's object (0, 32, 64); B overlaps C at the top
  // of that object and cannot go lower, so it gets a new object.
  const GraphPlan p = plan(defectOne(), "greedy");
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 128}));
  EXPECT_EQ(offsets(p), (std::vector<Offset>{0, 96, 64, 32, 0}));
  EXPECT_EQ(objects(p), (std::vector<std::int32_t>{0, 1, 0, 0, 0}));
  ASSERT_EQ(p.pools.size(), 1u);
  EXPECT_EQ(p.pools[0].lower_bound, 96u);
  EXPECT_EQ(p.pools[0].naive_size, 224u);
  EXPECT_EQ(p.pools[0].algorithm, "greedy");
  EXPECT_FALSE(p.pools[0].proven_optimal);
}

TEST(ExecutorchGreedy, NoOverlapNeverStacksInsideAnObject) {
  // E in A's object at 0; D and C overlap E, so new objects; B fits at 0 of
  // A's object (A and E are both disjoint from [2,3]).
  const GraphPlan p = plan(defectOne(), "greedy_no_overlap");
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 160}));
  EXPECT_EQ(offsets(p), (std::vector<Offset>{0, 0, 128, 96, 0}));
  EXPECT_EQ(objects(p), (std::vector<std::int32_t>{0, 0, 2, 1, 0}));
}

TEST(ExecutorchNaive, BackToBackInInsertionOrder) {
  const GraphPlan p = plan(defectOne(), "naive");
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 224}));
  EXPECT_EQ(offsets(p), (std::vector<Offset>{0, 96, 128, 160, 192}));
  EXPECT_EQ(objects(p), (std::vector<std::int32_t>{0, 0, 0, 0, 0}));
}

TEST(ExecutorchGreedy, SortKeyRoundsTo16AndTiesGoInReverseInsertionOrder) {
  // Alignment 1: sizes 30 and 20 both sort as 32, so the later one (20)
  // goes first; the 30 overlaps it and lands above it in a new object.
  const GraphSpecs g = graphOf({spec("big", 30, 0, 5), spec("small", 20, 0, 5)}, 1);
  const GraphPlan p = plan(g, "greedy");
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 50}));
  EXPECT_EQ(offsets(p), (std::vector<Offset>{20, 0}));
  EXPECT_EQ(objects(p), (std::vector<std::int32_t>{1, 0}));
}

TEST(ExecutorchGreedy, LargerBufferNeverEntersSmallerObject) {
  // ExecuTorch asserts "Allocation specs are not sorted" here (defect 2);
  // memplan gives the 30 bytes a new object instead of overflowing.
  const GraphSpecs g = graphOf({spec("big", 30, 4, 5), spec("small", 17, 0, 1)}, 1);
  const GraphPlan p = plan(g, "greedy");
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 47}));
  EXPECT_EQ(offsets(p), (std::vector<Offset>{17, 0}));
}

TEST(ExecutorchGreedy, InplaceSpecsTakeTheirRootsPlacement) {
  // b (inplace of a) and d (inplace of b) are placed last at a's offset,
  // regardless of their own lifetimes -- ExecuTorch's defect 3, kept
  // exactly: c shares b's bytes while both are alive.
  std::vector<Spec> s = {spec("a", 64, 0, 3), spec("b", 64, 4, 6), spec("c", 64, 4, 5),
                         spec("d", 64, 7, 8)};
  s[1].inplace_base = 0;
  s[3].inplace_base = 1;
  s[1].mem_id = 2;  // ignored: an in-place spec lives in its base's pool
  const GraphSpecs g = graphOf(s);
  const GraphPlan p = plan(g, "greedy");
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 64}));
  EXPECT_EQ(offsets(p), (std::vector<Offset>{0, 0, 0, 0}));
  for (const Allocation& a : p.allocations) EXPECT_EQ(a.mem_id, 1);

  const GraphPlan n = plan(g, "naive");
  EXPECT_EQ(n.bufsizes, (std::vector<Bytes>{0, 128}));
  EXPECT_EQ(offsets(n), (std::vector<Offset>{0, 0, 64, 0}));
}

TEST(ExecutorchGreedy, ExtraPaddingEndsEveryUsedPool) {
  std::vector<Spec> s = {spec("a", 40, 0, 1), spec("b", 16, 0, 1)};
  s[1].mem_id = 3;
  const GraphSpecs g = graphOf(s);
  EXPECT_EQ(plan(g, "greedy", {}, 64).bufsizes, (std::vector<Bytes>{0, 48 + 64, 0, 16 + 64}));
  EXPECT_EQ(plan(g, "greedy_no_overlap", {}, 64).bufsizes,
            (std::vector<Bytes>{0, 48 + 64, 0, 16 + 64}));
  // naive ignores padding.
  EXPECT_EQ(plan(g, "naive", {}, 64).bufsizes, (std::vector<Bytes>{0, 48, 0, 16}));
  // The no-reuse baseline carries the same padding as the plan.
  EXPECT_EQ(plan(g, "greedy", {}, 64).pools.at(0).naive_size, 48u + 64u);
}

TEST(ExecutorchGreedy, ReservedPrefixComesFirst) {
  const GraphSpecs g = graphOf({spec("a", 32, 0, 1), spec("b", 32, 1, 2)});
  // greedy: objects start after the prefix; pools without specs are 0
  // (ExecuTorch sizes the list by the largest used mem_id).
  const GraphPlan gp = plan(g, "greedy", {0, 48, 100});
  EXPECT_EQ(gp.bufsizes, (std::vector<Bytes>{0, 48 + 64}));
  EXPECT_EQ(offsets(gp), (std::vector<Offset>{80, 48}));
  EXPECT_EQ(gp.pools.at(0).reserved, 48u);
  // naive: extends a copy of the reserved list.
  const GraphPlan np = plan(g, "naive", {0, 48, 100});
  EXPECT_EQ(np.bufsizes, (std::vector<Bytes>{0, 48 + 64, 100}));
  EXPECT_EQ(offsets(np), (std::vector<Offset>{48, 80}));
}

TEST(ExecutorchGreedy, OffsetAlgorithmsKeepEveryReservedPool) {
  ASSERT_TRUE(makeAlgorithm("best_fit"));
  const GraphSpecs g = graphOf({spec("a", 32, 0, 1)});
  const GraphPlan p = plan(g, "best_fit", {0, 48, 100});
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 80, 100}));
  EXPECT_EQ(offsets(p), (std::vector<Offset>{48}));
}

TEST(ExecutorchGreedy, NothingToPlan) {
  GraphSpecs g = graphOf({spec("a", 32, 0, 1)});
  g.specs[0].planned = false;
  EXPECT_EQ(plan(g, "greedy").bufsizes, (std::vector<Bytes>{0, 0}));
  EXPECT_EQ(plan(g, "greedy", {0, 32, 16}).bufsizes, (std::vector<Bytes>{0, 0}));
  EXPECT_EQ(plan(g, "naive", {0, 32, 16}).bufsizes, (std::vector<Bytes>{0, 32, 16}));
  EXPECT_TRUE(plan(g, "greedy").allocations.empty());
  EXPECT_TRUE(g.planned().empty());
}

TEST(ExecutorchGreedy, ZeroSizeSpecs) {
  // A 0-byte spec sorts last; overlapping a, it goes on top of a inside
  // a's object (top + 0 <= object size), at the object's very end.
  const GraphSpecs g = graphOf({spec("z", 0, 0, 5), spec("a", 32, 0, 5)});
  const GraphPlan p = plan(g, "greedy");
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 32}));
  EXPECT_EQ(offsets(p), (std::vector<Offset>{32, 0}));
  EXPECT_EQ(objects(p), (std::vector<std::int32_t>{0, 0}));
  // Without overlapping allocations it needs an empty object of its own.
  const GraphPlan q = plan(g, "greedy_no_overlap");
  EXPECT_EQ(q.bufsizes, (std::vector<Bytes>{0, 32}));
  EXPECT_EQ(objects(q), (std::vector<std::int32_t>{1, 0}));
}

// Straight transcription of ExecuTorch's greedy (every allocation of
// every object scanned), to check the windowed implementation against.
PoolSolution referenceGreedy(const PoolProblem& p, bool overlapping) {
  const auto n = static_cast<BufferId>(p.buffers.size());
  std::vector<BufferId> root(n);
  for (BufferId i = 0; i < n; ++i) {
    BufferId r = i;
    while (p.buffers[r].inplace_base != kNone) r = p.buffers[r].inplace_base;
    root[i] = r;
  }
  std::vector<BufferId> order;
  for (BufferId i = 0; i < n; ++i)
    if (root[i] == i) order.push_back(i);
  auto key = [&](BufferId i) { return (p.buffers[i].nbytes + 15) / 16 * 16; };
  std::stable_sort(order.begin(), order.end(), [&](BufferId a, BufferId b) { return key(a) < key(b); });
  std::reverse(order.begin(), order.end());
  struct Obj { Bytes size; std::vector<std::pair<BufferId, Offset>> allocs; };
  std::vector<Obj> objs;
  std::vector<std::pair<int, Offset>> where(n);
  for (BufferId b : order) {
    const Buffer& B = p.buffers[b];
    int picked = -1;
    Offset at = 0;
    for (int o = 0; o < static_cast<int>(objs.size()) && picked < 0; ++o) {
      bool free = B.size <= objs[o].size;
      for (const auto& [a, off] : objs[o].allocs) free = free && !p.buffers[a].overlaps(B);
      if (free) picked = o;
    }
    for (int o = 0; overlapping && o < static_cast<int>(objs.size()) && picked < 0; ++o) {
      Offset top = 0;
      for (const auto& [a, off] : objs[o].allocs)
        if (p.buffers[a].overlaps(B)) top = std::max(top, off + p.buffers[a].size);
      if (top > 0 && top + B.size <= objs[o].size) {
        picked = o;
        at = top;
      }
    }
    if (picked < 0) {
      objs.push_back(Obj{B.size, {}});
      picked = static_cast<int>(objs.size()) - 1;
    }
    objs[picked].allocs.emplace_back(b, at);
    where[b] = {picked, at};
  }
  std::vector<Offset> base;
  Bytes end = p.reserved;
  for (const Obj& o : objs) {
    base.push_back(end);
    end += o.size;
  }
  PoolSolution sol;
  sol.size = end + (order.empty() ? 0 : p.extra_padding);
  for (BufferId i = 0; i < n; ++i) {
    sol.offsets.push_back(base[where[root[i]].first] + where[root[i]].second);
    sol.mem_obj_ids.push_back(where[root[i]].first);
  }
  return sol;
}

// Both of ExecuTorch's greedy variants against referenceGreedy on `p`:
// the same size, offsets and shared objects. Returns the variants compared.
int expectGreedyMatchesReference(const PoolProblem& p, int round) {
  int compared = 0;
  for (bool overlapping : {true, false}) {
    const PoolSolution want = referenceGreedy(p, overlapping);
    const PoolSolution got =
        makeAlgorithm(overlapping ? "greedy" : "greedy_no_overlap")->solve(p, AlgorithmParams{});
    EXPECT_EQ(got.size, want.size) << "round " << round;
    EXPECT_EQ(got.offsets, want.offsets) << "round " << round;
    EXPECT_EQ(got.mem_obj_ids, want.mem_obj_ids) << "round " << round;
    ++compared;
  }
  return compared;
}

TEST(ExecutorchGreedy, MatchesAStraightTranscriptionOnRandomPools) {
  std::uint64_t state = 12345;
  auto next = [&](std::uint64_t bound) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % bound;
  };
  int compared = 0;
  for (int round = 0; round < 400; ++round) {
    PoolProblem p;
    p.reserved = next(3) * 16;
    p.extra_padding = next(2) * 64;
    const int n = 1 + static_cast<int>(next(60));
    const Bytes align = Bytes{1} << next(7);
    const TimeValue horizon = 1 + static_cast<TimeValue>(next(40));
    for (int i = 0; i < n; ++i) {
      Buffer b;
      b.id = i;
      b.start = static_cast<TimeValue>(next(horizon));
      b.end = b.start + 1 + static_cast<TimeValue>(next(round % 2 ? 4 : 30));
      b.nbytes = next(10) == 0 ? 0 : 1 + next(round % 3 ? 64 : 400);
      b.size = (b.nbytes + align - 1) / align * align;
      if (i > 0 && next(8) == 0) b.inplace_base = static_cast<BufferId>(next(i));
      p.buffers.push_back(b);
    }
    compared += expectGreedyMatchesReference(p, round);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_EQ(compared, 800);
}

// Longer lists, so the index of idle objects spans many leaves and levels:
// dense lifetimes of mixed lengths (short ones, long ones reaching over
// many leaves), sizes over three orders of magnitude with ties, zero-size
// buffers, alignments 1 to 64 (so an object may be smaller than a later
// buffer), and in-place chains.
TEST(ExecutorchGreedy, MatchesAStraightTranscriptionOnLongDenseLists) {
  std::uint64_t state = 777;
  auto next = [&](std::uint64_t bound) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % bound;
  };
  int compared = 0;
  for (int round = 0; round < 12; ++round) {
    PoolProblem p;
    const int n = 400 + static_cast<int>(next(1600));
    const auto per_step = static_cast<TimeValue>(1 + next(8));
    for (int i = 0; i < n; ++i) {
      Buffer b;
      b.id = i;
      b.start = static_cast<TimeValue>(i) / per_step + static_cast<TimeValue>(next(3));
      const TimeValue len = next(4) == 0 ? 1 + static_cast<TimeValue>(next(round % 3 ? 300 : 40))
                                         : 1 + static_cast<TimeValue>(next(6));
      b.end = b.start + len;
      const Bytes align = Bytes{1} << next(round % 2 ? 7 : 1);
      b.nbytes = next(40) == 0 ? 0 : (Bytes{1} << next(10)) + next(round % 4 ? 16 : 1000);
      b.size = (b.nbytes + align - 1) / align * align;
      b.alignment = align;
      if (i > 0 && next(30) == 0) b.inplace_base = static_cast<BufferId>(next(i));
      p.buffers.push_back(b);
    }
    compared += expectGreedyMatchesReference(p, round);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_EQ(compared, 24);
}

TEST(ExecutorchSuite, PicksTheSmallestAndNamesTheWinner) {
  const GraphPlan p = plan(defectOne(), "suite");
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 128}));
  ASSERT_EQ(p.pools.size(), 1u);
  EXPECT_EQ(p.pools[0].algorithm, "greedy");

  // With padding, naive (which ignores it) is smallest for a single spec.
  const GraphSpecs one = graphOf({spec("a", 32, 0, 1)});
  const GraphPlan padded = plan(one, "suite", {}, 64);
  EXPECT_EQ(padded.bufsizes, (std::vector<Bytes>{0, 32}));
  EXPECT_EQ(padded.pools.at(0).algorithm, "naive");

  // Ties: the first (greedy) wins.
  EXPECT_EQ(plan(one, "suite").pools.at(0).algorithm, "greedy");
}

TEST(ExecutorchSuite, PerPoolAlgorithmEntryPicksTheSmallest) {
  const auto suite = makeAlgorithm("suite");
  ASSERT_NE(suite, nullptr);
  PoolProblem prob;
  for (const Spec& s : defectOne().specs) {
    Buffer b;
    b.id = static_cast<BufferId>(prob.buffers.size());
    b.start = s.first;
    b.end = s.last + 1;
    b.size = b.nbytes = s.nbytes;
    prob.buffers.push_back(b);
  }
  const PoolSolution sol = suite->solve(prob, AlgorithmParams{});
  EXPECT_EQ(sol.size, 128u);
  EXPECT_EQ(sol.algorithm, "greedy");
  EXPECT_EQ(sol.offsets, (std::vector<Offset>{0, 96, 64, 32, 0}));
}

TEST(PlanSpecs, UnknownAlgorithmListsTheKnownOnes) {
  try {
    plan(defectOne(), "nope");
    FAIL() << "no exception";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown algorithm 'nope'"), std::string::npos) << what;
    EXPECT_NE(what.find("greedy_no_overlap"), std::string::npos) << what;
    EXPECT_NE(what.find("naive"), std::string::npos) << what;
  }
}

TEST(PlanSpecs, PinnedOffsetIsRejectedByExecutorchAlgorithms) {
  GraphSpecs g = defectOne();
  g.specs[2].offset = 0;
  EXPECT_THROW(plan(g, "greedy"), InputError);
}

TEST(PlanSpecs, InplaceCycleAndBadSpecsAreInputErrors) {
  std::vector<Spec> s = {spec("a", 16, 0, 1), spec("b", 16, 0, 1)};
  s[0].inplace_base = 1;
  s[1].inplace_base = 0;
  EXPECT_THROW(plan(graphOf(s), "greedy"), InputError);
  EXPECT_THROW(plan(graphOf({spec("a", 16, 3, 2)}), "greedy"), InputError);
  GraphSpecs g = graphOf({spec("a", 16, 0, 1)});
  g.specs[0].mem_id = 0;
  EXPECT_THROW(plan(g, "naive"), InputError);
  g.specs[0].mem_id = std::nullopt;
  g.specs[0].alignment = Bytes{1} << 31;  // any alignment up to 2^30 works (24 too)
  EXPECT_THROW(plan(g, "greedy"), InputError);
  g.specs[0].alignment = 24;
  EXPECT_EQ(plan(g, "greedy").bufsizes, (std::vector<Bytes>{0, 24}));
}

TEST(PlanSpecs, UnplannedBaseLeavesAnOrdinarySpec) {
  std::vector<Spec> s = {spec("a", 32, 0, 1), spec("b", 32, 0, 1)};
  s[0].planned = false;
  s[1].inplace_base = 0;
  const GraphPlan p = plan(graphOf(s), "greedy");
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 32}));
  ASSERT_NE(p.find(1), nullptr);
  EXPECT_EQ(p.find(1)->offset, 0u);
}

TEST(PlanSpecs, FindAndAllocationFields) {
  std::vector<Spec> s = {spec("a", 20, 0, 1), spec("b", 20, 0, 1), spec("c", 20, 0, 1)};
  s[1].planned = false;
  const GraphSpecs g = graphOf(s);
  EXPECT_EQ(g.planned(), (std::vector<SpecId>{0, 2}));
  const GraphPlan p = plan(g, "greedy");
  ASSERT_EQ(p.allocations.size(), 2u);
  EXPECT_EQ(p.find(1), nullptr);
  const Allocation* c = p.find(2);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->size, 32u);  // 20 rounded up to 16
  EXPECT_EQ(c->offset, 0u);  // c goes first (reverse insertion)
  EXPECT_EQ(p.find(0)->offset, 32u);
  EXPECT_EQ(p.pools.at(0).buffers, 2u);
}

// ---- capacities and spill ----

GraphPlan planCapped(const GraphSpecs& g, std::vector<std::optional<Bytes>> caps,
                     std::vector<MemId> order, const std::string& algorithm = "greedy") {
  PlanRequest r;
  r.algorithm = algorithm;
  r.options.capacities = std::move(caps);
  r.options.spill_order = std::move(order);
  return planSpecs(g, r, {});
}

GraphSpecs twoBig() {
  return graphOf({spec("a", 64, 0, 3), spec("b", 64, 0, 3), spec("c", 32, 4, 5)});
}

TEST(Capacity, OverflowSpillsTheLargestLiveTensorToTheNextPool) {
  // Unlimited, pool 1 needs 128 bytes; with 96 the peak (step 0, a + b)
  // sends a (largest, earliest) to pool 2.
  EXPECT_EQ(plan(twoBig(), "greedy").bufsizes, (std::vector<Bytes>{0, 128}));
  const GraphPlan p = planCapped(twoBig(), {std::nullopt, 96}, {1, 2});
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 64, 64}));
  EXPECT_EQ(p.find(0)->mem_id, 2);
  EXPECT_EQ(p.find(0)->offset, 0u);
  EXPECT_EQ(p.find(1)->mem_id, 1);
  EXPECT_EQ(p.find(2)->mem_id, 1);
  ASSERT_EQ(p.pools.size(), 2u);
  EXPECT_EQ(p.pools[1].mem_id, 2);
}

TEST(Capacity, FittingPoolIsLeftAlone) {
  const GraphPlan p = planCapped(twoBig(), {std::nullopt, 128}, {1, 2});
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 128}));
}

TEST(Capacity, SpillCascadesAlongTheOrder) {
  // Pools 1 and 2 each hold 64 bytes: a goes to 2, then pool 3 is not
  // needed; with pool 2 limited to 32, a moves on to 3.
  const GraphPlan p = planCapped(twoBig(), {std::nullopt, 64, 32, std::nullopt}, {1, 2, 3});
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 64, 0, 64}));
  EXPECT_EQ(p.find(0)->mem_id, 3);
}

TEST(Capacity, NoNextPoolIsAClearError) {
  try {
    planCapped(twoBig(), {std::nullopt, 96}, {});
    FAIL() << "no exception";
  } catch (const CapacityError& e) {
    EXPECT_STREQ(e.what(),
                 "pool 1 needs 128 B > capacity 96 B at step 0 (128 B live, no pool to spill "
                 "to): 2 live tensors: a (64 B), b (64 B)");
  }
}

TEST(Capacity, FragmentationAloneAlsoSpills) {
  // Defect 1: live bytes never exceed 96, but greedy needs 128. The
  // earliest busiest step (0: A alone) gives up A; the rest then fits.
  const GraphPlan p = planCapped(defectOne(), {std::nullopt, 96}, {1, 2});
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 96, 96}));
  EXPECT_EQ(p.find(0)->mem_id, 2);
  EXPECT_EQ(p.find(0)->offset, 0u);
  for (SpecId s = 1; s < 5; ++s) EXPECT_EQ(p.find(s)->mem_id, 1) << s;
  EXPECT_EQ(offsets(p), (std::vector<Offset>{0, 0, 64, 32, 0}));
}

TEST(Capacity, PresetPoolsDoNotSpill) {
  GraphSpecs g = twoBig();
  g.specs[0].mem_id = 1;
  g.specs[1].mem_id = 1;
  try {
    planCapped(g, {std::nullopt, 96}, {1, 2});
    FAIL() << "no exception";
  } catch (const PlanError& e) {
    EXPECT_STREQ(e.what(),
                 "pool 1 needs 128 B > capacity 96 B at step 0 (128 B live, no live tensor can "
                 "move (preset mem_id or pinned)): 2 live tensors: a (64 B), b (64 B)");
  }
}

TEST(Capacity, SuiteKeepsOnlyCandidatesThatFit) {
  // The last pool in the order cannot spill further: an impossible limit
  // fails for every candidate.
  EXPECT_THROW(planCapped(twoBig(), {std::nullopt, 100, 10}, {1, 2}, "suite"), CapacityError);
  const GraphPlan p = planCapped(twoBig(), {std::nullopt, 96}, {1, 2}, "suite");
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 64, 64}));
}

// ---- spec-list reader ----

std::string readError(const std::string& text) {
  try {
    readSpecListJson(text, "case.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string withSpecs(const std::string& specs, const std::string& extra = "") {
  return R"({"name": "t", "algorithm": "greedy", "alignment": 16, "extra_padding": 0,)" + extra +
         R"( "input_mem_buffer_sizes": null, "specs": [)" + specs + "]}";
}

TEST(SpecListReader, ReadsEveryField) {
  const SpecList c = readSpecListJson(
      R"({"name": "n1", "algorithm": "greedy_no_overlap", "alignment": 8, "extra_padding": 64,
          "input_mem_buffer_sizes": [0, 48],
          "specs": [{"id": 7, "nbytes": 100, "lifetime": [3, 9], "mem_id": 2, "inplace_base": null},
                    {"id": 3, "nbytes": 5, "lifetime": [9, 9], "mem_id": null, "inplace_base": 7}],
          "expected": {"bufsizes": [0, 0, 104],
                       "allocations": [{"id": 7, "mem_id": 2, "mem_obj_id": 0, "mem_offset": 0}]}})",
      "x.json");
  EXPECT_EQ(c.name, "n1");
  EXPECT_EQ(c.algorithm, "greedy_no_overlap");
  EXPECT_EQ(c.alignment, 8u);
  EXPECT_EQ(c.extra_padding, 64u);
  EXPECT_EQ(c.input_mem_buffer_sizes, (std::vector<Bytes>{0, 48}));
  ASSERT_EQ(c.specs.specs.size(), 2u);
  EXPECT_EQ(c.ids, (std::vector<std::int64_t>{7, 3}));
  const Spec& a = c.specs.specs[0];
  EXPECT_EQ(a.nbytes, 100u);
  EXPECT_EQ(a.first, 3);
  EXPECT_EQ(a.last, 9);
  EXPECT_EQ(a.mem_id, 2);
  EXPECT_EQ(a.alignment, 8u);
  EXPECT_TRUE(a.planned);
  EXPECT_EQ(c.specs.specs[1].inplace_base, 0);
  EXPECT_FALSE(c.specs.specs[1].mem_id.has_value());
  EXPECT_EQ(c.specs.steps, 10);
}

TEST(SpecListReader, RejectsMalformedInputWithThePlace) {
  const std::string ok = R"({"id": 0, "nbytes": 16, "lifetime": [0, 1], "mem_id": null, "inplace_base": null})";
  EXPECT_EQ(readError(withSpecs(ok + R"(, {"id": 1, "nbytes": 16, "lifetime": [5, 3]})")),
            "case.json: specs[1].lifetime: expected [first, last] with first <= last, got [5, 3]");
  EXPECT_EQ(readError(withSpecs(ok + R"(, {"id": 1, "nbytes": 16, "lifetime": [5]})")),
            "case.json: specs[1].lifetime: expected [first, last] with first <= last");
  EXPECT_EQ(readError(withSpecs(ok + ", " + ok)), "case.json: specs[1].id: duplicate id 0");
  EXPECT_EQ(readError(withSpecs(R"({"id": 0, "nbytes": -1, "lifetime": [0, 1]})")),
            "case.json: specs[0].nbytes: expected a non-negative integer, got an integer -1");
  EXPECT_EQ(readError(withSpecs(R"({"id": 0, "nbytes": 1.5, "lifetime": [0, 1]})")),
            "case.json: specs[0].nbytes: expected a non-negative integer, got a number 1.5");
  EXPECT_EQ(readError(withSpecs(R"({"id": 0, "nbytes": 4611686018427387904, "lifetime": [0, 1]})")),
            "case.json: specs[0].nbytes: 4611686018427387904 is above the limit of 4611686018427387903");
  EXPECT_EQ(readError(withSpecs(R"({"id": 0, "lifetime": [0, 1]})")),
            "case.json: specs[0].nbytes: missing");
  EXPECT_EQ(readError(withSpecs(R"({"id": 0, "nbytes": 1, "lifetime": [0, 1], "inplace_base": 9})")),
            "case.json: specs[0].inplace_base: no spec has id 9");
  EXPECT_EQ(readError(withSpecs(R"({"id": 0, "nbytes": 1, "lifetime": [0, 1], "inplace_base": 1},
                                   {"id": 1, "nbytes": 1, "lifetime": [0, 1], "inplace_base": 0})")),
            "case.json: specs[0].inplace_base: inplace_base chain forms a cycle");
  EXPECT_EQ(readError(withSpecs(R"({"id": 0, "nbytes": 1, "lifetime": [0, 1], "mem_id": 0})")),
            "case.json: specs[0].mem_id: 0 out of range [1, 4096] (0 holds constants)");
  EXPECT_EQ(readError(R"({"alignment": 0, "specs": []})"),
            "case.json: alignment: expected a positive integer, got 0");
  EXPECT_EQ(readError(R"({"algorithm": "best", "specs": []})"),
            "case.json: algorithm: unknown algorithm 'best' (expected one of ExecuTorch's: naive, "
            "greedy, greedy_no_overlap, suite)");
  EXPECT_EQ(readError(R"({"name": "x"})"), "case.json: specs: missing");
  EXPECT_EQ(readError(R"({"specs": {}})"), "case.json: specs: expected an array, got an object");
  EXPECT_EQ(readError("[1, 2]"), "case.json: top level: expected an object, got an array");
  EXPECT_EQ(readError(R"({"specs": [)"),
            "case.json:1:12: JSON syntax error: syntax error while parsing value - unexpected end "
            "of input; expected '[', '{', or a literal");
  EXPECT_EQ(readError(std::string(100, '[') + std::string(100, ']')),
            "case.json: byte 32: JSON nested deeper than 32 levels");
  // The expected block is the test harness's; unknown fields are refused.
  EXPECT_EQ(readError(withSpecs(ok, R"( "expected": {"bufsizes": [0], "allocations": [{"id": 4}]},)")),
            "no error");
  EXPECT_EQ(readError(withSpecs(ok, R"( "alignement": 16,)")),
            "case.json: top level: unknown field 'alignement'");
  EXPECT_EQ(readError(withSpecs(R"({"id": 0, "nbytes": 1, "lifetime": [0, 1], "size": 1})")),
            "case.json: specs[0]: unknown field 'size'");
}

TEST(SpecListReader, MangledFilesAreInputErrorsNeverCrashes) {
  const std::string good =
      R"({"name": "m", "algorithm": "greedy", "alignment": 8, "extra_padding": 64,
          "input_mem_buffer_sizes": [0, 32, 16],
          "specs": [{"id": 0, "nbytes": 100, "lifetime": [0, 4], "mem_id": null, "inplace_base": null},
                    {"id": 1, "nbytes": 7, "lifetime": [2, 9], "mem_id": 2, "inplace_base": null},
                    {"id": 2, "nbytes": 64, "lifetime": [5, 9], "mem_id": null, "inplace_base": 0},
                    {"id": 3, "nbytes": 33, "lifetime": [1, 3], "mem_id": 1, "inplace_base": null}]})";
  std::uint64_t state = 99;
  auto next = [&](std::uint64_t bound) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % bound;
  };
  static const char kBytes[] = "0123456789-[]{},:\"ex. ";
  std::size_t accepted = 0, rejected = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text = good;
    if (round < 300) {
      text.resize(next(text.size()));  // truncated
    } else {
      for (int k = 1 + static_cast<int>(next(3)); k > 0; --k)
        text[next(text.size())] = kBytes[next(sizeof(kBytes) - 1)];
    }
    try {
      const SpecList c = readSpecListJson(text, "m.json");
      PlanRequest r;
      r.algorithm = c.algorithm;
      r.extra_padding = c.extra_padding;
      planSpecs(c.specs, r, c.input_mem_buffer_sizes);
      ++accepted;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("m.json:", 0), 0u) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      ++rejected;
    } catch (const PlanError&) {
      ++rejected;  // e.g. sizes summing past the limit
    }
  }
  EXPECT_GT(accepted, 0u);
  EXPECT_GT(rejected, 0u);
}

TEST(SpecListReader, CaseRunsThroughPlanSpecs) {
  // Spec list -> planSpecs: the defect-1 example with alignment 32.
  const SpecList c = readSpecListJson(
      R"({"algorithm": "greedy", "alignment": 32, "specs": [
          {"id": 0, "nbytes": 96, "lifetime": [0, 1]}, {"id": 1, "nbytes": 20, "lifetime": [2, 3]},
          {"id": 2, "nbytes": 20, "lifetime": [2, 10]}, {"id": 3, "nbytes": 20, "lifetime": [5, 10]},
          {"id": 4, "nbytes": 20, "lifetime": [5, 10]}]})",
      "d1.json");
  PlanRequest r;
  r.algorithm = c.algorithm;
  const GraphPlan p = planSpecs(c.specs, r, c.input_mem_buffer_sizes);
  EXPECT_EQ(p.bufsizes, (std::vector<Bytes>{0, 128}));
  EXPECT_EQ(offsets(p), (std::vector<Offset>{0, 96, 64, 32, 0}));
}

}  // namespace
}  // namespace memplan

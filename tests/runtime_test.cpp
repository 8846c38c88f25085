// memplan::Arena (runtime.h): pools checked, pointers from the plan, and the
// checked mode -- the runtime counterpart of `memplan replay` -- agreeing
// with replay on random graphs and on deliberately broken plans.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "memplan/c_header.h"
#include "memplan/io.h"
#include "memplan/plan.h"
#include "verify/replay.h"
#include "memplan/runtime.h"
#include "support/random_graph.h"
#include "support/test_support.h"

namespace memplan {
namespace {

// Caller-owned pools, aligned as the plan asks.
struct Pools {
  std::vector<std::unique_ptr<unsigned char[]>> storage;
  std::vector<Pool> pools;
  explicit Pools(const PlanTable<std::uint64_t>& t, std::size_t slack = 0) {
    for (std::size_t p = 1; p <= t.num_pools; ++p) {
      const std::size_t size = static_cast<std::size_t>(t.pool_size[p]) + slack;
      storage.emplace_back(new unsigned char[size + t.alignment]);
      auto* base = storage.back().get();
      base += (t.alignment - reinterpret_cast<std::uintptr_t>(base) % t.alignment) % t.alignment;
      pools.push_back({base, size});
    }
  }
};

Model example() {
  return readGraphJson(test::readText(test::sourceDir() / "examples/runtime/tiny_cnn.json"),
                       "tiny_cnn.json");
}

TEST(Arena, MapsTensorsToTheirPlannedBytes) {
  const Model m = example();
  const Plan plan = planModel(m, PlanRequest{});
  const RuntimeTable table = runtimeTable(plan, &m);
  Pools pools(table.view());
  Arena arena(table.view(), pools.pools.data(), pools.pools.size());
  ASSERT_TRUE(arena.ok());
  EXPECT_FALSE(arena.checked());
  for (std::size_t t = 0; t < table.tensor_offset.size(); ++t) {
    EXPECT_EQ(arena.data(t), static_cast<unsigned char*>(pools.pools[0].data) + table.tensor_offset[t]);
    EXPECT_EQ(arena.size(t), table.tensor_size[t]);
  }
}

TEST(Arena, RefusesPoolsThatDoNotFit) {
  const Model m = example();
  const RuntimeTable table = runtimeTable(planModel(m, PlanRequest{}), &m);
  const auto view = table.view();
  Pools good(view);
  {
    Pool small = good.pools[0];
    small.size -= 1;
    Arena a(view, &small, 1);
    EXPECT_EQ(a.error().issue, ArenaIssue::PoolTooSmall);
    EXPECT_EQ(a.error().pool, 1u);
  }
  {
    Pool shifted{static_cast<unsigned char*>(good.pools[0].data) + 8, good.pools[0].size};
    Pools big(view, 64);
    shifted.data = static_cast<unsigned char*>(big.pools[0].data) + 8;
    Arena a(view, &shifted, 1);
    EXPECT_EQ(a.error().issue, ArenaIssue::PoolMisaligned);
  }
  {
    Arena a(view, nullptr, 0);
    EXPECT_EQ(a.error().issue, ArenaIssue::PoolMissing);
    Pool none{nullptr, 1 << 20};
    Arena b(view, &none, 1);
    EXPECT_EQ(b.error().issue, ArenaIssue::PoolMissing);
  }
  {
    RuntimeTable broken = table;
    broken.tensor_offset[3] = broken.pool_size[1];  // past the end
    Pools p(broken.view());
    Arena a(broken.view(), p.pools.data(), 1);
    EXPECT_EQ(a.error().issue, ArenaIssue::BadPlan);
    EXPECT_EQ(a.error().tensor, 3u);
  }
  {
    std::vector<std::uint32_t> shadow(Arena<std::uint64_t>::shadowWords(view) - 1);
    Arena a(view, good.pools.data(), 1, shadow.data(), shadow.size());
    EXPECT_EQ(a.error().issue, ArenaIssue::NoShadow);
  }
  Arena unchecked(view, good.pools.data(), 1);
  EXPECT_FALSE(unchecked.wrote(0));
  EXPECT_EQ(unchecked.error().issue, ArenaIssue::NoShadow);
}

// Runs a model's main graph on the arena as a runtime would: inputs written
// first, then each node reads its inputs and writes its outputs, then its
// step ends; outputs are read at the end. Returns arena.ok().
bool execute(const Model& m, const Plan& plan, const RuntimeTable& table,
             Arena<std::uint64_t>& arena) {
  const GraphSpecs& specs = plan.main().specs;
  std::vector<std::size_t> entry(specs.specs.size(), SIZE_MAX);
  for (std::size_t i = 0; i < table.specs.size(); ++i)
    if (table.tensor_graph[i] == 0) entry[static_cast<std::size_t>(table.specs[i])] = i;
  const auto id = [&](TensorId t) {
    const SpecId s = specs.tensor_spec[static_cast<std::size_t>(t)];
    return s == kNone ? SIZE_MAX : entry[static_cast<std::size_t>(s)];
  };
  const Graph& g = m.main();
  // What no node produces (trainable weights) is loaded at its first use,
  // as replay does.
  std::vector<bool> written(table.specs.size(), false);
  const auto write = [&](TensorId t) {
    if (id(t) == SIZE_MAX) return;
    arena.wrote(id(t));
    written[id(t)] = true;
  };
  const auto read = [&](TensorId t) {
    if (id(t) == SIZE_MAX) return;
    if (!written[id(t)]) return write(t);
    arena.read(id(t));
  };
  for (TensorId t : g.inputs) write(t);
  for (TimeValue s = 0; s < static_cast<TimeValue>(g.inputs.size()); ++s) arena.endStep(static_cast<std::int32_t>(s));
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes.size()); ++n) {
    for (TensorId t : g.nodes[n].inputs) read(t);
    for (TensorId t : g.nodes[n].outputs) write(t);
    // A kernel reads its inputs while it writes its outputs.
    for (TensorId t : g.nodes[n].inputs) read(t);
    arena.endStep(static_cast<std::int32_t>(nodeTime(g, n)));
  }
  for (TensorId t : g.outputs) read(t);
  return arena.ok();
}

TEST(Arena, CheckedModeRunsTheExampleClean) {
  const Model m = example();
  const Plan plan = planModel(m, PlanRequest{});
  const RuntimeTable table = runtimeTable(plan, &m);
  Pools pools(table.view());
  std::vector<std::uint32_t> shadow(Arena<std::uint64_t>::shadowWords(table.view()));
  Arena arena(table.view(), pools.pools.data(), 1, shadow.data(), shadow.size());
  ASSERT_TRUE(arena.checked());
  EXPECT_TRUE(execute(m, plan, table, arena));
}

TEST(Arena, ReadAfterTheLifetimeEndsIsPoisoned) {
  const Model m = example();
  const Plan plan = planModel(m, PlanRequest{});
  const RuntimeTable table = runtimeTable(plan, &m);
  Pools pools(table.view());
  std::vector<std::uint32_t> shadow(Arena<std::uint64_t>::shadowWords(table.view()));
  Arena arena(table.view(), pools.pools.data(), 1, shadow.data(), shadow.size());
  const std::size_t conv1 = 1;
  ASSERT_EQ(table.names[conv1], "conv1");
  EXPECT_FALSE(arena.read(conv1) || arena.ok());  // never written
  EXPECT_EQ(arena.error().issue, ArenaIssue::ReadUnwritten);

  Arena again(table.view(), pools.pools.data(), 1, shadow.data(), shadow.size());
  ASSERT_TRUE(again.wrote(conv1));
  ASSERT_TRUE(again.read(conv1));
  ASSERT_TRUE(again.endStep(table.last_step[conv1]));  // conv1 dies (relu1 read it last)
  const auto* bytes = again.as<unsigned char>(conv1);
  for (std::size_t i = 0; i < again.size(conv1); ++i)
    ASSERT_EQ(bytes[i], Arena<std::uint64_t>::kPoisonByte) << i;
  EXPECT_FALSE(again.read(conv1));
  EXPECT_EQ(again.error().issue, ArenaIssue::ReadPoisoned);
  EXPECT_EQ(again.error().other, conv1);
  EXPECT_EQ(again.error().step, table.last_step[conv1]);
  char line[200];
  again.describe(line, sizeof line);
  EXPECT_NE(std::string(line).find("read of poisoned bytes: tensor 1"), std::string::npos) << line;
  EXPECT_FALSE(again.wrote(0));  // the first problem stands
}

// A struct shaped like the generated header's plan (32-bit words).
struct CPlan {
  std::uint32_t num_pools, num_tensors, alignment, granule;
  const std::uint32_t *pool_size, *tensor_pool, *tensor_offset, *tensor_size;
  const std::int32_t *first_step, *last_step, *tensor_graph;
};

TEST(Arena, TakesTheGeneratedStructAndFindsAClobber) {
  // a [0,1] and b [1,2] share bytes 0..16 while both alive at step 1.
  static const std::uint32_t pool_size[] = {0, 32}, pool[] = {1, 1}, offset[] = {0, 0}, size[] = {16, 16};
  static const std::int32_t first[] = {0, 1}, last[] = {1, 2}, graph[] = {0, 0};
  const CPlan c{1, 2, 16, 16, pool_size, pool, offset, size, first, last, graph};
  alignas(16) static unsigned char memory[32];
  const Pool pools[] = {{memory, sizeof memory}};
  std::uint32_t shadow[4];  // 2 granules + 2 tensors
  EXPECT_EQ(Arena<std::uint32_t>::shadowWords(c), 4u);
  Arena arena(c, pools, 1, shadow, 4);  // Arena<std::uint32_t>, deduced
  static_assert(std::is_same_v<decltype(arena), Arena<std::uint32_t>>);
  ASSERT_TRUE(arena.ok());
  EXPECT_TRUE(arena.wrote(0));
  EXPECT_TRUE(arena.endStep(0));
  EXPECT_TRUE(arena.wrote(1));  // b written while a is alive
  EXPECT_FALSE(arena.read(0));
  EXPECT_EQ(arena.error().issue, ArenaIssue::ReadClobbered);
  EXPECT_EQ(arena.error().tensor, 0u);
  EXPECT_EQ(arena.error().other, 1u);
  EXPECT_EQ(arena.error().offset, 0u);
}

// The runtime counterpart of replay: on random graphs, memplan's plans run
// clean; with one tensor moved onto another live one, the checked run and
// `replay` both object.
TEST(Arena, AgreesWithReplayOnRandomGraphs) {
  test::RandomGraphParams params;
  params.views = params.in_place = params.share_with = params.control_flow = false;
  params.mutable_buffers = params.devices = params.preset_pools = false;
  params.vary_options = false;
  int broken = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    const test::RandomCase c = test::randomCase(seed, params);
    PlanRequest r;
    r.options = c.options;
    Plan plan = planModel(c.model, r);
    {
      const RuntimeTable table = runtimeTable(plan, &c.model);
      Pools pools(table.view());
      std::vector<std::uint32_t> shadow(Arena<std::uint64_t>::shadowWords(table.view()));
      Arena arena(table.view(), pools.pools.data(), pools.pools.size(), shadow.data(), shadow.size());
      char why[200];
      ASSERT_TRUE(execute(c.model, plan, table, arena)) << c.summary << ": " << (arena.describe(why, sizeof why), why);
    }
    // Move one allocation onto another whose lifetime overlaps it.
    GraphPlan& g = plan.graphs[0];
    bool moved = false;
    for (std::size_t i = 0; i < g.allocations.size() && !moved; ++i)
      for (std::size_t j = 0; j < g.allocations.size() && !moved; ++j) {
        Allocation& a = g.allocations[i];
        const Allocation& b = g.allocations[j];
        const Spec& sa = g.specs.specs[a.spec];
        const Spec& sb = g.specs.specs[b.spec];
        if (i == j || a.mem_id != b.mem_id || a.size == 0 || b.size == 0 || a.size > b.size) continue;
        if (sa.last < sb.first || sb.last < sa.first || sa.first == sb.first) continue;
        a.offset = b.offset;
        moved = true;
      }
    if (!moved) continue;
    ++broken;
    const RuntimeTable table = runtimeTable(plan, &c.model);
    Pools pools(table.view());
    std::vector<std::uint32_t> shadow(Arena<std::uint64_t>::shadowWords(table.view()));
    Arena arena(table.view(), pools.pools.data(), pools.pools.size(), shadow.data(), shadow.size());
    const bool clean = execute(c.model, plan, table, arena);
    const ReplayResult replay = replayPlan(c.model, plan);
    EXPECT_EQ(clean, replay.ok()) << c.summary << ": " << replay.message;
  }
  EXPECT_GT(broken, 50);
}

}  // namespace
}  // namespace memplan

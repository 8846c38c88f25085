// What the default algorithm reaches, pinned: the exact height "auto" gives
// at default effort on every list of tests/data/traces and
// tests/data/minimalloc-challenging, and the height its heuristics stage
// reached (a change in any stage of auto that costs bytes fails here), and the work it spends on a list that once took
// 44 s of CPU (issue 27: the exact search's nodes cost millions of steps
// each on long, densely overlapping lifetimes).
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "algorithms/auto.h"
#include "algorithms/exact_search.h"
#include "memplan/algorithm.h"
#include "memplan/io.h"
#include "support/placement_check.h"
#include "support/test_support.h"

namespace memplan {
namespace {

struct Pinned {
  const char* file;  // under tests/data
  Bytes height;      // auto at effort 1
  // What its first stage, the heuristics (built-in ones and portfolio),
  // reached: a regression there fails even where a later stage recovers.
  Bytes heuristics;
};

// Measured when the step limit came in (the same as before it: none got
// larger). The challenging lists other than D and J are at their lower
// bounds (D's and J's best known heights are lower than auto's:
// BestKnownSolution below); so are resnet50, G_1 and lstm_train.
const Pinned kPinned[] = {
    {"minimalloc-challenging/A.1048576.csv", 1'048'576, 1'352'704},
    {"minimalloc-challenging/B.1048576.csv", 1'048'576, 1'412'096},
    {"minimalloc-challenging/C.1048576.csv", 1'039'360, 1'417'216},
    {"minimalloc-challenging/D.1048576.csv", 1'031'168, 1'291'264},
    {"minimalloc-challenging/E.1048576.csv", 1'048'576, 1'435'648},
    {"minimalloc-challenging/F.1048576.csv", 1'048'576, 1'177'600},
    {"minimalloc-challenging/G.1048576.csv", 1'048'576, 1'226'752},
    {"minimalloc-challenging/H.1048576.csv", 1'048'576, 1'293'312},
    {"minimalloc-challenging/I.1048576.csv", 1'048'576, 1'455'104},
    {"minimalloc-challenging/J.1048576.csv", 1'035'264, 1'298'432},
    {"minimalloc-challenging/K.1048576.csv", 1'048'576, 1'339'392},
    {"minimalloc-challenging/example.12.csv", 12, 12},
    {"traces/G_1.csv", 3'030'937'746, 3'030'937'746},
    {"traces/S_1.csv", 1'500'463'788, 1'502'347'946},
    {"traces/lstm_train.csv", 33'251'108, 33'251'108},
    {"traces/mixer_train.csv", 193'578'200, 193'578'200},
    {"traces/resnet101ish_train.csv", 49'003'176, 49'067'680},
    {"traces/resnet50.csv", 1'515'472'556, 1'520'092'676},
    {"traces/transformer_train.csv", 331'378'380, 331'378'380},
    {"traces/unet_train.csv", 47'137'264, 47'155'760},
    // Recorded from the transformers library's architectures (issue 28);
    // all at their lower bounds but gpt2 (8 KiB above, from 1.0022x) and
    // vit_long (4 bytes above, from 1.0015x), both in the peak stack stage.
    {"traces/bert_train.csv", 199'368'688, 199'368'688},
    {"traces/convnext_train.csv", 96'628'100, 96'628'100},
    {"traces/gpt2_train.csv", 400'695'196, 401'579'896},
    {"traces/llama_train.csv", 331'495'124, 331'495'124},
    {"traces/mobilenetv2_train.csv", 38'988'280, 38'988'280},
    {"traces/resnet50_train.csv", 32'444'064, 32'444'064},
    {"traces/vit_train.csv", 144'805'476, 145'023'972},
    {"traces/vit_long_train.csv", 144'805'420, 145'023'976},
    // Recorded later from architectures auto was not tuned on: deit 4
    // bytes above its lower bound, gpt2_long 12 KiB above (from 1.0022x),
    // the others at their lower bounds. regnet reaches its bound in the
    // exact search's probe of the whole pool (from 1.0020x); deit,
    // gpt2_long, resnet101ish and unet reach their heights in the peak
    // stack stage.
    {"traces/deit_train.csv", 98'657'968, 98'932'972},
    {"traces/distilbert_train.csv", 152'078'188, 152'078'188},
    {"traces/gpt2_long_train.csv", 400'699'336, 401'579'896},
    {"traces/gptneox_train.csv", 168'774'072, 168'774'072},
    {"traces/mistral_train.csv", 173'602'228, 173'602'228},
    {"traces/regnet_train.csv", 20'502'528, 20'918'048},
};

class AutoHeights : public ::testing::TestWithParam<Pinned> {};

TEST_P(AutoHeights, DefaultEffortGivesThePinnedHeight) {
  const Pinned& pin = GetParam();
  const PoolProblem p =
      readMiniMallocCsv(test::readText(test::dataDir() / pin.file), pin.file).problem;
  const PoolSolution s = makeAlgorithm("auto")->solve(p, {});
  ASSERT_EQ(test::checkPoolPlacement(p, s.offsets), "");
  EXPECT_EQ(s.size, pin.height) << pin.file << ": lower is progress (pin it), higher a regression";
  ASSERT_FALSE(s.stages.empty());
  EXPECT_EQ(s.stages.front().stage, "heuristics");
  EXPECT_EQ(s.stages.front().size, pin.heuristics) << pin.file;
}

std::string listName(const ::testing::TestParamInfo<Pinned>& info) {
  std::string name = info.param.file;
  name = name.substr(name.find('/') + 1);
  name = name.substr(0, name.rfind('.'));
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Lists, AutoHeights, ::testing::ValuesIn(kPinned), listName);

// MiniMalloc's challenging D and J: the lowest heights known, 1,018,880
// and 1,029,120 bytes (1.0332x and 1.0404x their load bounds; auto's
// 1,031,168 and 1,035,264 were the best before), found by
// `memplan plan X.1048576.csv -a exact --effort E` (D: effort 30, 274 s
// of CPU; J: effort 10, 43 s; too long for this suite). The solutions are kept beside the lists and
// checked here by the test's own placement check.
struct BestKnown {
  const char* list;  // under tests/data/minimalloc-challenging
  Bytes height;
  Bytes load_bound;
};

class BestKnownSolution : public ::testing::TestWithParam<BestKnown> {};

TEST_P(BestKnownSolution, IsValidAtItsHeight) {
  const BestKnown& best = GetParam();
  const std::filesystem::path dir = test::dataDir() / "minimalloc-challenging";
  const BufferList list = readMiniMallocCsv(test::readText(dir / best.list), best.list);
  const BufferList sol =
      readMiniMallocCsv(test::readText(dir / "solutions" / best.list), best.list);
  ASSERT_EQ(sol.problem.buffers.size(), list.problem.buffers.size());
  ASSERT_EQ(sol.offsets.size(), list.problem.buffers.size());
  std::vector<Offset> offsets;
  for (std::size_t k = 0; k < sol.offsets.size(); ++k) {
    const Buffer& a = list.problem.buffers[k];
    const Buffer& b = sol.problem.buffers[k];
    ASSERT_TRUE(a.start == b.start && a.end == b.end && a.size == b.size) << a.name;
    ASSERT_TRUE(sol.offsets[k].has_value()) << a.name;
    offsets.push_back(*sol.offsets[k]);
  }
  EXPECT_EQ(test::checkPoolPlacement(list.problem, offsets), "");
  EXPECT_EQ(test::placementBytes(list.problem, offsets), best.height);
  EXPECT_EQ(lowerBound(list.problem), best.load_bound);
}

INSTANTIATE_TEST_SUITE_P(Challenging, BestKnownSolution,
                         ::testing::Values(BestKnown{"D.1048576.csv", 1'018'880, 986'112},
                                           BestKnown{"J.1048576.csv", 1'029'120, 989'184}));

// Issue 27's reproducer: buffer i lives [i, i + width), its size
// 1 + (i * 7919) mod 100003 bytes (found by hostile-input testing of
// memplan; the CSV rows as MiniMalloc CSV reads them).
PoolProblem stairs(std::size_t n, std::size_t width) {
  std::string csv = "id,lower,upper,size\n";
  for (std::size_t i = 0; i < n; ++i)
    csv += "b" + std::to_string(i) + "," + std::to_string(i) + "," + std::to_string(i + width) +
           "," + std::to_string(1 + (i * 7919) % 100003) + "\n";
  return readMiniMallocCsv(csv, "stairs.csv").problem;
}

// Before the step limit, auto spent about 16 billion steps (44 s) in the
// exact search here. Now: the heuristics (56 M work units), local search
// (40 M), one exact call of at most exact_step_limit steps (plus the node
// that crosses it) and the anytime rounds (16 M).
TEST(AutoBudget, StairsWorkStaysBounded) {
  const PoolProblem p = stairs(2000, 1000);
  const PoolSolution s = makeAlgorithm("auto")->solve(p, {});
  ASSERT_EQ(test::checkPoolPlacement(p, s.offsets), "");
  EXPECT_LE(s.work, 1'000'000'000u);
  EXPECT_EQ(s.size, 50'219'056u);  // 1.0007x the lower bound, 50,181,824
  std::uint64_t exact = 0;
  for (const SearchStage& stage : s.stages)
    if (stage.stage == "exact") exact += stage.work;
  EXPECT_GT(exact, AutoParams{}.exact.step_limit / 2);  // it ran, and was cut by steps
  EXPECT_LE(exact, AutoParams{}.exact.step_limit + 20'000'000);
}

// The step limit ends minimizeHeight within one node of it, with a valid
// placement never above the incumbent; without it the same call runs on.
TEST(AutoBudget, ExactStepLimitEndsTheSearch) {
  const PoolProblem p = stairs(600, 300);
  std::vector<Offset> incumbent(p.buffers.size());
  Offset top = 0;
  for (const Buffer& b : p.buffers) {  // every buffer on its own bytes
    incumbent[b.id] = top;
    top += b.size;
  }
  exact::ExactParams ep;
  ep.step_limit = 5'000'000;
  const exact::ExactResult r = exact::minimizeHeight(p, incumbent, lowerBound(p), ep);
  ASSERT_TRUE(r.found);
  EXPECT_EQ(test::checkPoolPlacement(p, r.offsets), "");
  EXPECT_LE(r.height, top);
  EXPECT_GE(r.steps, ep.step_limit);
  EXPECT_LE(r.steps, ep.step_limit + 2'000'000);  // a node here reads < 2 M
  ep.step_limit = 4 * ep.step_limit;
  EXPECT_GT(exact::minimizeHeight(p, incumbent, lowerBound(p), ep).steps, r.steps);
}

}  // namespace
}  // namespace memplan

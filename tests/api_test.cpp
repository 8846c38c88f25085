// The library entry point (memplan/memplan.h): inputs of every kind planned,
// verified, replayed, written and read back; plans that remember their
// input; verify and replay agreeing on every plan.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/sha256.h"
#include "memplan/limits.h"
#include "memplan/memplan.h"
#include "support/random_graph.h"
#include "support/test_support.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Lengths around the 56- and 64-byte padding boundaries (bytes i % 251).
  const std::pair<std::size_t, const char*> kCases[] = {
      {55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"},
      {56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"},
      {63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"},
      {64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"},
      {65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"},
      {119, "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"},
      {120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"},
      {1000, "4e4c294b331f7a2099a379bec34b9f9fc03dc46ab465d998f4d683da53487e6d"},
  };
  for (const auto& [n, digest] : kCases) {
    std::string data(n, '\0');
    for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<char>(i % 251);
    EXPECT_EQ(sha256Hex(data), digest) << n;
  }
}

TEST(Api, PlansEveryInputKindAndReadsThePlanBack) {
  const fs::path dir = test::tempDir("api-kinds");
  const std::pair<fs::path, Bytes> kInputs[] = {
      {test::sourceDir() / "examples/graphs/mlp.json", 33296},
      {test::dataDir() / "executorch-conformance/greedy-101-0004.json", 0},
      {test::dataDir() / "minimalloc-challenging/example.12.csv", 12},
  };
  for (const auto& [path, arena] : kInputs) {
    SCOPED_TRACE(path.string());
    const Input in = readInput(path);
    EXPECT_EQ(in.source.name, path.string());
    EXPECT_EQ(in.source.size, fs::file_size(path));
    EXPECT_EQ(in.source.sha256, sha256Hex(test::readText(path)));
    const Plan p = plan(in);
    EXPECT_EQ(p.source, in.source);
    if (arena) {
      EXPECT_EQ(p.main().bufsizes.at(1), arena);
    }
    EXPECT_TRUE(verify(in, p).ok());
    EXPECT_TRUE(replay(in, p).ok());
    const fs::path out = dir / (path.stem().string() + ".plan.json");
    writePlan(out, p, in);
    const Plan back = readPlan(out, in);
    EXPECT_EQ(back.main().bufsizes, p.main().bufsizes);
    ASSERT_EQ(back.main().allocations.size(), p.main().allocations.size());
    for (std::size_t i = 0; i < p.main().allocations.size(); ++i)
      EXPECT_EQ(back.main().allocations[i].offset, p.main().allocations[i].offset) << i;
    EXPECT_EQ(back.source, in.source);
    EXPECT_EQ(back.algorithm, p.algorithm);
    EXPECT_EQ(writePlan(back, in), writePlan(p, in));  // the same bytes again
  }
}

TEST(Api, FormatRowsSayWhatAnInputCanDo) {
  // The rows, as the library and the shells read them.
  const auto can = [](const char* name, InputAbility a) { return findInputFormat(name)->can(a); };
  EXPECT_TRUE(can("pte", kCarriesPlan) && can("pte", kWritesPte));
  EXPECT_FALSE(can("pte", kWritesTflite) || can("pte", kRunsOnTfliteMicro));
  EXPECT_TRUE(can("tflite", kCarriesPlan) && can("tflite", kWritesTflite) &&
              can("tflite", kRunsOnTfliteMicro));
  EXPECT_FALSE(can("tflite", kWritesPte));
  EXPECT_TRUE(can("graph_json", kCarriesPlan));
  for (const char* name : {"csv", "spec_list", "onnx", "plan"}) EXPECT_EQ(findInputFormat(name)->abilities, 0u) << name;

  // The façade acts on them: a graph writes no copy of itself, a CSV carries no plan.
  const Input graph = readInput(test::sourceDir() / "examples/graphs/mlp.json");
  const Plan plan = memplan::plan(graph);
  const fs::path out = fs::path(::testing::TempDir()) / "format_rows.out";
  fs::remove(out);
  EXPECT_THROW(writePte(out, plan, graph), InputError);
  EXPECT_THROW(writeTflite(out, plan, graph), InputError);
  EXPECT_FALSE(fs::exists(out));
  const Input csv = readInput(test::dataDir() / "minimalloc-challenging/example.12.csv");
  try {
    carriedPlan(csv);
    ADD_FAILURE() << "a CSV buffer list carries no plan";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("carries no plan of its own"), std::string::npos) << e.what();
  }
}

TEST(Api, SpecArraysAreCheckedAsASpecListFileIs) {
  SpecArrays good;
  good.nbytes = {100, 50, 60};
  good.first = {0, 1, 2};
  good.last = {1, 2, 3};
  good.mem_id = {0, 2, 0};
  good.inplace_base = {-1, -1, 0};
  const SpecList list = specListFromArrays(good);
  ASSERT_EQ(list.specs.specs.size(), 3u);
  EXPECT_EQ(list.specs.steps, 4);
  EXPECT_EQ(list.specs.specs[1].mem_id, 2);
  EXPECT_EQ(list.specs.specs[2].inplace_base, 0);
  EXPECT_EQ(list.specs.specs[2].name, "specs[2]");
  EXPECT_EQ(list.ids, (std::vector<std::int64_t>{0, 1, 2}));

  const auto message = [](SpecArrays a) -> std::string {
    try {
      specListFromArrays(a);
    } catch (const InputError& e) {
      return e.what();
    }
    return "accepted";
  };
  SpecArrays a = good;
  a.last.pop_back();
  EXPECT_EQ(message(a), "specs: nbytes, lifetimes, mem_ids and inplace_bases differ in length");
  a = good;
  a.first[1] = 3;
  EXPECT_EQ(message(a), "specs[1].lifetime: expected [first, last] with 0 <= first <= last, got [3, 2]");
  a = good;
  a.mem_id[0] = -4;
  EXPECT_EQ(message(a), fmt::format("specs[0].mem_id: -4 out of range [1, {}] (0 holds constants)",
                                    limits::kMaxMemId));
  a = good;
  a.inplace_base[1] = 1;
  EXPECT_EQ(message(a), "specs[1].inplace_base: no other spec at index 1");
  a = good;
  a.inplace_base[0] = 2;  // 0 -> 2 -> 0
  EXPECT_EQ(message(a), "specs[0].inplace_base: inplace_base chain forms a cycle");
  a = good;
  a.nbytes[2] = limits::kMaxSize + 1;
  EXPECT_EQ(message(a), fmt::format("specs[2]: {} bytes, above the limit of 2^62", limits::kMaxSize + 1));
}

TEST(Api, InputDefaultsAndRequestErrorsNameTheField) {
  // A spec list plans with its own algorithm, alignment and padding.
  const Input list = readInput(test::dataDir() / "executorch-conformance/greedy-101-0004.json");
  const Plan p = plan(list);
  EXPECT_EQ(p.algorithm, list.specList()->algorithm);
  EXPECT_EQ(p.options.alignment, list.specList()->alignment);
  EXPECT_EQ(p.extra_padding, list.specList()->extra_padding);
  // A CSV buffer list: alignment 1, auto.
  const Input csv = readInput(test::dataDir() / "minimalloc-challenging/example.12.csv");
  EXPECT_EQ(plan(csv).options.alignment, 1u);
  EXPECT_EQ(plan(csv).algorithm, "auto");
  const auto error = [&](const PlanRequest& r) {
    try {
      plan(csv, r);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  PlanRequest r;
  r.algorithm = "bestfit";
  EXPECT_EQ(error(r).rfind("PlanRequest.algorithm: unknown algorithm 'bestfit'; did you mean best_fit? "
                           "(known: ", 0), 0u)
      << error(r);
  r = {};
  r.options.alignment = Bytes{1} << 31;  // any alignment up to 2^30 works (24 too)
  EXPECT_EQ(error(r), "PlanRequest.options.alignment: 2147483648 is above the limit of 2^30");
  r = {};
  r.options.spill_order = {0};
  EXPECT_EQ(error(r), "PlanRequest.options.spill_order: mem_id 0 not in [1, 4096]");
}

TEST(Api, PlanFileRemembersHowTheInputWasRead) {
  // PP-OCR's detector needs its input shape bound; the plan file records it,
  // so `verify` and `replay` need no flags.
  const fs::path model = test::modelsDir() / "ocr" / "ch_PP-OCRv4_det_infer.onnx";
  if (!fs::exists(model)) MEMPLAN_MISSING_DATA() << "example models not fetched";
  const fs::path dir = test::tempDir("api-provenance");
  const std::string plan_path = (dir / "det.plan.json").string();
  auto r = test::runCli("plan -q " + model.string() + " --input-shape x=1x3x640x640 -o " + plan_path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const PlanProvenance made = readPlanProvenance(test::readText(plan_path), plan_path);
  ASSERT_TRUE(made.source);
  EXPECT_EQ(made.source->size, fs::file_size(model));
  EXPECT_EQ(made.import_options.input_shapes.at("x"), (std::vector<std::int64_t>{1, 3, 640, 640}));
  r = test::runCli("verify " + model.string() + " " + plan_path);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // Every allocation the plan file holds is checked (331 for this model).
  std::size_t allocations = 0;
  const nlohmann::json plan_file = nlohmann::json::parse(test::readText(plan_path));
  for (const auto& g : plan_file.at("graphs")) allocations += g.at("allocations").size();
  EXPECT_GT(allocations, 0u);
  EXPECT_EQ(r.out, "OK: " + std::to_string(allocations) + " allocations verified\n");
  r = test::runCli("replay " + model.string() + " " + plan_path);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // A flag given replaces the recorded one: a larger image needs larger
  // tensors than the plan holds.
  r = test::runCli("verify " + model.string() + " " + plan_path + " --input-shape x=1x3x960x960");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("INVALID: graph 0: 'x' needs 11059200 bytes but is given 4915200", 0), 0u)
      << r.out;
  // Another file is refused (exit 2, one line), unless --force.
  const fs::path other = test::modelsDir() / "ocr" / "ch_ppocr_mobile_v2.0_cls_infer.onnx";
  r = test::runCli("verify " + other.string() + " " + plan_path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("det.plan.json: made from " + model.string()), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(Api, AliasViewsRecordedSoVerifyAndReplayAgree) {
  // Planned with views aliased, checked without retyping the flag: both
  // checks read the input the same way, so they give the same verdict.
  const fs::path model = test::modelsDir() / "ocr" / "ch_ppocr_mobile_v2.0_cls_infer.onnx";
  if (!fs::exists(model)) MEMPLAN_MISSING_DATA() << "example models not fetched";
  const fs::path dir = test::tempDir("api-views");
  const std::string plan_path = (dir / "cls.plan.json").string();
  auto r = test::runCli("plan -q " + model.string() +
                        " --alias-views --input-shape x=1x3x48x192 -o " + plan_path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::runCli("verify " + model.string() + " " + plan_path).exit_code, 0);
  EXPECT_EQ(test::runCli("replay " + model.string() + " " + plan_path).exit_code, 0);
  // Overridden to copies, the views' bytes are checked as their own tensors:
  // both checks refuse the plan (its allocations do not cover them).
  const int v = test::runCli("verify --no-alias-views " + model.string() + " " + plan_path).exit_code;
  const int p = test::runCli("replay --no-alias-views " + model.string() + " " + plan_path).exit_code;
  EXPECT_NE(v, 0);
  EXPECT_EQ(v, p);
}

std::uint64_t graphCount(std::uint64_t fallback) {
  if (const char* env = std::getenv("MEMPLAN_PROPERTY_GRAPHS")) return std::strtoull(env, nullptr, 10) / 4 + 1;
  return fallback;
}

// The verifier reasons about lifetimes, the replay runs the graph: on valid
// plans and on plans with one allocation moved, they say the same.
TEST(Api, VerifyAndReplayGiveTheSameVerdict) {
  const std::uint64_t graphs = graphCount(500);
  std::uint64_t checked = 0, rejected = 0, disagree = 0;
  for (std::uint64_t i = 0; i < graphs; ++i) {
    auto params = test::paramsForIndex(i);
    params.huge_sizes = false;
    const test::RandomCase c = test::randomCase(i + 7000001, params);
    const Input in = Input::fromModel(c.model);
    PlanRequest request;
    request.algorithm = "best_fit";
    request.options = c.options;
    Plan p;
    try {
      p = plan(in, request);
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.summary << ": " << e.what();
      continue;
    }
    test::Rng rng(i);
    for (int round = 0; round < 3; ++round) {
      if (round > 0) {  // move one allocation somewhere inside its pool
        GraphPlan& gp = p.graphs[rng.below(p.graphs.size())];
        if (gp.allocations.empty()) continue;
        Allocation& a = gp.allocations[rng.below(gp.allocations.size())];
        const Bytes pool = gp.bufsizes[a.mem_id];
        if (pool <= a.size) continue;
        const Bytes align = gp.specs.specs[a.spec].alignment;
        a.offset = rng.below((pool - a.size) / align + 1) * align;
      }
      const VerifyResult v = verify(in, p);
      const ReplayResult r = replay(in, p);
      if (round == 0) {  // the plan as best_fit made it: both must accept it
        EXPECT_TRUE(v.ok()) << c.summary << ": " << (v.ok() ? "" : v.violations[0].message);
        EXPECT_TRUE(r.ok()) << c.summary << ": " << r.message;
        continue;
      }
      ++checked;
      rejected += !v.ok();
      if (v.ok() != r.ok() && disagree++ < 5)
        ADD_FAILURE() << c.summary << " round " << round << ": verifier "
                      << (v.ok() ? "accepts" : "rejects: " + v.violations[0].message)
                      << "; replay " << (r.ok() ? "accepts" : "rejects: " + r.message);
    }
  }
  std::printf("%llu plans checked, %llu rejected by both, %llu disagreements\n",
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(rejected),
              static_cast<unsigned long long>(disagree));
  EXPECT_EQ(disagree, 0u);
  EXPECT_GT(rejected, checked / 20);
}

}  // namespace
}  // namespace memplan

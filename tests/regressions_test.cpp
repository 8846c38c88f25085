// Replays saved fuzzer inputs through the same checks the fuzzers run
// (fuzz/fuzz_checks.h): every file under tests/regressions/<target>/ (inputs
// that once crashed or broke a check) and the seed corpora fuzz/corpus/<target>/.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "../fuzz/fuzz_checks.h"
#include "memplan/io.h"
#include "memplan/plan.h"
#include "verify/replay.h"
#include "memplan/verify.h"
#include "support/test_support.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;

const std::map<std::string, std::function<std::string(std::string_view)>>& checks() {
  static const std::map<std::string, std::function<std::string(std::string_view)>> kChecks = {
      {"graph_json_fuzz", fuzz::checkGraphJson}, {"spec_list_fuzz", fuzz::checkSpecList},
      {"csv_fuzz", fuzz::checkCsv},             {"onnx_fuzz", fuzz::checkOnnx},
      {"tflite_fuzz", fuzz::checkTflite},       {"pte_fuzz", fuzz::checkPte},
  };
  return kChecks;
}

// Runs every file of <root>/<target>/; returns how many ran.
std::size_t replayDir(const fs::path& root) {
  std::size_t ran = 0;
  for (const auto& [target, check] : checks()) {
    const fs::path dir = root / target;
    if (!fs::exists(dir)) continue;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      SCOPED_TRACE(f.string());
      const std::string bytes = test::readText(f);
      std::string problem;
      EXPECT_NO_THROW(problem = check(bytes));
      EXPECT_EQ(problem, "");
      ++ran;
    }
  }
  return ran;
}

TEST(Regressions, SeedCorporaPassTheFuzzChecks) {
  EXPECT_GE(replayDir(test::sourceDir() / "fuzz" / "corpus"), 8u);
}

TEST(Regressions, SavedCrashesStayFixed) {
  const fs::path root = test::sourceDir() / "tests" / "regressions";
  const std::size_t ran = replayDir(root);
  ASSERT_GT(ran, 0u) << "no saved fuzzer inputs in tests/regressions/<target>/";
  std::printf("replayed %zu saved fuzzer inputs\n", ran);
}

// The example models are the ONNX/TFLite fuzzers' seeds (scripts/fuzz-seeds.sh).
TEST(Regressions, ExampleModelsPassTheFuzzChecks) {
  if (!fs::exists(test::modelsDir())) MEMPLAN_MISSING_DATA() << "no example models (scripts/fetch-models.sh)";
  std::size_t ran = 0;
  for (const auto& e : fs::recursive_directory_iterator(test::modelsDir())) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || e.file_size() > (8u << 20)) continue;
    if (ext != ".onnx" && ext != ".tflite") continue;
    SCOPED_TRACE(e.path().string());
    const std::string bytes = test::readText(e.path());
    EXPECT_EQ(ext == ".onnx" ? fuzz::checkOnnx(bytes) : fuzz::checkTflite(bytes), "");
    ++ran;
  }
  if (ran == 0) MEMPLAN_MISSING_DATA() << "no example models (scripts/fetch-models.sh)";
}

// The property tests' findings (tests/regressions/README.md), replanned as
// they were found.
TEST(Regressions, PropertyFindingsStayFixed) {
  const fs::path dir = test::sourceDir() / "tests" / "regressions" / "plans";
  const auto planOf = [&](const char* file, const char* algorithm, Bytes alignment,
                          bool plan_inputs, double effort) {
    const Model m = readGraphJson(test::readText(dir / file), file);
    PlanRequest r;
    r.algorithm = algorithm;
    r.options.alignment = alignment;
    r.options.alloc_graph_input = plan_inputs;
    r.params.effort = effort;
    const Plan p = planModel(m, r);
    const VerifyResult v = verifyPlan(p);
    EXPECT_TRUE(v.ok()) << file << " " << algorithm << ": "
                        << (v.ok() ? "" : v.violations[0].message);
    const ReplayResult rr = replayPlan(m, p);
    EXPECT_TRUE(rr.ok()) << file << " " << algorithm << ": " << rr.message;
    Bytes total = 0;
    for (Bytes b : p.main().bufsizes) total += b;
    return total;
  };
  // A zero-size tensor once got an offset past its pool's end.
  planOf("exact-zero-size-outside-pool.json", "exact", 8, false, 0.05);
  // exact once ended above memplan's own heuristics; it starts from their best.
  const Bytes exact = planOf("exact-above-naive.json", "exact", 16, true, 1.0);
  for (const char* heuristic : {"best_fit", "local_search"})
    EXPECT_LE(exact, planOf("exact-above-naive.json", heuristic, 16, true, 1.0)) << heuristic;
}

}  // namespace
}  // namespace memplan

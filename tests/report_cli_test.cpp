// The report as the command line prints it, the same for every kind of
// input: the header names the input, "optimal" means one thing whether the
// plan was made now or carried by a file, -q does not silently eat --json,
// and an ONNX model with dynamic shapes says what to bind in one short line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace memplan::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// Every input kind, its report's first line: "memplan: INPUT, algorithm ...".
TEST(ReportCli, HeaderNamesTheInputOfEveryKind) {
  const fs::path dir = tempDir("report-cli-header");
  const std::string csv = (dir / "buffers.csv").string();
  std::ofstream(csv) << "id,lower,upper,size\n0,0,2,32\n1,1,3,64\n";
  const std::string spec_list = (dataDir() / "executorch-conformance/greedy-101-0050.json").string();
  const std::string graph = (sourceDir() / "examples/graphs/mlp.json").string();
  const std::string pte = (dataDir() / "executorch-programs/add.pte").string();
  for (const std::string& input : {csv, spec_list, graph, pte}) {
    const CliResult r = runCli("plan '" + input + "'");
    ASSERT_EQ(r.exit_code, 0) << input << ": " << r.err;
    EXPECT_EQ(firstLine(r.out).rfind("memplan: " + input + ", algorithm ", 0), 0u) << r.out;
    const CliResult j = runCli("plan --json '" + input + "'");
    ASSERT_EQ(j.exit_code, 0) << j.err;
    EXPECT_EQ(json::parse(j.out)["input"], input);
  }
  // `report INPUT PLAN`: a CSV solution records no provenance; the input
  // is still named, as given to this command.
  const std::string solution = (dir / "solution.csv").string();
  ASSERT_EQ(runCli("plan -q '" + csv + "' -o '" + solution + "'").exit_code, 0);
  const CliResult r = runCli("report '" + csv + "' '" + solution + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(firstLine(r.out), "memplan: " + csv + ", algorithm file");
  fs::remove_all(dir);
}

// A .tflite carrying memplan's plan (TFLite Micro's offline plan) at the
// lower bound is optimal, as a .pte at its bound is; the bound is the real
// one (the most bytes live at once), not the carried arena's size, so a
// carried plan above it is not.
TEST(ReportCli, CarriedPlansAreOptimalExactlyAtTheirBound) {
  const fs::path model = modelsDir() / "selfie_segmentation/selfie_segmentation.tflite";
  if (!fs::exists(model)) MEMPLAN_MISSING_DATA() << model;
  const fs::path dir = tempDir("report-cli-optimal");
  const std::string ours = (dir / "auto.tflite").string(), greedy = (dir / "greedy.tflite").string();
  ASSERT_EQ(runCli("plan -q '" + model.string() + "' --write-tflite '" + ours + "'").exit_code, 0);
  ASSERT_EQ(runCli("plan -q -a greedy '" + model.string() + "' --write-tflite '" + greedy + "'").exit_code, 0);

  CliResult r = runCli("report '" + ours + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("main      1  cpu:0   3.5 MiB      3.5 MiB  1.000  yes      29.0 MiB  -87.9%  pinned"),
            std::string::npos) << r.out;
  r = runCli("report --json '" + ours + "'");
  json pool = json::parse(r.out)["pools"][0];
  EXPECT_EQ(pool["arena_bytes"], 3670016);
  EXPECT_EQ(pool["lower_bound_bytes"], 3670016);
  EXPECT_EQ(pool["proven_optimal"], true);

  r = runCli("report --json '" + greedy + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  pool = json::parse(r.out)["pools"][0];
  EXPECT_EQ(pool["arena_bytes"], 4456448);
  EXPECT_EQ(pool["lower_bound_bytes"], 3670016);  // was 4456448: the size itself
  EXPECT_EQ(pool["proven_optimal"], false);

  // The .pte side, for comparison: its carried plan at the bound says yes.
  r = runCli("report --json '" + (dataDir() / "executorch-programs/keyword_spotting.pte").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  pool = json::parse(r.out)["pools"][0];
  EXPECT_EQ(pool["arena_bytes"], pool["lower_bound_bytes"]);
  EXPECT_EQ(pool["proven_optimal"], true);
  fs::remove_all(dir);
}

// -q turns the report off; with --json it used to print nothing and exit 0.
TEST(ReportCli, QuietWithJsonIsAUsageError) {
  const std::string graph = (sourceDir() / "examples/graphs/mlp.json").string();
  const CliResult r = runCli("plan -q --json '" + graph + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "memplan: -q turns the report off and --json asks for it as JSON: give one of them\n");
  EXPECT_EQ(runCli("plan --json '" + graph + "'").exit_code, 0);
  EXPECT_EQ(runCli("plan -q '" + graph + "'").exit_code, 0);
}

// Dynamic shapes: one line with what to bind and the flags that bind it
// (it was 1,371 characters on PP-OCRv4 det, listing ten tensors).
TEST(ReportCli, DynamicShapesSayWhatToBindInOneShortLine) {
  const fs::path det = modelsDir() / "ocr/ch_PP-OCRv4_det_infer.onnx";
  const fs::path vad = modelsDir() / "vad/silero_vad_v5.onnx";
  if (!fs::exists(det) || !fs::exists(vad)) MEMPLAN_MISSING_DATA() << det;
  CliResult r = runCli("plan -q '" + det.string() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "memplan: " + det.string() +
                       ": cannot size 331 tensors: bind input 'x' "
                       "[p2o.DynamicDimension.0,3,p2o.DynamicDimension.1,p2o.DynamicDimension.2] "
                       "(hint: --input-shape x=?x3x?x?, a number for each ?, or --dim SYMBOL=N; "
                       "--unknown-size-bytes N plans them at an upper bound instead)\n");
  r = runCli("plan -q '" + vad.string() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "memplan: " + vad.string() +
                       ": cannot size 192 tensors: bind input 'input' [?,?], input 'state' "
                       "[2,?,128] (hint: --input-shape input=?x? --input-shape state=2x?x128, a "
                       "number for each ?; --unknown-size-bytes N plans them at an upper bound "
                       "instead)\n");
  // The hint's flags are the ones that work.
  EXPECT_EQ(runCli("plan -q '" + vad.string() + "' --input-shape input=1x256 --input-shape state=2x1x128")
                .exit_code,
            0);
  EXPECT_EQ(runCli("plan -q '" + det.string() + "' --input-shape x=1x3x64x64").exit_code, 0);
}

}  // namespace
}  // namespace memplan::test

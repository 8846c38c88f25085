// The command line catches the user's mistakes: each is one line on stderr
// starting "memplan: ", with exit code 2 (bad input or usage) or 3 (does not
// fit); warnings say how many tensors and name the first few.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "memplan/algorithm.h"
#include "support/test_support.h"

namespace memplan::test {
namespace {

namespace fs = std::filesystem;

void writeText(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Refused with `code` and exactly `line` on stderr.
void expectError(const std::string& args, int code, const std::string& line) {
  const CliResult r = runCli(args);
  EXPECT_EQ(r.exit_code, code) << args << "\n" << r.err;
  EXPECT_EQ(r.err, line + "\n") << args;
  EXPECT_TRUE(r.out.empty()) << args << ": " << r.out;
}

struct Files {
  fs::path dir, csv, tflite;
};

Files files(const std::string& name) {
  Files f;
  f.dir = tempDir(name);
  f.csv = f.dir / "two.csv";
  writeText(f.csv, "id,lower,upper,size\na,0,2,64\nb,1,3,64\n");
  // Flags are checked against the input's kind before it is read.
  f.tflite = f.dir / "model.tflite";
  writeText(f.tflite, "not really a model");
  return f;
}

TEST(CliMistakes, UnknownCommandsAndOptionsSuggestTheClosest) {
  expectError("plann x.csv", 2,
              "memplan: unknown command 'plann'; did you mean plan? (commands: plan, verify, replay, "
              "import, algorithms, report)");
  expectError("verfy a b", 2,
              "memplan: unknown command 'verfy'; did you mean verify? (commands: plan, verify, replay, "
              "import, algorithms, report)");
  expectError("frobnicate", 2,
              "memplan: unknown command 'frobnicate' (commands: plan, verify, replay, import, "
              "algorithms, report)");
  expectError("", 2,
              "memplan: a command is required (plan, verify, replay, import, algorithms, report); see memplan "
              "--help");
  expectError("plan x.csv --alignmnet 4", 2,
              "memplan: unknown option '--alignmnet' for 'plan'; did you mean --alignment? (see memplan "
              "plan --help)");
  expectError("plan x.csv --capacty=1=4", 2,
              "memplan: unknown option '--capacty' for 'plan'; did you mean --capacity? (see memplan "
              "plan --help)");
  expectError("verify a b --zzz", 2, "memplan: unknown option '--zzz' for 'verify' (see memplan verify --help)");
}

TEST(CliMistakes, FlagsThatDoNotApplyToTheInputKind) {
  const Files f = files("cli-kind");
  const std::string t = f.tflite.string(), c = f.csv.string();
  expectError("plan " + t + " --input-shape x=1x3", 2,
              "memplan: --input-shape applies to ONNX models only; " + t + " is a TFLite model");
  expectError("plan " + t + " --dim N=1", 2,
              "memplan: --dim applies to ONNX models only; " + t + " is a TFLite model");
  expectError("plan " + t + " --alias-views", 2,
              "memplan: --alias-views applies to ONNX models only; " + t + " is a TFLite model");
  expectError("import " + t + " --alias-views", 2,
              "memplan: --alias-views applies to ONNX models only; " + t + " is a TFLite model");
  expectError("plan " + c + " --unknown-size-bytes 64", 2,
              "memplan: --unknown-size-bytes applies to ONNX and TFLite models only; " + c +
                  " is a MiniMalloc CSV buffer list");
  expectError("plan " + c + " --ignore-offline-plan", 2,
              "memplan: --ignore-offline-plan applies to TFLite models only; " + c +
                  " is a MiniMalloc CSV buffer list");
}

TEST(CliMistakes, ContradictoryFlags) {
  const Files f = files("cli-contradictions");
  const std::string c = f.csv.string();
  expectError("plan " + c + " --compare greedy", 2,
              "memplan: --compare greedy shows a second plan in the HTML viewer: it needs --html FILE");
  expectError("plan " + c + " --html " + (f.dir / "v.html").string() + " --compare gredy", 2,
              "memplan: --compare: unknown algorithm 'gredy'; did you mean greedy? (`memplan "
              "algorithms` lists them)");
  expectError("plan " + c + " --spill-order 1,2,1", 2,
              "memplan: --spill-order: pool 1 is listed twice (positions 1 and 3)");
  expectError("plan " + c + " -o " + (f.dir / "plan.txt").string(), 2,
              "memplan: -o " + (f.dir / "plan.txt").string() + ": memplan writes .json or .csv files, not .txt");
  expectError("import " + c + " -o " + (f.dir / "g.yaml").string(), 2,
              "memplan: -o " + (f.dir / "g.yaml").string() + ": memplan writes .json files, not .yaml");
  EXPECT_FALSE(fs::exists(f.dir / "plan.txt"));
  expectError("plan " + c + " --extra-padding 4611686018427387800", 2,
              "memplan: --extra-padding: 4611686018427387800 overflows: with the input's tensors (up to "
              "128 bytes) a pool would exceed the limit of 2^62 bytes");
  expectError("plan " + c + " --extra-padding 5EiB", 2,
              "memplan: --extra-padding: expected a byte count like 4096, 256KiB or 1MiB (units B, KB, "
              "MB, GB, KiB, MiB, GiB), got '5EiB'");
  std::string known;
  for (const std::string& n : algorithmNames()) known += (known.empty() ? "" : ", ") + n;
  expectError("plan " + c + " -a bestfit", 2,
              "memplan: --algorithm: unknown algorithm 'bestfit'; did you mean best_fit? (known: " + known + ")");
}

// A plan given where a model is expected (plan's INPUT, verify's arguments
// swapped): refused with what to do instead.
TEST(CliMistakes, APlanIsNotAModel) {
  const Files f = files("cli-plan-as-model");
  const fs::path plan = f.dir / "two.plan.json";
  ASSERT_EQ(runCli("plan -q " + f.csv.string() + " -o " + plan.string()).exit_code, 0);
  const std::string line = "memplan: " + plan.string() +
                           ": this is a memplan plan, not a model; use `memplan verify|replay|report MODEL PLAN`";
  expectError("plan " + plan.string(), 2, line);
  expectError("verify " + plan.string() + " " + f.csv.string(), 2, line);
  expectError("report " + plan.string(), 2, line);
}

TEST(CliMistakes, ACapacityThatCannotBeMetIsExitCodeThree) {
  const Files f = files("cli-capacity");
  expectError("plan " + f.csv.string() + " --capacity 1=100", 3,
              "memplan: does not fit: pool 1 needs 128 B > capacity 100 B at step 1 (128 B live, no pool "
              "to spill to): 2 live tensors: a (64 B), b (64 B)");
  // Fits: exit 0.
  EXPECT_EQ(runCli("plan -q " + f.csv.string() + " --capacity 1=128").exit_code, 0);
}

TEST(CliMistakes, VerifyChecksCapacitiesNamingTheBuffer) {
  const Files f = files("cli-verify-capacity");
  const fs::path plan = f.dir / "plan.json", solution = f.dir / "sol.csv";
  ASSERT_EQ(runCli("plan -q " + f.csv.string() + " -o " + plan.string()).exit_code, 0);
  EXPECT_EQ(runCli("verify " + f.csv.string() + " " + plan.string() + " --capacity 1=128").exit_code, 0);
  const CliResult r = runCli("verify " + f.csv.string() + " " + plan.string() + " --capacity 1=100");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "INVALID: graph 0: 'b' at bytes [64, 128) exceeds pool 1's capacity of 100 bytes\n");
  // The replay agrees; and a CSV solution is checked the same way.
  EXPECT_EQ(runCli("replay " + f.csv.string() + " " + plan.string() + " --capacity 1=100").exit_code, 1);
  writeText(solution, "id,lower,upper,size,offset\na,0,2,64,0\nb,1,3,64,64\n");
  EXPECT_EQ(runCli("verify " + f.csv.string() + " " + solution.string()).exit_code, 0);
  EXPECT_EQ(runCli("verify " + f.csv.string() + " " + solution.string() + " --capacity 1=127").exit_code, 1);
}

TEST(CliMistakes, ErrorMessagesEscapeBytesThatAreNotPrintable) {
  const Files f = files("cli-escape");
  const fs::path bad = f.dir / "bad.csv";
  writeText(bad, "id,lower,upper,size,\x1b[31mred\xff\n");
  const CliResult r = runCli("plan " + bad.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\xff'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown column '\\x1b[31mred\\xff'"), std::string::npos) << r.err;
}

TEST(CliMistakes, AlgorithmsAreListedOnceWithADescription) {
  const CliResult r = runCli("algorithms");
  ASSERT_EQ(r.exit_code, 0);
  std::istringstream lines(r.out);
  std::set<std::string> names;
  int count = 0;
  for (std::string line; std::getline(lines, line);) {
    ++count;
    const std::string name = line.substr(0, line.find(' '));
    EXPECT_TRUE(names.insert(name).second) << "listed twice: " << name;
    EXPECT_GT(line.size(), name.size() + 10) << "no description: " << line;
  }
  // Every registered algorithm, once.
  const std::vector<std::string> registered = algorithmNames();
  EXPECT_EQ(count, static_cast<int>(registered.size()));
  EXPECT_EQ(names, std::set<std::string>(registered.begin(), registered.end()));
}

TEST(CliMistakes, WarningsCountAndNameUnplannedAndGuessedTensors) {
  const Files f = files("cli-warnings");
  const fs::path g = f.dir / "g.json";
  writeText(g, R"({"format": "memplan-graph", "version": 1, "name": "g", "tensors": [
    {"name": "in", "nbytes": 16}, {"name": "s1", "dtype": "string", "dynamic_unbound": true},
    {"name": "s2", "dtype": "string", "dynamic_unbound": true}, {"name": "out", "nbytes": 16}],
    "graphs": [{"name": "main", "inputs": ["in"], "outputs": ["out"], "nodes": [
      {"op": "f", "inputs": ["in"], "outputs": ["s1", "s2"]},
      {"op": "g", "inputs": ["s1", "s2"], "outputs": ["out"]}]}]})");
  const CliResult r = runCli("plan -q " + g.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err,
            "memplan: warning: 2 tensors left unplanned (strings, sequences or sizes known only at run "
            "time; the runtime allocates them): 's1', 's2'\n");
}

// Any alignment works (XLA's tests use 20): planned, written, verified.
TEST(CliMistakes, AlignmentNeedNotBeAPowerOfTwo) {
  const Files f = files("cli-alignment");
  const fs::path out = f.dir / "plan.csv";
  const CliResult r = runCli("plan -q " + f.csv.string() + " --alignment 24 -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // a [0, 2) and b [1, 3) are alive together: 64 bytes each, rounded to 72.
  EXPECT_EQ(readText(out), "id,lower,upper,size,offset\na,0,2,64,0\nb,1,3,64,72\n");
  EXPECT_EQ(runCli("verify " + f.csv.string() + " " + out.string()).exit_code, 0);
  const fs::path aligned = f.dir / "aligned.csv";
  writeText(aligned, "id,lower,upper,size,alignment\na,0,2,64,24\nb,1,3,64,24\n");
  writeText(f.dir / "bad.csv", "id,lower,upper,size,offset\na,0,2,64,0\nb,1,3,64,64\n");
  const CliResult bad = runCli("verify " + aligned.string() + " " + (f.dir / "bad.csv").string());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("'b' at offset 64 is not aligned to 24 bytes"), std::string::npos) << bad.out;
}

// Every field of `plan --json` is documented in docs/report-format.md.
TEST(CliMistakes, ReportJsonFieldsAreDocumented) {
  const CliResult r = runCli("plan --json " + (sourceDir() / "examples/graphs/mlp.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string doc = readText(sourceDir() / "docs/report-format.md");
  std::set<std::string> keys;
  const std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& v) {
    if (v.is_object())
      for (const auto& [k, x] : v.items()) {
        keys.insert(k);
        walk(x);
      }
    if (v.is_array())
      for (const auto& x : v) walk(x);
  };
  walk(nlohmann::json::parse(r.out));
  EXPECT_GE(keys.size(), 30u);
  for (const std::string& k : keys) EXPECT_NE(doc.find("`" + k + "`"), std::string::npos) << k;
}

}  // namespace
}  // namespace memplan::test

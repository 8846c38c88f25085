// Bad inputs through the CLI: every file in tests/bad_inputs/ must be
// refused with exit code 2 and ONE line on stderr that names the file and
// the place (the fragments listed for it in tests/bad_inputs/expect.txt),
// and must leave no output file behind. Truncated and bit-flipped copies of
// the fetched example models are made at test time.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "support/test_support.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;
using test::runCli;

fs::path badDir() { return test::sourceDir() / "tests" / "bad_inputs"; }

struct Case {
  std::string file;
  std::vector<std::string> fragments;
};

// expect.txt: `file<TAB>fragment<TAB>fragment...`; '#' starts a comment.
std::vector<Case> loadManifest() {
  std::vector<Case> cases;
  std::ifstream in(badDir() / "expect.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Case c;
    std::stringstream ss(line);
    std::string field;
    std::getline(ss, c.file, '\t');
    while (std::getline(ss, field, '\t'))
      if (!field.empty()) c.fragments.push_back(field);
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string quote(const fs::path& p) { return "'" + p.string() + "'"; }

// Checks a refused run: exit 2, one line, names the file.
void expectRefused(const test::CliResult& r, const std::string& file_name) {
  EXPECT_EQ(r.exit_code, 2) << "stdout: " << r.out << "\nstderr: " << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "not one line: " << r.err;
  EXPECT_EQ(r.err.back(), '\n');
  EXPECT_NE(r.err.find(file_name), std::string::npos) << "does not name the file: " << r.err;
}

class BadInput : public ::testing::TestWithParam<Case> {};

TEST_P(BadInput, RefusedWithOneLineNamingThePlace) {
  const Case& c = GetParam();
  const fs::path input = badDir() / c.file;
  ASSERT_TRUE(fs::exists(input)) << input;
  const fs::path dir = test::tempDir("bad-" + c.file);
  const fs::path out = dir / "plan.json";
  const auto r = runCli("plan " + quote(input) + " -q -o " + quote(out));
  expectRefused(r, c.file);
  for (const std::string& f : c.fragments)
    EXPECT_NE(r.err.find(f), std::string::npos) << "expected '" << f << "' in: " << r.err;
  EXPECT_FALSE(fs::exists(out)) << "a failed run left an output file";
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadInput, ::testing::ValuesIn(loadManifest()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.file;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

TEST(BadInputs, EveryFileIsListedOnce) {
  std::set<std::string> listed;
  for (const Case& c : loadManifest()) {
    EXPECT_TRUE(listed.insert(c.file).second) << c.file << " listed twice";
    EXPECT_FALSE(c.fragments.empty()) << c.file << ": no expected fragment";
  }
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(badDir())) {
    const std::string name = e.path().filename().string();
    if (name == "expect.txt" || name == "README.md") continue;
    ++files;
    EXPECT_TRUE(listed.count(name)) << name << " is not in expect.txt";
  }
  EXPECT_GE(files, 30u);
}

// A failed run must not touch an existing output file either.
TEST(BadInputs, FailedRunKeepsExistingOutput) {
  const fs::path dir = test::tempDir("bad-keep");
  const fs::path out = dir / "plan.json";
  { std::ofstream(out) << "previous plan\n"; }
  const auto r = runCli("plan " + quote(badDir() / "csv_negative_size.csv") + " -q -o " + quote(out));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(test::readText(out), "previous plan\n");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u) << "temporary files left behind";
  fs::remove_all(dir);
}

// ---- damaged copies of the example models ----
std::vector<fs::path> exampleModels() {
  std::vector<fs::path> models;
  if (!fs::exists(test::modelsDir())) return models;
  for (const auto& e : fs::recursive_directory_iterator(test::modelsDir())) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".onnx" || ext == ".tflite") && e.file_size() < (8u << 20))
      models.push_back(e.path());
  }
  std::sort(models.begin(), models.end());
  return models;
}

void writeBytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(BadInputs, TruncatedModelsAreRefused) {
  const auto models = exampleModels();
  if (models.empty()) MEMPLAN_MISSING_DATA() << "no example models (run scripts/fetch-models.sh)";
  const fs::path dir = test::tempDir("bad-truncated");
  std::size_t checked = 0;
  for (const fs::path& m : models) {
    const std::string bytes = test::readText(m);
    for (const std::size_t keep : {bytes.size() / 2, std::size_t{64}, std::size_t{7}}) {
      const std::string name = "cut" + std::to_string(keep) + "-" + m.filename().string();
      const fs::path p = dir / name;
      writeBytes(p, bytes.substr(0, keep));
      SCOPED_TRACE(name);
      const auto r = runCli("plan " + quote(p) + " -q -a best_fit -o " + quote(dir / "out.json"));
      expectRefused(r, name);
      EXPECT_FALSE(fs::exists(dir / "out.json"));
      ++checked;
    }
  }
  EXPECT_EQ(checked, models.size() * 3);
  fs::remove_all(dir);
}

// Bit flips may leave a valid model (exit 0) or a broken one (exit 2), never
// a crash, a failed verification or a multi-line error.
TEST(BadInputs, BitFlippedModelsNeverCrash) {
  const auto models = exampleModels();
  if (models.empty()) MEMPLAN_MISSING_DATA() << "no example models (run scripts/fetch-models.sh)";
  const fs::path dir = test::tempDir("bad-flipped");
  std::size_t refused = 0, accepted = 0;
  std::uint64_t state = 0x6d656d;
  for (const fs::path& m : models) {
    const std::string bytes = test::readText(m);
    for (int variant = 0; variant < 4; ++variant) {
      std::string flipped = bytes;
      // Flip 8 bits; half the variants aim at the first 4 KiB (headers, tables).
      for (int k = 0; k < 8; ++k) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        const std::size_t span = variant % 2 ? std::min<std::size_t>(flipped.size(), 4096) : flipped.size();
        flipped[(state >> 33) % span] ^= static_cast<char>(1u << ((state >> 20) & 7));
      }
      const std::string name = "flip" + std::to_string(variant) + "-" + m.filename().string();
      const fs::path p = dir / name;
      writeBytes(p, flipped);
      SCOPED_TRACE(name);
      const auto r = runCli("plan " + quote(p) + " -q -a best_fit -o " + quote(dir / "out.json"));
      if (r.exit_code == 0) {
        ++accepted;
        EXPECT_TRUE(fs::exists(dir / "out.json"));
        fs::remove(dir / "out.json");
      } else {
        ++refused;
        expectRefused(r, name);
        EXPECT_FALSE(fs::exists(dir / "out.json"));
      }
    }
  }
  EXPECT_EQ(accepted + refused, models.size() * 4);
  std::printf("bit-flipped models: %zu refused, %zu still valid\n", refused, accepted);
  fs::remove_all(dir);
}

// Hostile, not malformed: small files whose control flow runs a body an
// exponential or a huge number of times. Each command must stay
// polynomial: a body is planned, walked and stepped through once (ctest's
// timeout catches a regression; the numbers are in docs/reliability.md).
std::string controlFlowDag(int depth) {
  // graph i runs graph i+1 from two call nodes; the last graph has two ops.
  std::string tensors, graphs;
  for (int i = 0; i <= depth; ++i) {
    const std::string g = "g" + std::to_string(i);
    for (const char* t : {".x", ".y", ".z"})
      tensors += std::string(tensors.empty() ? "" : ",") + "{\"name\":\"" + g + t + "\",\"nbytes\":64}";
    const std::string body = i < depth ? ",\"kind\":\"call\",\"subgraphs\":[\"g" + std::to_string(i + 1) + "\"]" : "";
    graphs += std::string(graphs.empty() ? "" : ",") + "{\"name\":\"" + g + "\"" +
              (i > 0 ? ",\"parent\":\"g" + std::to_string(i - 1) + "\"" : "") + ",\"inputs\":[\"" + g +
              ".x\"],\"outputs\":[\"" + g + ".z\"],\"nodes\":[{\"op\":\"f\",\"inputs\":[\"" + g +
              ".x\"],\"outputs\":[\"" + g + ".y\"]" + body + "},{\"op\":\"f\",\"inputs\":[\"" + g +
              ".y\"],\"outputs\":[\"" + g + ".z\"]" + body + "}]}";
  }
  return "{\"format\":\"memplan-graph\",\"version\":1,\"name\":\"dag\",\"tensors\":[" + tensors +
         "],\"graphs\":[" + graphs + "]}";
}

std::string sharedBody(int callers) {
  std::string tensors = "{\"name\":\"t0\",\"nbytes\":64}", nodes;
  for (int i = 0; i < callers; ++i) {
    const std::string in = "t" + std::to_string(i), out = "t" + std::to_string(i + 1);
    tensors += ",{\"name\":\"" + out + "\",\"nbytes\":64}";
    nodes += std::string(nodes.empty() ? "" : ",") + "{\"op\":\"call\",\"kind\":\"call\",\"inputs\":[\"" +
             in + "\"],\"outputs\":[\"" + out + "\"],\"subgraphs\":[\"body\"]}";
  }
  tensors += ",{\"name\":\"b.x\",\"nbytes\":64},{\"name\":\"b.y\",\"nbytes\":64}";
  return "{\"format\":\"memplan-graph\",\"version\":1,\"name\":\"shared\",\"tensors\":[" + tensors +
         "],\"graphs\":[{\"name\":\"main\",\"inputs\":[\"t0\"],\"outputs\":[\"t" + std::to_string(callers) +
         "\"],\"nodes\":[" + nodes +
         "]},{\"name\":\"body\",\"parent\":\"main\",\"inputs\":[\"b.x\"],\"outputs\":[\"b.y\"],"
         "\"nodes\":[{\"op\":\"relu\",\"inputs\":[\"b.x\"],\"outputs\":[\"b.y\"]}]}]}";
}

TEST(HostileInputs, ControlFlowRunningBodiesExponentiallyOftenStaysPolynomial) {
  const fs::path dir = test::tempDir("hostile-control-flow");
  const fs::path dag = dir / "dag40.json", shared = dir / "shared.json";
  std::ofstream(dag) << controlFlowDag(40);
  std::ofstream(shared) << sharedBody(20000);
  EXPECT_LT(fs::file_size(dag), 16000u);  // the 12 KB file
  for (const fs::path& model : {dag, shared}) {
    SCOPED_TRACE(model.string());
    const fs::path plan = dir / (model.stem().string() + ".plan.json");
    const test::CliResult planned = test::runCli("plan -q " + model.string() + " -o " + plan.string());
    ASSERT_EQ(planned.exit_code, 0) << planned.err;
    const test::CliResult verified = test::runCli("verify " + model.string() + " " + plan.string());
    EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
    const test::CliResult replayed = test::runCli("replay " + model.string() + " " + plan.string());
    EXPECT_EQ(replayed.exit_code, 0) << replayed.out << replayed.err;
    const test::CliResult reported =
        test::runCli("report " + model.string() + " " + plan.string() + " --html " + (dir / "v.html").string());
    EXPECT_EQ(reported.exit_code, 0) << reported.err;
  }
  // The replay counts what a runtime runs: 2^42 - 2 node runs for the DAG
  // (steps(d) = 2 + 2 steps(d + 1)), one per call and body node for the
  // shared body.
  EXPECT_NE(test::runCli("replay " + dag.string() + " " + (dir / "dag40.plan.json").string())
                .out.find("checked over 4398046511102 steps"),
            std::string::npos);
  EXPECT_NE(test::runCli("replay " + shared.string() + " " + (dir / "shared.plan.json").string())
                .out.find("checked over 40000 steps"),
            std::string::npos);
}

}  // namespace
}  // namespace memplan

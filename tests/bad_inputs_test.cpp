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

}  // namespace
}  // namespace memplan

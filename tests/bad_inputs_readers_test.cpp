// Readers bounded and honest (issue 27): JSON documents that cost far more
// memory than their size, streams that never end, plan files whose pools
// disagree with their allocations, and messages that did not say where.
// Each test runs the CLI and asserts the exit code and the one-line message;
// the large inputs are written here at run time, and where memory is the
// point the child's peak RSS (wait4) is held to a budget.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <functional>

#include "support/test_support.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;
using test::runCli;

fs::path data(const std::string& name) { return test::sourceDir() / "tests" / "data" / "hostile-readers" / name; }
fs::path tiny() { return test::sourceDir() / "examples" / "graphs" / "tiny.json"; }
std::string quote(const fs::path& p) { return "'" + p.string() + "'"; }

void writeText(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary).write(text.data(), static_cast<std::streamsize>(text.size()));
}

// Sanitizers' shadow memory and quarantine multiply what a run takes.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kRssScale = 4;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr std::size_t kRssScale = 4;
#else
constexpr std::size_t kRssScale = 1;
#endif
#else
constexpr std::size_t kRssScale = 1;
#endif

struct Measured {
  test::CliResult cli;
  std::size_t peak_rss_bytes = 0;
};

// Runs `[PIPE_FROM] memplan ARGS` through the shell, as runCli does, and also
// returns the peak RSS of the run (the shell's and its children's, which it
// waits for).
Measured runMeasured(const std::string& args, const std::string& pipe_from = "") {
  static int counter = 0;
  const fs::path dir = test::tempDir("readers" + std::to_string(counter++));
  const std::string cmd = pipe_from + std::string(MEMPLAN_CLI) + " " + args + " >" + (dir / "out").string() + " 2>" +
                          (dir / "err").string();
  Measured m;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  struct rusage ru {};
  ::wait4(pid, &status, 0, &ru);
  m.cli.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  m.cli.out = test::readText(dir / "out");
  m.cli.err = test::readText(dir / "err");
  m.peak_rss_bytes = static_cast<std::size_t>(ru.ru_maxrss) * 1024;
  fs::remove_all(dir);
  return m;
}

// `{"format":...,"x":[{},{},...]}`: `bytes` of empty objects under `key`.
std::string padded(const std::string& head, const std::string& key, std::size_t bytes) {
  std::string s = head + ",\"" + key + "\":[";
  s.reserve(s.size() + bytes + 4);
  while (s.size() < bytes) s += "{},";
  s += "{}]}";
  return s;
}

constexpr std::size_t kMiB = std::size_t{1} << 20;

// ---- reproducer 04: JSON trees ~36 bytes a byte ----

TEST(HostileReaders, UnknownTopLevelKeyIsRefusedBeforeItsValueIsBuilt) {
  const fs::path dir = test::tempDir("readers-unknown");
  const std::size_t size = 32 * kMiB;
  const fs::path graph = dir / "g.json";
  writeText(graph, padded(R"({"format":"memplan-graph","version":1)", "x", size));
  const fs::path plan = dir / "p.json";
  writeText(plan, padded(R"({"format":"memplan-plan","version":4)", "x", size));
  const fs::path specs = dir / "s.json";
  writeText(specs, padded(R"({"name":"s","specs":[])", "x", size));
  const std::pair<std::string, std::string> runs[] = {
      {"plan -q " + quote(graph), graph.string() + ": unknown field 'x'"},
      {"verify " + quote(tiny()) + " " + quote(plan), plan.string() + ": unknown field 'x'"},
      {"plan -q " + quote(specs), specs.string() + ": top level: unknown field 'x'"},
  };
  for (const auto& [args, message] : runs) {
    SCOPED_TRACE(args);
    const Measured m = runMeasured(args);
    EXPECT_EQ(m.cli.exit_code, 2);
    EXPECT_EQ(m.cli.err, "memplan: " + message + "\n");
    // The file and little else (the tree of the objects was ~36 bytes a byte).
    EXPECT_LT(m.peak_rss_bytes, kRssScale * (size + 64 * kMiB)) << m.peak_rss_bytes;
  }
}

TEST(HostileReaders, DenseTinyValuesAreRefusedWithinTheTreeBudget) {
  const fs::path dir = test::tempDir("readers-dense");
  // Small enough that the budget, not the count limits, refuses them.
  const std::size_t size = 8 * kMiB;
  // Known keys, values of the library's most costly kind per byte.
  const fs::path specs = dir / "s.json";
  writeText(specs, padded(R"({"name":"s")", "specs", size));
  const fs::path plan = dir / "p.json";
  writeText(plan, padded(R"({"format":"memplan-plan","version":4)", "allocations", size));
  const fs::path graph = dir / "g.json";
  writeText(graph, R"({"format":"memplan-graph","version":1,"name":)" +
                       padded(R"({"bytes":"x")", "y", size) + "}");
  for (const fs::path& p : {specs, plan, graph}) {
    const std::string args = p == plan ? "verify " + quote(tiny()) + " " + quote(p) : "plan -q " + quote(p);
    SCOPED_TRACE(args);
    const Measured m = runMeasured(args);
    EXPECT_EQ(m.cli.exit_code, 2);
    EXPECT_EQ(std::count(m.cli.err.begin(), m.cli.err.end(), '\n'), 1) << m.cli.err;
    EXPECT_EQ(m.cli.err.rfind("memplan: " + p.string() + ":1:", 0), 0u) << m.cli.err;
    EXPECT_NE(m.cli.err.find(": values too small and dense: the JSON tree would pass "), std::string::npos)
        << m.cli.err;
    // The file, plus at most 16 bytes of tree a byte of it (it was ~36).
    EXPECT_LT(m.peak_rss_bytes, kRssScale * (18 * size + 32 * kMiB)) << m.peak_rss_bytes;
  }
}

TEST(HostileReaders, ArraysPastTheirLimitAreRefusedWhileParsing) {
  const fs::path dir = test::tempDir("readers-limit");
  std::string sizes;
  for (int i = 0; i < 4098; ++i) sizes += i ? ",0" : "0";
  const fs::path specs = dir / "s.json";
  writeText(specs, R"({"input_mem_buffer_sizes":[)" + sizes + R"(],"specs":[]})");
  const auto r = runCli("plan -q " + quote(specs));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "memplan: " + specs.string() + ": input_mem_buffer_sizes: more than 4097 entries, above the limit\n");
}

// ---- reproducer 06: streams read to the 4 GiB cap ----

TEST(HostileReaders, StreamsAreRefusedQuicklyWithBoundedMemory) {
  const std::string zero =
      "/dev/zero: byte 0: starts with a zero byte, which no input memplan reads does (JSON, CSV, "
      "TFLite, ExecuTorch or ONNX)";
  for (const std::string& args : {std::string("plan /dev/zero"), "verify " + quote(tiny()) + " /dev/zero"}) {
    SCOPED_TRACE(args);
    const Measured m = runMeasured(args);
    EXPECT_EQ(m.cli.exit_code, 2);
    EXPECT_EQ(m.cli.err, "memplan: " + zero + "\n");
    EXPECT_LT(m.peak_rss_bytes, kRssScale * 100 * kMiB) << m.peak_rss_bytes;
  }
  const Measured in = runMeasured("plan /dev/stdin < /dev/zero");
  EXPECT_EQ(in.cli.exit_code, 2);
  EXPECT_EQ(in.cli.err, "memplan: /dev/stdin: byte 0: starts with a zero byte, which no input memplan reads "
                        "does (JSON, CSV, TFLite, ExecuTorch or ONNX)\n");
  // A stream of text: read to the streams' cap, 256 MiB, and no further.
  const Measured m = runMeasured("plan /dev/stdin", "yes | ");
  EXPECT_EQ(m.cli.exit_code, 2);
  EXPECT_EQ(m.cli.err, "memplan: /dev/stdin: stream (not a regular file) is above the limit of 268435456 bytes\n");
  EXPECT_LT(m.peak_rss_bytes, kRssScale * 320 * kMiB) << m.peak_rss_bytes;
}

// ---- reproducer 07: pools that are not the plan's ----

// `memplan plan tiny.json -o` with `edit` applied to the file.
fs::path editedPlan(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit) {
  const fs::path p = dir / "p.json";
  const auto r = runCli("plan -q " + quote(tiny()) + " -o " + quote(p));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(test::readText(p));
  edit(j);
  writeText(p, j.dump());
  return p;
}

TEST(HostileReaders, PlanPoolsThatDisagreeWithTheAllocationsAreRefused) {
  const fs::path lie = data("lie_pools.json");
  for (const char* command : {"verify", "report", "replay"}) {
    SCOPED_TRACE(command);
    const auto r = runCli(std::string(command) + " " + quote(tiny()) + " " + quote(lie));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "memplan: " + lie.string() + ": graphs[0].steps: expected a non-negative integer, got a string\n");
  }
  const fs::path dir = test::tempDir("readers-pools");
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string message;
  };
  const Case cases[] = {
      {[](nlohmann::json& j) { j["graphs"][0]["pools"][0]["size"] = 1; },
       "graphs[0].pools[0].size: 1 differs from bufsizes[1] = 48"},
      {[](nlohmann::json& j) { j["graphs"][0]["pools"].push_back(j["graphs"][0]["pools"][0]); },
       "graphs[0].pools[1].mem_id: pool 1 is listed twice"},
      {[](nlohmann::json& j) { j["graphs"][0]["pools"][0]["device"] = "cuda:0"; },
       "graphs[0].pools[0].device: cuda:0 differs from pool_devices[1] = cpu:0"},
      {[](nlohmann::json& j) { j["graphs"][0]["pools"][0]["reserved"] = 49; },
       "graphs[0].pools[0].reserved: 49 is above the pool's size 48"},
      {[](nlohmann::json& j) { j["graphs"][0]["steps"] = 7; }, "graphs[0].steps: 7 differs from the input's 6 steps"},
      {[](nlohmann::json& j) { j["graphs"][0]["steps"] = 6.5; },
       "graphs[0].steps: expected a non-negative integer, got a number 6.5"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    const fs::path p = editedPlan(dir, c.edit);
    for (const char* command : {"verify", "report"}) {
      const auto r = runCli(std::string(command) + " " + quote(tiny()) + " " + quote(p));
      EXPECT_EQ(r.exit_code, 2);
      EXPECT_EQ(r.err, "memplan: " + p.string() + ": " + c.message + "\n");
    }
  }
}

// ---- reproducer 14, items 1, 2, 3 and 5 ----

TEST(HostileReaders, PlanningFailuresNameTheFileAndTheRow) {
  const fs::path csv = data("bigtime.csv");
  const auto r = runCli("plan -q " + quote(csv));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "memplan: " + csv.string() + ": row 1: pool exceeds 4611686018427387904 bytes placing 'a'\n");
  const auto naive = runCli("plan -q -a naive " + quote(csv));
  EXPECT_EQ(naive.exit_code, 2);
  EXPECT_EQ(naive.err, "memplan: " + csv.string() + ": pool 1: size exceeds 4611686018427387904 bytes\n");
}

TEST(HostileReaders, AHeaderOnlySolutionIsSaidToHaveNoRows) {
  const fs::path list = test::sourceDir() / "tests" / "data" / "minimalloc-challenging" / "example.12.csv";
  const fs::path solution = data("hdr_only_solution.csv");
  const auto r = runCli("verify " + quote(list) + " " + quote(solution));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "memplan: " + solution.string() + ": rows do not match " + list.string() +
                       ": 0 rows for its 5 buffers (one row a buffer)\n");
  // Without the column it says so.
  const fs::path dir = test::tempDir("readers-solution");
  writeText(dir / "s.csv", "id,lower,upper,size\n");
  const auto none = runCli("verify " + quote(list) + " " + quote(dir / "s.csv"));
  EXPECT_EQ(none.err, "memplan: " + (dir / "s.csv").string() + ": no 'offset' column\n");
}

TEST(HostileReaders, JsonNumberErrorsSayWhere) {
  const fs::path dir = test::tempDir("readers-numbers");
  const std::pair<std::string, std::string> numbers[] = {{"1e400", "1e400"}, {std::string(5000, '9'), ""}};
  for (const auto& [number, shown] : numbers) {
    const fs::path p = editedPlan(dir, [](nlohmann::json&) {});
    std::string text = test::readText(p);
    const std::string key = "\"seed\":";
    const std::size_t at = text.find(key) + key.size();
    text.replace(at, text.find_first_of(",}", at) - at, "\n  " + number);
    writeText(p, text);
    const std::size_t line = 2;
    const auto r = runCli("verify " + quote(tiny()) + " " + quote(p));
    EXPECT_EQ(r.exit_code, 2);
    const std::string head = "memplan: " + p.string() + ":" + std::to_string(line) + ":3: JSON error: number overflow parsing '";
    EXPECT_EQ(r.err.rfind(head, 0), 0u) << r.err;
    if (!shown.empty()) {
      EXPECT_EQ(r.err, head + shown + "'\n");
    }
  }
}

TEST(HostileReaders, ConstantsPoolAndEmptyDigestAreNotAccepted) {
  const fs::path dir = test::tempDir("readers-digest");
  const fs::path p = editedPlan(dir, [](nlohmann::json& j) {
    j["bufsizes"][0] = 5;
    j["graphs"][0]["bufsizes"][0] = 5;
  });
  auto r = runCli("verify " + quote(tiny()) + " " + quote(p));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "memplan: " + p.string() +
                       ": graphs[0].bufsizes[0]: 5: mem_id 0 holds constants, which are not planned (always 0)\n");
  const fs::path q = editedPlan(dir, [](nlohmann::json& j) { j["source"]["sha256"] = ""; });
  r = runCli("verify " + quote(tiny()) + " " + quote(q));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "memplan: " + q.string() + ": source.sha256: empty: the plan records no digest of what it was "
                       "made from, so it cannot be matched to " + tiny().string() + " (--force checks it anyway)\n");
  r = runCli("verify --force " + quote(tiny()) + " " + quote(q));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const fs::path bad = editedPlan(dir, [](nlohmann::json& j) { j["source"]["sha256"] = "abc"; });
  r = runCli("verify --force " + quote(tiny()) + " " + quote(bad));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "memplan: " + bad.string() + ": source.sha256: expected 64 lower-case hex digits\n");
}

}  // namespace
}  // namespace memplan

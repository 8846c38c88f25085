// Helpers shared by the tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace memplan::test {

std::filesystem::path dataDir();     // tests/data: data committed with the tests
std::filesystem::path modelsDir();   // example models fetched by scripts/fetch-models
std::filesystem::path sourceDir();
// True when MEMPLAN_REQUIRE_TEST_DATA is set to anything but "" or "0"
// (scripts/test.sh and CI set it to 1; conftest.py and tests/browser/run.sh
// read it the same way): then data that setup fetches (example models,
// Debian's ONNX test data) must be present, and its absence fails the test
// instead of skipping it.
bool dataRequired();
std::string readText(const std::filesystem::path& path);
// A fresh empty directory for one test's files.
std::filesystem::path tempDir(const std::string& name);

// The "expected" block of an ExecuTorch conformance case (the plan
// ExecuTorch's own code produced); nullopt when the case has none.
struct ExpectedPlan {
  std::vector<std::uint64_t> bufsizes;
  struct Allocation {
    std::int64_t id;
    std::int32_t mem_id;
    std::int32_t mem_obj_id;
    std::uint64_t offset;
  };
  std::vector<Allocation> allocations;
};
std::optional<ExpectedPlan> readExpectedPlan(const std::string& case_json);

struct CliResult {
  int exit_code = -1;
  std::string out;                   // stdout
  std::string err;                   // stderr
};
// Runs build/memplan with `args` (shell-quoted by the caller).
CliResult runCli(const std::string& args);

}  // namespace memplan::test

// In a test body: the fetched data this test needs is missing. Skips with
// the streamed message locally; fails when dataRequired().
#define MEMPLAN_MISSING_DATA() MEMPLAN_CANNOT_RUN("test data missing (scripts/fetch-models.sh)")

// In a test body: the test cannot run here (`why`, plus the streamed
// message). Skips locally; fails when dataRequired(), where every test must
// run.
#define MEMPLAN_CANNOT_RUN(why)                                                   \
  return ::testing::internal::AssertHelper(                                       \
             ::memplan::test::dataRequired() ? ::testing::TestPartResult::kFatalFailure \
                                             : ::testing::TestPartResult::kSkip,  \
             __FILE__, __LINE__, why) = ::testing::Message()

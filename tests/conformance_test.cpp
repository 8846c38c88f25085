// ExecuTorch conformance: every case in conformance/executorch must give
// exactly ExecuTorch's bufsizes and, per spec, mem_id / mem_obj_id / offset.
#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "memplan/io.h"
#include "memplan/plan.h"
#include "support/test_support.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> caseFiles() {
  std::vector<fs::path> files;
  const fs::path dir = test::dataDir() / "executorch-conformance";
  if (!fs::is_directory(dir)) return files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Empty string when the case matches, else what differs (first few).
std::string runCase(const fs::path& file) {
  const std::string text = test::readText(file);
  const SpecList c = readSpecListJson(text, file.filename().string());
  const auto expected = test::readExpectedPlan(text);
  if (!expected) return "case has no expected result";
  PlanRequest request;
  request.algorithm = c.algorithm;
  request.options.alignment = c.alignment;
  request.extra_padding = c.extra_padding;
  const GraphPlan plan = planSpecs(c.specs, request, c.input_mem_buffer_sizes);

  std::ostringstream diff;
  auto join = [](const std::vector<Bytes>& v) {
    std::string s;
    for (Bytes b : v) {
      if (!s.empty()) s += ',';
      s += std::to_string(b);
    }
    return "[" + s + "]";
  };
  if (plan.bufsizes != expected->bufsizes)
    diff << "bufsizes " << join(plan.bufsizes) << " != expected " << join(expected->bufsizes) << "; ";
  std::map<std::int64_t, SpecId> by_id;
  for (SpecId i = 0; i < static_cast<SpecId>(c.ids.size()); ++i) by_id[c.ids[i]] = i;
  int shown = 0;
  if (expected->allocations.size() != plan.allocations.size())
    diff << plan.allocations.size() << " allocations, expected " << expected->allocations.size() << "; ";
  for (const auto& e : expected->allocations) {
    const Allocation* a = plan.find(by_id.at(e.id));
    if (!a) {
      diff << "id " << e.id << " not allocated; ";
      continue;
    }
    if (a->mem_id != e.mem_id || a->mem_obj_id != e.mem_obj_id || a->offset != e.offset) {
      if (shown++ < 4)
        diff << "id " << e.id << ": (" << a->mem_id << "," << a->mem_obj_id << "," << a->offset
             << ") != expected (" << e.mem_id << "," << e.mem_obj_id << "," << e.offset << "); ";
    }
  }
  return diff.str();
}

TEST(Conformance, AllExecutorchCasesMatchExactly) {
  const auto files = caseFiles();
  ASSERT_GE(files.size(), 300u) << "conformance cases missing from " << test::dataDir().string();
  std::size_t passed = 0;
  std::map<std::string, std::pair<int, int>> by_algo;  // algorithm -> (passed, total)
  for (const fs::path& f : files) {
    const std::string name = f.filename().string();
    const std::string algo = name.substr(0, name.find('-'));
    std::string diff;
    try {
      diff = runCase(f);
    } catch (const std::exception& e) {
      diff = std::string("threw: ") + e.what();
    }
    by_algo[algo].second++;
    if (diff.empty()) {
      ++passed;
      by_algo[algo].first++;
    } else {
      ADD_FAILURE() << name << ": " << diff;
    }
  }
  std::cout << "[ conformance ] " << passed << " / " << files.size() << " ExecuTorch cases match";
  for (const auto& [algo, counts] : by_algo)
    std::cout << "; " << algo << " " << counts.first << "/" << counts.second;
  std::cout << "\n";
  EXPECT_EQ(passed, files.size());
  EXPECT_GE(files.size(), 300u);
}

// The three algorithms are each exercised by the cases (a renamed or
// emptied folder would otherwise pass vacuously).
TEST(Conformance, CasesCoverEveryAlgorithm) {
  const auto files = caseFiles();
  ASSERT_GE(files.size(), 300u) << "conformance cases missing from " << test::dataDir().string();
  std::map<std::string, int> count;
  for (const fs::path& f : files)
    count[readSpecListJson(test::readText(f), f.filename().string()).algorithm]++;
  EXPECT_GT(count["greedy"], 0);
  EXPECT_GT(count["greedy_no_overlap"], 0);
  EXPECT_GT(count["naive"], 0);
}

}  // namespace
}  // namespace memplan

// ExecuTorch conformance: every case in tests/data/executorch-conformance
// must give exactly ExecuTorch's bufsizes and, per spec, mem_id /
// mem_obj_id / offset; every case in executorch-conformance-devices
// (per-device planning, rules in its README) also ExecuTorch's
// non_const_buffer_device, or its refusal.
#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "memplan/io.h"
#include "memplan/memplan.h"
#include "memplan/plan.h"
#include "support/test_support.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> caseFiles(const char* folder = "executorch-conformance") {
  std::vector<fs::path> files;
  const fs::path dir = test::dataDir() / folder;
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

// ---- per-device planning ----

// Empty string when the device case matches, else what differs. Planned
// through the library entry point, which takes per_device from the case.
std::string runDeviceCase(const fs::path& file) {
  const std::string text = test::readText(file);
  const nlohmann::json expected = nlohmann::json::parse(text).at("expected");
  const Input in = readInput(file);
  if (expected.contains("error")) {
    try {
      plan(in, {});
    } catch (const InputError& e) {
      // Names the field (the CLI says --per-device) and the preset pool.
      const std::string what = e.what();
      if (what.rfind("PlanRequest.options.per_device: ", 0) != 0 ||
          what.find("preset pool") == std::string::npos)
        return "refused, but with: " + what;
      return "";
    }
    return "planned, but ExecuTorch raises " + expected["error"].get<std::string>();
  }
  const Plan p = plan(in, {});
  const GraphPlan& g = p.main();
  std::ostringstream diff;
  if (g.bufsizes != expected.at("bufsizes").get<std::vector<Bytes>>())
    diff << "bufsizes " << nlohmann::json(g.bufsizes).dump() << " != expected "
         << expected["bufsizes"].dump() << "; ";
  std::map<std::int64_t, SpecId> by_id;
  for (SpecId i = 0; i < static_cast<SpecId>(in.specList()->ids.size()); ++i) by_id[in.specList()->ids[i]] = i;
  if (g.allocations.size() != expected.at("allocations").size())
    diff << g.allocations.size() << " allocations, expected " << expected["allocations"].size() << "; ";
  for (const auto& e : expected["allocations"]) {
    const Allocation* a = g.find(by_id.at(e.at("id").get<std::int64_t>()));
    if (!a || a->mem_id != e.at("mem_id").get<MemId>() || a->mem_obj_id != e.at("mem_obj_id").get<int>() ||
        a->offset != e.at("mem_offset").get<Offset>())
      diff << "id " << e["id"] << ": "
           << (a ? fmt::format("({},{},{})", a->mem_id, a->mem_obj_id, a->offset) : std::string("none"))
           << " != expected (" << e["mem_id"] << "," << e["mem_obj_id"] << "," << e["mem_offset"] << "); ";
  }
  nlohmann::json devices = nlohmann::json::array();
  for (const BufferDevice& d : nonConstBufferDevice(g))
    devices.push_back({{"buffer_idx", d.buffer_idx}, {"device_type", d.device.type},
                       {"device_index", d.device.index}});
  const nlohmann::json want = expected.value("non_const_buffer_device", nlohmann::json::array());
  if (devices != want)
    diff << "non_const_buffer_device " << devices.dump() << " != expected " << want.dump() << "; ";
  // The plan file carries the device map exactly when ExecuTorch's does.
  const nlohmann::json written_plan = nlohmann::json::parse(writePlan(p, in));
  const bool written = written_plan["graphs"][0].contains("non_const_buffer_device");
  if (written != expected.contains("non_const_buffer_device"))
    diff << "plan JSON " << (written ? "has" : "lacks") << " non_const_buffer_device; ";
  if (const VerifyResult v = verify(in, p); !v.ok()) diff << "verifier: " << v.violations[0].message;
  return diff.str();
}

TEST(ConformanceDevices, EveryCaseMatchesExecutorchRules) {
  const auto files = caseFiles("executorch-conformance-devices");
  ASSERT_GE(files.size(), 17u) << "device cases missing from " << test::dataDir().string();
  std::size_t passed = 0;
  for (const fs::path& f : files) {
    std::string diff;
    try {
      diff = runDeviceCase(f);
    } catch (const std::exception& e) {
      diff = std::string("threw: ") + e.what();
    }
    if (diff.empty()) ++passed;
    else ADD_FAILURE() << f.filename().string() << ": " << diff;
  }
  std::cout << "[ conformance ] " << passed << " / " << files.size() << " per-device cases match\n";
  EXPECT_EQ(passed, files.size());
}

// The three ExecuTorch tests the rules come from are mirrored, and the
// refusal names the first preset spec and the first non-CPU spec.
TEST(ConformanceDevices, CasesMirrorExecutorchTests) {
  const fs::path dir = test::dataDir() / "executorch-conformance-devices";
  for (const char* name : {"all-cuda-no-wasted-slots", "mixed-cpu-cuda-separate-buffers",
                           "custom-pool-with-device-planning-raises"})
    EXPECT_TRUE(fs::exists(dir / (std::string(name) + ".json"))) << name;
  std::string error = "no error";
  try {
    plan(readInput(dir / "custom-pool-with-device-planning-raises.json"), {});
  } catch (const InputError& e) {
    error = e.what();
  }
  EXPECT_EQ(error,
            "PlanRequest.options.per_device: 'id 0' has a preset pool (mem_id 3) and 'id 2' is on "
            "cuda:0; preset pools cannot be combined with per-device planning (ExecuTorch raises "
            "NotImplementedError)");
  // All CUDA: [0, X], not [0, 0, X].
  const Plan all_cuda = plan(readInput(dir / "all-cuda-no-wasted-slots.json"), {});
  EXPECT_EQ(all_cuda.main().bufsizes, (std::vector<Bytes>{0, 96}));
}

}  // namespace
}  // namespace memplan

#include "support/test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace memplan::test {

std::filesystem::path dataDir() { return std::filesystem::path(MEMPLAN_SOURCE_DIR) / "tests" / "data"; }
std::filesystem::path modelsDir() { return MEMPLAN_MODELS_DIR; }
std::filesystem::path sourceDir() { return MEMPLAN_SOURCE_DIR; }
bool dataRequired() {
  const char* v = std::getenv("MEMPLAN_REQUIRE_TEST_DATA");
  return v && std::string(v) != "0" && *v;
}

std::string readText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::filesystem::path tempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("memplan-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::optional<ExpectedPlan> readExpectedPlan(const std::string& case_json) {
  const nlohmann::json doc = nlohmann::json::parse(case_json);
  if (!doc.contains("expected") || doc["expected"].is_null()) return std::nullopt;
  const nlohmann::json& e = doc["expected"];
  ExpectedPlan plan;
  plan.bufsizes = e.at("bufsizes").get<std::vector<std::uint64_t>>();
  for (const nlohmann::json& a : e.at("allocations"))
    plan.allocations.push_back({a.at("id").get<std::int64_t>(), a.at("mem_id").get<std::int32_t>(),
                                a.at("mem_obj_id").get<std::int32_t>(),
                                a.at("mem_offset").get<std::uint64_t>()});
  return plan;
}

CliResult runCli(const std::string& args) {
  static int counter = 0;
  auto dir = tempDir("cli" + std::to_string(counter++));
  auto out_path = dir / "stdout";
  auto err_path = dir / "stderr";
  std::string cmd = std::string(MEMPLAN_CLI) + " " + args + " >" + out_path.string() +
                    " 2>" + err_path.string() + " </dev/null";
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = readText(out_path);
  r.err = readText(err_path);
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace memplan::test

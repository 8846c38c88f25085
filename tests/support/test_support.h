// Helpers shared by the tests.
#pragma once

#include <filesystem>
#include <string>

namespace memplan::test {

std::filesystem::path sharedDir();   // ../shared beside the checkout
std::filesystem::path modelsDir();   // example models fetched by scripts/fetch-models
std::filesystem::path sourceDir();
std::string readText(const std::filesystem::path& path);
// A fresh empty directory for one test's files.
std::filesystem::path tempDir(const std::string& name);

struct CliResult {
  int exit_code = -1;
  std::string out;                   // stdout
  std::string err;                   // stderr
};
// Runs build/memplan with `args` (shell-quoted by the caller).
CliResult runCli(const std::string& args);

}  // namespace memplan::test

// The memplan command line: a thin shell over the library (memplan/memplan.h).
// It parses flags, calls the library and prints; it holds no planning logic.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "memplan/memplan.h"

namespace CLI {
class App;
}

namespace memplan::cli {

// Exit codes (also in the README).
inline constexpr int kExitOk = 0;
inline constexpr int kExitVerifyFailed = 1;
inline constexpr int kExitBadInput = 2;

// What a user can say about how to read an input file.
struct InputFlags {
  std::vector<std::string> input_shapes;  // NAME=1x3x224x224
  std::vector<std::string> dims;          // SYMBOL=VALUE
  bool alias_views = false, no_alias_views = false;
  std::string unknown_size_bytes;         // byte size, "" = unset
  // The options the flags give, on top of `base` (what a plan file
  // recorded, for verify and replay): a flag given replaces its field.
  ImportOptions toImportOptions(const ImportOptions& base = {}) const;
  void addTo(CLI::App& app);
};

// What a user can say about how to plan.
struct PlanFlags {
  std::string algorithm;                  // "" = the input's default
  std::string alignment;                  // "" = the input's default
  std::string extra_padding;
  bool no_plan_inputs = false, no_plan_outputs = false, no_plan_mutable = false;
  bool per_device = false;
  double effort = 1.0;
  double time_limit = 0;
  std::vector<std::string> capacities;    // MEM_ID=BYTES
  std::vector<MemId> spill_order;
  PlanRequest toRequest() const;
  void addTo(CLI::App& app);
};

// Library errors name request fields ("PlanRequest.options.alignment: ...");
// the CLI says which flag that was ("--alignment: ...").
std::string inFlagTerms(const std::string& message);

// Prints verifier warnings to stderr: the first one and how many more.
void printWarnings(const std::vector<std::string>& warnings);

// "256KiB", "1MiB", "4096" -> bytes; throws InputError naming `what`.
Bytes parseBytes(const std::string& text, const std::string& what);

// A subcommand and what running it does (returns the exit code).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};
Command addPlanCommand(CLI::App& app);
Command addVerifyCommand(CLI::App& app);
Command addReplayCommand(CLI::App& app);
Command addImportCommand(CLI::App& app);
Command addAlgorithmsCommand(CLI::App& app);
Command addReportCommand(CLI::App& app);

// ExecuTorch programs (cmd_pte.cpp).
// Per method and pool: the file's arena, the plan's, the lower bound.
std::string pteSummary(const PteProgram& program, const Plan& plan);
// The plan a .pte carries, as a plan of `input`.
Plan embeddedPlanOf(const Input& input);
// A verifier violation as a line: a program's names the method already.
std::string violationLine(const Input& input, const Violation& v);
// The method named `name`; "" = the only one (an error when there are several).
GraphId pteMethodIndex(const PteProgram& program, const std::string& name);
// `plan --write-pte OUT`: the program with the plan, written atomically.
void writePteOutput(const Input& input, const Plan& plan, const std::string& path);

}  // namespace memplan::cli

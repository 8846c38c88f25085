// Shared pieces of the memplan command line.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "memplan/import.h"
#include "memplan/io.h"
#include "memplan/plan.h"
#include "memplan/pte.h"

namespace memplan::cli {

// Exit codes (also in the README).
inline constexpr int kExitOk = 0;
inline constexpr int kExitVerifyFailed = 1;
inline constexpr int kExitBadInput = 2;

// What a user can say about how to read an input file.
struct InputFlags {
  std::vector<std::string> input_shapes;  // NAME=1x3x224x224
  std::vector<std::string> dims;          // SYMBOL=VALUE
  bool alias_views = false;
  std::string unknown_size_bytes;         // byte size, "" = unset
  ImportOptions toImportOptions() const;
  void addTo(CLI::App& app);
};

// What a user can say about how to plan.
struct PlanFlags {
  std::string algorithm;                  // "" = default (auto; case's for spec lists)
  std::string alignment;                  // "" = default (16; 1 for CSV)
  std::string extra_padding;
  bool no_plan_inputs = false, no_plan_outputs = false, no_plan_mutable = false;
  bool per_device = false;
  double effort = 1.0;
  double time_limit = 0;
  std::vector<std::string> capacities;    // MEM_ID=BYTES
  std::vector<MemId> spill_order;
  void addTo(CLI::App& app);
};

// One input file, read by the reader its extension and content call for.
struct LoadedInput {
  std::string path;
  InputKind kind = InputKind::GraphJson;
  std::optional<Model> model;             // graph JSON, ONNX, TFLite
  std::optional<SpecListCase> spec_list;  // ExecuTorch spec list
  std::optional<BufferList> buffers;      // MiniMalloc CSV
  std::shared_ptr<const PteProgram> pte;  // ExecuTorch program (model = its methods)
};

LoadedInput loadInput(const std::string& path, const ImportOptions& options);

// Plans any kind of input; `progress` may be empty.
Plan planInput(const LoadedInput& input, const PlanFlags& flags, bool with_progress);

// The specs a plan file must cover, for `verify` and `replay` (a plan whose
// graphs hold specs but no allocations).
Plan skeletonPlan(const LoadedInput& input, const PlanOptions& options);

// Prints verifier warnings to stderr: the first one and how many more.
void printWarnings(const std::vector<std::string>& warnings);

// A MiniMalloc CSV solution (rows with an offset column) as a plan of the
// CSV buffer list `in`, for `verify` and `replay`.
Plan planFromCsvSolution(const LoadedInput& in, const std::string& text, const std::string& path);

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
// Per method: the file's arena, the plan's and the lower bound, one line each.
std::string pteSummary(const PteProgram& program, const Plan& plan);
// A verifier violation as a line: the method is named for programs.
std::string violationLine(const LoadedInput& input, const Violation& v);
// The method named `name`; "" = the only one (an error when there are several).
GraphId pteMethodIndex(const PteProgram& program, const std::string& name);
// `plan --write-pte OUT`: writes the program with the plan (atomically).
void writePteOutput(const LoadedInput& input, const Plan& plan, const std::string& path);

}  // namespace memplan::cli

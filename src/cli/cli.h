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
inline constexpr int kExitDoesNotFit = 3;   // a capacity cannot be met (CapacityError)

// What a user can say about how to read an input file.
struct InputFlags {
  std::vector<std::string> input_shapes;  // NAME=1x3x224x224
  std::vector<std::string> dims;          // SYMBOL=VALUE
  bool alias_views = false, no_alias_views = false;
  std::string unknown_size_bytes;         // byte size, "" = unset
  bool ignore_offline_plan = false;       // TFLite: plan afresh
  // The options the flags give, on top of `base` (what a plan file
  // recorded, for verify and replay): a flag given replaces its field.
  ImportOptions toImportOptions(const ImportOptions& base = {}) const;
  void addTo(CLI::App& app);
  // Throws InputError when a flag given does not apply to this format of
  // input (--input-shape on a TFLite model, --dim on a CSV, ...).
  void checkApplies(const InputFormat& format, const std::string& path) const;
  // Reads `path` with these flags on top of `base`, after checkApplies.
  Input read(const std::string& path, const ImportOptions& base = {}) const;
};

// What planning a model left to the runtime or guessed, as warnings: tensors
// sized by --unknown-size-bytes, tensors left unplanned (strings,
// sequences, unbound shapes). Each says how many and names the first few.
std::vector<std::string> inputWarnings(const Input& input);

// Refuses an output path whose extension memplan cannot write: `allowed`
// like {".json", ".csv"}; `flag` names it in the message.
void checkOutputExtension(const std::string& path, const std::vector<std::string>& allowed,
                          const std::string& flag);

// What a user can say about how to plan.
struct PlanFlags {
  std::string algorithm;                  // "" = the input's default
  std::string alignment;                  // "" = the input's default
  std::string extra_padding;
  bool no_plan_inputs = false, no_plan_outputs = false, no_plan_mutable = false;
  bool per_device = false;
  bool share_mutable_buffers = false;
  double effort = 1.0;
  double time_limit = 0;
  std::vector<std::string> capacities;    // MEM_ID=BYTES
  std::vector<MemId> spill_order;
  bool allow_pinned_overlap = false;
  bool reorder = false, reorder_report = false;
  PlanRequest toRequest() const;
  void addTo(CLI::App& app);
};

// Plans for runtimes (runtime_exports.cpp).
struct RuntimeFlags {
  std::string emit_c, c_prefix, write_tflite;
  void addTo(CLI::App& app);
};
void writeRuntimeExports(const RuntimeFlags& flags, const Input& in, const Plan& plan);
// One line: TFLite Micro's own arena for a .tflite input beside this plan's.
void printTflmComparison(const Input& in, const Plan& plan, bool exact_bytes);
// One line on TFLite Micro's arena with the plan a .tflite carries ("" for
// other inputs).
std::string carriedPlanSummary(const Input& in);

// Prints verifier warnings to stderr: the first one and how many more.
void printWarnings(const std::vector<std::string>& warnings);
// Prints each warning on its own line ("memplan: warning: ...").
void printEachWarning(const std::vector<std::string>& warnings);

// "256KiB", "1MiB", "4096" -> bytes; throws InputError naming `what`.
Bytes parseBytes(const std::string& text, const std::string& what);
// --capacity MEM_ID=BYTES flags into `out` (index = mem_id).
void parseCapacities(const std::vector<std::string>& flags, std::vector<std::optional<Bytes>>& out);

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
// A verifier violation as a line: a program's names the method already.
std::string violationLine(const Input& input, const Violation& v);
// The method named `name`; "" = the only one (an error when there are several).
GraphId pteMethodIndex(const PteProgram& program, const std::string& name);

}  // namespace memplan::cli

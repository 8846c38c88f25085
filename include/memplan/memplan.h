// memplan's library entry point: an input and a request in, a plan out.
//
//   const memplan::Input in = memplan::readInput("model.tflite");
//   const memplan::Plan plan = memplan::plan(in, {});      // auto, 16-byte alignment
//   if (!memplan::verify(in, plan).ok()) ...               // proven safe, or why not
//   memplan::writePlan("model.plan.json", plan, in);       // atomically
//
// Every stage behind it (import -> IR -> lifetimes -> specs -> pools ->
// algorithms -> plan -> verify) has its own header; this one is all a user
// of the library needs. The CLI and the Python module are thin shells over
// these functions. Errors are exceptions: InputError (bad file or option:
// one line naming the file and the place, or the PlanRequest/ImportOptions
// field) and PlanError (a request that cannot be met, e.g. a capacity).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "memplan/algorithm.h"
#include "memplan/graph.h"
#include "memplan/import.h"
#include "memplan/io.h"
#include "memplan/plan.h"
#include "memplan/pte.h"
#include "memplan/replay.h"
#include "memplan/verify.h"

namespace memplan {

// One input of any kind: a model (graph JSON, ONNX, TFLite), an ExecuTorch
// spec list, or a MiniMalloc buffer list. Exactly one of the three is set
// (an ExecuTorch program also sets `pte`; `model` is then its methods, one
// graph each: plan, verify and replay go through memplan/pte.h).
struct Input {
  InputKind kind = InputKind::GraphJson;
  SourceInfo source;
  ImportOptions import_options;      // what it was read with
  std::optional<Model> model;
  std::optional<SpecList> spec_list;
  std::optional<BufferList> buffers;
  std::shared_ptr<const PteProgram> pte;  // ExecuTorch program (.pte)

  static Input fromModel(Model model);
  static Input fromSpecList(SpecList list);
  static Input fromBuffers(BufferList list);
  // The model, or null for spec lists and buffer lists.
  const Model* modelOrNull() const { return model ? &*model : nullptr; }
};

// Reads a file of any kind; the reader is chosen by extension and content.
Input readInput(const std::filesystem::path& path, const ImportOptions& options = {});
// The same from bytes in memory; `name` names the input in errors and plans.
Input readInput(std::string_view bytes, const std::string& name,
                const ImportOptions& options = {});

// Plans an input. Defaults that depend on the input: algorithm "auto"
// (a spec list: the case's own), alignment 16 (CSV: 1; a spec list: the
// case's), extra_padding 0 (a spec list: the case's). The plan records the
// input's source and every option it was made with.
Plan plan(const Input& input, const PlanRequest& request = {});

// Checks a plan against its input (lifetimes, bounds, alignment, pools;
// O(n log n)); also that the plan covers the input's specs.
VerifyResult verify(const Input& input, const Plan& plan);

// Runs the input on shadow arenas under the plan (independent of lifetimes).
ReplayResult replay(const Input& input, const Plan& plan,
                    const ReplayOptions& options = {});

// readPlanProvenance (memplan/io.h) tells how a plan file was made: enough
// to read its input again the same way.

// Throws InputError when `plan_source` (recorded in a plan) does not describe
// `input`'s bytes: a plan must be checked against the input it was made for.
void checkSameSource(const SourceInfo& plan_source, const Input& input,
                     const std::string& plan_name);

// Reads a plan file (plan JSON, or a CSV solution of a CSV buffer list) onto
// `input`'s specs, recomputed with the options the plan was made with.
Plan readPlan(std::string_view text, const std::string& source_name, const Input& input);
Plan readPlan(const std::filesystem::path& path, const Input& input);

enum class PlanFormat : std::uint8_t { Json, Csv };
struct WritePlanOptions {
  PlanFormat format = PlanFormat::Json;
  // planning_seconds differs run to run; off gives byte-identical files.
  bool include_timing = false;
};
// Plan JSON (docs/plan-format.md), or MiniMalloc CSV with an offset column
// (one pool only).
std::string writePlan(const Plan& plan, const Input& input, const WritePlanOptions& options = {});
// By extension (.csv: CSV, else JSON), atomically.
void writePlan(const std::filesystem::path& path, const Plan& plan, const Input& input,
               WritePlanOptions options = {});

}  // namespace memplan

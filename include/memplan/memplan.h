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
#include <vector>

#include "memplan/algorithm.h"
#include "memplan/c_header.h"
#include "memplan/formats.h"
#include "memplan/graph.h"
#include "memplan/import.h"
#include "memplan/io.h"
#include "memplan/plan.h"
#include "memplan/pte.h"
#include "memplan/verify.h"
#include "memplan/report.h"
#include "memplan/verify.h"

namespace memplan {

// One input of any kind, read by a format's reader (memplan/formats.h):
// a model (graph JSON, ONNX, TFLite), an ExecuTorch spec list, a MiniMalloc
// buffer list, or an ExecuTorch program (its methods are a model's graphs:
// plan, verify and replay go through memplan/pte.h).
struct Input {
  const InputFormat* format = findInputFormat("graph_json");  // never null
  SourceInfo source;
  ImportOptions import_options;      // what it was read with
  InputContent content;
  // The file's bytes, when the format keeps them (formats that write a copy: kWritesTflite).
  std::shared_ptr<const std::string> bytes;

  static Input fromModel(Model model);
  static Input fromSpecList(SpecList list);
  static Input fromBuffers(BufferList list);
  // What it holds; null when it holds something else. model() is also an
  // ExecuTorch program's (its methods as graphs).
  const Model* model() const;
  const SpecList* specList() const;
  const BufferList* buffers() const;
  const PteProgram* pte() const;
  const Model* modelOrNull() const { return model(); }  // the older name of model()
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

// ---- plans that exist already (memplan verify, replay, report) ----

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

// The import options a plan file records (how to read its input again);
// the defaults for a CSV solution and for plans of version 1.
ImportOptions planImportOptions(std::string_view plan_text, const std::string& plan_name);
// readPlan after checkSameSource (when the plan records its source), unless
// `force`: a plan is checked against the bytes it was made from.
Plan readPlanFor(const Input& input, std::string_view plan_text, const std::string& plan_name,
                 bool force = false);

// The plan an input carries in itself: a .pte's own plan, or the offsets
// its tensors are pinned at (a .tflite's TensorFlow Lite Micro offline
// plan; tensors without a pin are left to the runtime). Pins may overlap
// when `allow_pinned_overlap`. Throws InputError when it carries none.
Plan carriedPlan(const Input& input, bool allow_pinned_overlap = false);
// verify() for a carried plan: a .pte's offsets as the file has them (also
// of tensors no instruction names), and, unless the plan allows pinned
// overlaps, pins of different graphs on TensorFlow Lite Micro's single
// time line (a body's tensors over its caller's).
VerifyResult verifyCarriedPlan(const Input& input, const Plan& plan);

// ---- TensorFlow Lite Micro (inputs whose format runs on it: .tflite) ----

// TFLite Micro's own planner (GreedyMemoryPlanner) beside `plan`: the arena
// it needs for the model afresh (pins dropped), and the plan's one pool.
// nullopt for other inputs and for plans with more than one pool.
// arena_size is the kTensorArenaSize a TFLite Micro user sets with this
// plan: its head plus TFLite Micro's own tensors, operators and kernel data
// (estimated: tflmArenaEstimate, src/plan/tflm_analysis.h).
struct TflmComparison {
  Bytes tflm = 0;
  Bytes plan = 0;
  Bytes arena_head = 0;
  Bytes arena_size = 0;
};
std::optional<TflmComparison> compareWithTflm(const Input& input, const Plan& plan);
// The arena head TFLite Micro plans around the input's own offline plan,
// scratch buffers not counted, and how many of its tensors it places
// itself; nullopt when the input is not a TFLite Micro model.
struct TflmCarriedArena {
  Bytes head = 0;
  std::size_t placed_by_tflm = 0, tensors = 0;
};
std::optional<TflmCarriedArena> tflmCarriedArena(const Input& input);

// ---- exporters: files written atomically ----

// The plan as a C/C++ header (memplan/c_header.h); options.source defaults
// to the input's file name.
void writeCHeader(const std::filesystem::path& path, const Plan& plan, const Input& input,
                  CHeaderOptions options = {});
// A copy of the .tflite input carrying the plan as TensorFlow Lite Micro's
// offline plan (pool 1 only). Returns warnings (one line each). The result
// is read back first (checkTfliteRewrite, src/export/tflite_writer.h) and the
// plan it carries verified as `memplan verify` would: PlanError otherwise,
// nothing written.
std::vector<std::string> writeTflite(const std::filesystem::path& path, const Plan& plan,
                                     const Input& input);
// The .pte input with the plan (memory ids, constants, segments and
// delegates kept); the plan must be one of this program (planPte, or read
// back from a file) and must verify (PlanError otherwise, nothing written).
void writePte(const std::filesystem::path& path, const Plan& plan, const Input& input);
// The self-contained HTML viewer, the SVG picture (memplan/report.h);
// their title defaults to the input's file name.
void writeHtml(const std::filesystem::path& path, const Plan& plan, const Input& input,
               HtmlOptions options = {});
void writeSvg(const std::filesystem::path& path, const Plan& plan, const Input& input,
              SvgOptions options = {});

// ---- messages in the caller's terms ----

// Library messages name a request or import field first
// ("PlanRequest.options.alignment: ..."). The CLI and Python say it as
// their users typed it ("--alignment: ...", "alignment: ..."). The
// readers' messages name the CLI's flags ("--input-shape x=?x3", "--dim
// SYMBOL=N"); Python's terms are its keyword arguments
// ("input_shapes={'x': [?, 3]}", "dims={'SYMBOL': N}").
enum class Shell : std::uint8_t { Cli, Python };
std::string inShellTerms(const std::string& message, Shell shell);

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

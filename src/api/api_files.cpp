// The library entry point (memplan/memplan.h), continued: plans an input
// carries in itself, TensorFlow Lite Micro beside a plan, the exporters, and
// messages in the shells' terms. The CLI and the Python module call these;
// neither holds any of it.
#include <filesystem>

#include <fmt/format.h>

#include "plan/plan_order.h"

#include "memplan/memplan.h"
#include "plan/tflm_analysis.h"
#include "export/tflite_writer.h"

namespace memplan {
namespace {

const Model* tfliteMicroModel(const Input& input) {
  return input.format->can(kRunsOnTfliteMicro) ? input.model() : nullptr;
}

std::string fileName(const Input& input) {
  return std::filesystem::path(input.source.name).filename().string();
}


// The plan a written .tflite carries, read back as `memplan verify` reads
// it, passes the same check (writeTfliteOfflinePlan has already compared
// the bytes): a plan memplan writes never fails its own verify.
void checkWrittenTflitePlan(const Input& input, const std::string& written, const Plan& plan) {
  ImportOptions options = input.import_options;
  options.ignore_offline_plan = false;
  const std::string name = input.source.name + " (rewritten)";
  const Input back = readInput(std::string_view(written), name, options);
  const VerifyResult verdict = verifyCarriedPlan(back, carriedPlan(back, plan.options.allow_pinned_overlap));
  if (!verdict.ok())
    throw PlanError(fmt::format("{}: the offline plan read back does not verify: {}; nothing written",
                                input.source.name, verdict.violations.front().message));
}

}  // namespace

Plan carriedPlan(const Input& input, bool allow_pinned_overlap) {
  if (const PteProgram* program = input.pte()) {
    Plan plan = embeddedPlan(*program);
    plan.source = input.source;
    plan.import_options = input.import_options;
    return plan;
  }
  bool pinned = false;
  if (const Model* m = input.model(); m && input.format->can(kCarriesPlan))
    for (const Tensor& t : m->tensors) pinned |= t.offset.has_value();
  if (!pinned)
    throw InputError(fmt::format("{}: carries no plan of its own (no pinned tensor, no TFLite Micro "
                                 "offline plan, not an ExecuTorch program); give a PLAN file",
                                 input.source.name));
  PlanOptions options;
  options.alignment = 1;  // pins are checked as they are: exact bytes
  options.allow_pinned_overlap = allow_pinned_overlap;
  return pinnedPlan(*input.model(), options);
}

VerifyResult verifyCarriedPlan(const Input& input, const Plan& plan) {
  if (const PteProgram* program = input.pte()) return verifyPte(*program, plan, true);
  VerifyResult r = verify(input, plan);
  // The verifier checks each graph; across graphs (a body's tensors over
  // its caller's) TFLite Micro's single time line decides.
  // A graph JSON's bodies are graphs of their own: only a .tflite's
  // subgraphs share one time line.
  const Model* m = tfliteMicroModel(input);
  if (!plan.options.allow_pinned_overlap && m && m->graphs.size() > 1)
    for (std::string& c : tflmPinConflicts(*m)) r.violations.push_back({0, std::move(c)});
  return r;
}

std::optional<TflmComparison> compareWithTflm(const Input& input, const Plan& plan) {
  const Model* m = tfliteMicroModel(input);
  if (!m || plan.graphs.empty()) return std::nullopt;
  const GraphPlan& main = plan.main();
  TflmComparison out;
  for (std::size_t id = 1; id < main.bufsizes.size(); ++id) {
    if (id > 1 && main.bufsizes[id] > 0) return std::nullopt;  // TFLite Micro has one arena
    out.plan += main.bufsizes[id];
  }
  Model unpinned = *m;  // what TFLite Micro plans when the model carries no plan
  for (Tensor& t : unpinned.tensors) t.offset.reset();
  out.tflm = tflmArenaBytes(unpinned);
  const TflmArenaEstimate arena = tflmArenaEstimate(*m, out.plan);
  out.arena_head = arena.head;
  out.arena_size = arena.total;
  return out;
}

std::optional<TflmCarriedArena> tflmCarriedArena(const Input& input) {
  const Model* m = tfliteMicroModel(input);
  if (!m) return std::nullopt;
  const TflmBuffers buffers = tflmBuffers(*m);
  TflmCarriedArena out;
  for (const Buffer& b : buffers.problem.buffers) out.placed_by_tflm += !b.fixed_offset;
  out.tensors = buffers.problem.buffers.size();
  out.head = makeAlgorithm("tflm_greedy")->solve(buffers.problem, AlgorithmParams{}).size;
  return out;
}

void writeCHeader(const std::filesystem::path& path, const Plan& plan, const Input& input,
                  CHeaderOptions options) {
  if (options.source.empty()) options.source = fileName(input);
  // The header's steps are node positions: the program that includes it
  // runs its nodes in its own order, which is not the plan's.
  if (plan.order_applied)
    throw InputError("PlanRequest.reorder: a C header carries no node order, and this plan is made "
                     "for a new one; plan the given order for it");
  writeFileAtomic(path, writeCHeader(plan, input.model(), options));
}

std::vector<std::string> writeTflite(const std::filesystem::path& path, const Plan& plan,
                                     const Input& input) {
  const Model* m = input.model();
  if (!input.format->can(kWritesTflite) || !m || !input.bytes)
    throw InputError(fmt::format("writeTflite: {} is not a .tflite model", input.source.name));
  const TfliteTensorIndex index = tfliteTensorIndex(*input.bytes, input.source.name);
  const std::vector<std::int32_t> offsets = tfliteOfflineOffsets(*m, plan, index);
  // A plan made for a new order runs in it: the operators are written so.
  const std::string bytes = plan.order_applied ? reorderTfliteOperators(*input.bytes, input.source.name,
                                                                        *m, changedOrders(plan.order))
                                               : *input.bytes;
  const std::string written = writeTfliteOfflinePlan(bytes, input.source.name, offsets);
  checkWrittenTflitePlan(input, written, plan);
  writeFileAtomic(path, written);
  if (m->graphs.size() < 2) return {};
  return {fmt::format("{}: the offline plan lists every subgraph's tensors, concatenated, as TFLite "
                      "Micro documents; its allocator (micro_allocation_info.cc) reads each "
                      "subgraph's entries from the start of the list, so check the control-flow "
                      "bodies on your TFLite Micro version",
                      path.string())};
}

void writePte(const std::filesystem::path& path, const Plan& plan, const Input& input) {
  if (!input.format->can(kWritesPte) || !input.pte())
    throw InputError(fmt::format("writePte: {} is not an ExecuTorch program (.pte)", input.source.name));
  // A plan made for a new order runs in it: the instructions are written so.
  const PlannedProgram planned(*input.pte(), plan);
  const PteProgram& program = planned.get();
  // writePte reads its result back and checks that the plan read back is
  // this one; this one must pass `memplan verify` (the Python exporter may
  // be handed ExecuTorch's unsafe plan, which the CLI never writes).
  const VerifyResult verdict = verifyPte(program, plan);
  if (!verdict.ok())
    throw PlanError(fmt::format("{}: the plan does not verify: {}; nothing written", input.source.name,
                                verdict.violations.front().message));
  const std::string written = writePte(program, plan);
  if (plan.order_applied) {
    // Read as a new file (lifetimes from its own order and plan), it must
    // pass `memplan verify` as it is.
    const PteProgram back = readPte(written, input.source.name + " (reordered)");
    const VerifyResult carried = verifyPte(back, embeddedPlan(back), true);
    if (!carried.ok())
      throw PlanError(fmt::format("{}: the reordered program's plan does not verify when read back: {}; "
                                  "nothing written",
                                  input.source.name, carried.violations.front().message));
  }
  writeFileAtomic(path, written);
}

void writeHtml(const std::filesystem::path& path, const Plan& plan, const Input& input,
               HtmlOptions options) {
  if (options.title.empty()) options.title = fileName(input);
  const Model* m = input.model();
  writeFileAtomic(path, renderHtml(plan, m ? &PlannedModel(*m, plan).get() : m, options));
}

void writeSvg(const std::filesystem::path& path, const Plan& plan, const Input& input,
              SvgOptions options) {
  if (options.title.empty()) options.title = fileName(input);
  const Model* m = input.model();
  writeFileAtomic(path, renderSvg(plan, m ? &PlannedModel(*m, plan).get() : m, options));
}

}  // namespace memplan

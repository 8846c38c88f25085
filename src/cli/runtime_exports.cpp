// What `plan` and `verify` do for runtimes: --emit-c, --write-tflite,
// TensorFlow Lite Micro's own arena beside memplan's, and a plan a model
// carries in itself (a .tflite with an offline plan).
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/cli.h"
#include "memplan/c_header.h"
#include "memplan/report.h"
#include "memplan/tflite_micro.h"
#include "memplan/verify.h"

namespace memplan::cli {

void RuntimeFlags::addTo(CLI::App& app) {
  app.add_option("--emit-c", emit_c,
                 "Write the plan as a C/C++ header: pool sizes, tensor ids, offsets, sizes, "
                 "lifetimes (for memplan/runtime.h)");
  app.add_option("--c-prefix", c_prefix, "Prefix of the header's names (default: memplan)");
  app.add_option("--write-tflite", write_tflite,
                 "Write a copy of the .tflite model carrying this plan as TensorFlow Lite Micro's "
                 "offline memory plan");
}

void writeRuntimeExports(const RuntimeFlags& flags, const Input& in, const Plan& plan) {
  const Model* model = in.modelOrNull();
  if (!flags.emit_c.empty()) {
    CHeaderOptions options;
    if (!flags.c_prefix.empty()) options.prefix = flags.c_prefix;
    options.source = std::filesystem::path(in.source.name).filename().string();
    writeFileAtomic(flags.emit_c, writeCHeader(plan, model, options));
  } else if (!flags.c_prefix.empty()) {
    throw InputError("--c-prefix: only with --emit-c");
  }
  if (!flags.write_tflite.empty()) {
    if (in.kind != InputKind::Tflite || !model)
      throw InputError(fmt::format("--write-tflite: {} is not a .tflite model", in.source.name));
    const std::string bytes = readFile(in.source.name);
    if (bytes.size() != in.source.size)
      throw InputError(fmt::format("--write-tflite: {} changed while it was planned", in.source.name));
    const TfliteTensorIndex index = tfliteTensorIndex(bytes, in.source.name);
    const std::vector<std::int32_t> offsets = tfliteOfflineOffsets(*model, plan, index);
    writeFileAtomic(flags.write_tflite, writeTfliteOfflinePlan(bytes, in.source.name, offsets));
    if (model->graphs.size() > 1)
      std::cerr << "memplan: warning: " << flags.write_tflite
                << ": the offline plan lists every subgraph's tensors, concatenated, as TFLite "
                   "Micro documents; its allocator (micro_allocation_info.cc) reads each "
                   "subgraph's entries from the start of the list, so check the control-flow "
                   "bodies on your TFLite Micro version\n";
  }
}

void printTflmComparison(const Input& in, const Plan& plan, bool exact_bytes) {
  if (in.kind != InputKind::Tflite || !in.model || plan.graphs.empty()) return;
  const GraphPlan& main = plan.main();
  Bytes ours = 0;
  for (std::size_t m = 1; m < main.bufsizes.size(); ++m) {
    if (m > 1 && main.bufsizes[m] > 0) return;  // TFLM has one arena
    ours += main.bufsizes[m];
  }
  Model unpinned = *in.model;  // what TFLM plans when the model carries no plan
  for (Tensor& t : unpinned.tensors) t.offset.reset();
  const Bytes tflm = tflmArenaBytes(unpinned);
  const std::string change =
      ours == tflm ? "the same"
                   : fmt::format("{:+.1f}%", 100.0 * (static_cast<double>(ours) - static_cast<double>(tflm)) /
                                                static_cast<double>(std::max<Bytes>(tflm, 1)));
  std::cout << fmt::format("TFLite Micro's own planner (GreedyMemoryPlanner) would need {}; this "
                           "plan: {}, {}\n",
                           formatBytes(tflm, exact_bytes), formatBytes(ours, exact_bytes), change);
  const TflmArenaEstimate arena = tflmArenaEstimate(*in.model, ours);
  std::cout << fmt::format("TFLite Micro with this plan: kTensorArenaSize = {} (alignas(16)): head {} + "
                           "{} for TFLM's own tensors, operators and kernel data (estimated)\n",
                           arena.total, arena.head, arena.total - arena.head);
}

Plan embeddedPlan(const Input& in, bool allow_pinned_overlap) {
  if (in.pte) return embeddedPlanOf(in);
  bool pinned = false;
  if (in.model)
    for (const Tensor& t : in.model->tensors) pinned |= t.offset.has_value();
  if (!pinned)
    throw InputError(fmt::format("{}: carries no plan of its own (no pinned tensor, no TFLite Micro "
                                 "offline plan, not an ExecuTorch program); give a PLAN file",
                                 in.source.name));
  PlanOptions options;
  options.alignment = 1;  // pins are checked as they are: exact bytes
  options.allow_pinned_overlap = allow_pinned_overlap;
  return pinnedPlan(*in.model, options);
}

std::vector<std::string> embeddedPlanConflicts(const Input& in, bool allow_pinned_overlap) {
  // The verifier checks each graph; across graphs (a body's tensors over its
  // caller's) TFLite Micro's single time line decides.
  // A .pte's methods are graphs of their own, each with its own arenas:
  // only a .tflite's subgraphs share one time line.
  if (allow_pinned_overlap || in.kind != InputKind::Tflite || !in.model || in.model->graphs.size() < 2)
    return {};
  return tflmPinConflicts(*in.model);
}

std::string embeddedPlanSummary(const Input& in) {
  if (in.kind != InputKind::Tflite || !in.model) return "";
  const TflmBuffers buffers = tflmBuffers(*in.model);
  std::size_t online = 0;
  for (const Buffer& b : buffers.problem.buffers) online += !b.fixed_offset;
  const Bytes arena = makeAlgorithm("tflm_greedy")->solve(buffers.problem, AlgorithmParams{}).size;
  return fmt::format("TFLite Micro's arena head with this plan: {} bytes ({} of {} tensors left to its "
                     "planner, scratch buffers not counted)",
                     arena, online, buffers.problem.buffers.size());
}

}  // namespace memplan::cli

// What `plan` and `verify` print and write for runtimes: --emit-c,
// --write-tflite, TensorFlow Lite Micro's own arena beside memplan's (the
// work is the library's: memplan/memplan.h).
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.h"
#include "memplan/report.h"

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
  if (!flags.emit_c.empty()) {
    CHeaderOptions options;
    if (!flags.c_prefix.empty()) options.prefix = flags.c_prefix;
    writeCHeader(flags.emit_c, plan, in, options);
  } else if (!flags.c_prefix.empty()) {
    throw InputError("--c-prefix: only with --emit-c");
  }
  if (!flags.write_tflite.empty()) printEachWarning(writeTflite(flags.write_tflite, plan, in));
}

void printTflmComparison(const Input& in, const Plan& plan, bool exact_bytes) {
  const std::optional<TflmComparison> c = compareWithTflm(in, plan);
  if (!c) return;
  const std::string change =
      c->plan == c->tflm
          ? "the same"
          : fmt::format("{:+.1f}%", 100.0 * (static_cast<double>(c->plan) - static_cast<double>(c->tflm)) /
                                        static_cast<double>(std::max<Bytes>(c->tflm, 1)));
  std::cout << fmt::format("TFLite Micro's own planner (GreedyMemoryPlanner) would need {}; this "
                           "plan: {}, {}\n",
                           formatBytes(c->tflm, exact_bytes), formatBytes(c->plan, exact_bytes), change);
  std::cout << fmt::format("TFLite Micro with this plan: kTensorArenaSize = {} (alignas(16)): head {} + "
                           "{} for TFLM's own tensors, operators and kernel data (estimated)\n",
                           c->arena_size, c->arena_head, c->arena_size - c->arena_head);
}

std::string carriedPlanSummary(const Input& in) {
  const std::optional<TflmCarriedArena> a = tflmCarriedArena(in);
  if (!a) return "";
  return fmt::format("TFLite Micro's arena head with this plan: {} bytes ({} of {} tensors left to its "
                     "planner, scratch buffers not counted)",
                     a->head, a->placed_by_tflm, a->tensors);
}

}  // namespace memplan::cli

// `memplan plan INPUT`: plan, verify, report, export.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "cli.h"
#include "memplan/types.h"
#include "progress.h"
#include "memplan/report.h"

namespace memplan::cli {
namespace {

// Ctrl-C while planning ends the search: the best plan found so far is
// verified and written as usual, and said to be stopped. A second Ctrl-C
// exits at once.
std::atomic<bool> g_interrupted{false};
extern "C" void onInterrupt(int) {
  if (g_interrupted.exchange(true)) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

// The hint after ExecuTorch's unsafe plan: `auto` is named only when its
// plan of the same input and request passes the same check (an input can
// defeat every algorithm, e.g. a carried placement memplan must keep).
std::string safeAlternative(const Input& in, PlanRequest request) {
  request.algorithm = "auto";
  try {
    if (verify(in, memplan::plan(in, request)).ok()) return "; --algorithm auto gives a safe plan";
  } catch (const InputError&) {
  } catch (const PlanError&) {
  }
  return "";
}

struct PlanCommand {
  std::string input;
  std::string output;
  InputFlags input_flags;
  PlanFlags plan_flags;
  bool json = false;
  bool exact_bytes = false;
  bool quiet = false;
  bool timing = false;
  std::string html, svg, compare;
  RuntimeFlags runtime;
  std::string write_pte;

  int run() {
    // Contradictions first, before any work.
    if (!output.empty()) checkOutputExtension(output, {".json", ".csv"}, "-o");
    if (quiet && json)
      throw InputError("-q turns the report off and --json asks for it as JSON: give one of them");
    if (!compare.empty() && html.empty())
      throw InputError("--compare " + compare + " shows a second plan in the HTML viewer: it needs --html FILE");
    if (!compare.empty() && !findAlgorithmInfo(compare)) {
      const std::string guess = closest(compare, algorithmNames());
      throw InputError(fmt::format("--compare: unknown algorithm '{}'{} (`memplan algorithms` lists them)",
                                   compare, guess.empty() ? "" : "; did you mean " + guess + "?"));
    }
    const PlanRequest request = plan_flags.toRequest();
    const Input in = input_flags.read(input);
    if (!write_pte.empty() && !in.pte())
      throw InputError(fmt::format("--write-pte: {} is not an ExecuTorch program (.pte)", input));
    printEachWarning(inputWarnings(in));
    Plan plan;
    {
      // A status line on a terminal for searches that run over ~1 s.
      std::optional<ProgressLine> progress;
      PlanRequest watched = request;
      if (!quiet && ::isatty(2)) {
        progress.emplace();
        watched.params.progress = progress->callback();
      }
      watched.params.stop = &g_interrupted;
      const auto previous = std::signal(SIGINT, onInterrupt);
      plan = memplan::plan(in, watched);
      std::signal(SIGINT, previous == SIG_ERR ? SIG_DFL : previous);
    }
    if (!plan.search_stopped.empty())
      std::cerr << "memplan: search stopped ("
                << (plan.search_stopped == "interrupted" ? "Ctrl-C" : "--time-limit")
                << "): the plan is the best found until then"
                << (plan.search_stopped == "interrupted" ? "" : "; time-limited plans are not repeatable")
                << "\n";
    const VerifyResult verdict = verify(in, plan);
    const Model* model = in.model();

    if (!output.empty()) {
      WritePlanOptions write;
      write.include_timing = timing;  // off: plan files are byte-identical run to run
      writePlan(output, plan, in, write);
    }
    if (verdict.ok()) writeRuntimeExports(runtime, in, plan);
    if (!html.empty()) {
      HtmlOptions options;
      std::unique_ptr<Plan> other;
      if (!compare.empty()) {
        PlanRequest r = request;
        r.algorithm = compare;
        other = std::make_unique<Plan>(memplan::plan(in, r));
        options.compare = other.get();
        options.label = plan.algorithm;
        options.compare_label = compare;
      }
      writeHtml(html, plan, in, options);
    }
    if (!svg.empty()) writeSvg(svg, plan, in);
    if (!quiet) {
      ReportOptions options;
      options.exact_bytes = exact_bytes;
      std::cout << (json ? formatReportJson(plan, model, options) : formatReport(plan, model, options));
      if (!json) printTflmComparison(in, plan, exact_bytes);
      if (in.pte() && !json) std::cout << pteSummary(*in.pte(), plan);
    }
    printWarnings(verdict.warnings);
    if (!verdict.ok()) {
      // Asked for ExecuTorch bit for bit: its plan is reproduced, defects
      // included (e.g. in-place results placed late), and said to be unsafe.
      // `memplan verify` on it exits 1.
      const AlgorithmInfo* algo = findAlgorithmInfo(plan.algorithm);
      if (algo && algo->executorch_exact) {
        std::cerr << "memplan: warning: ExecuTorch's own plan is unsafe: "
                  << verdict.violations.front().message
                  << " (reproduced bit for bit" << safeAlternative(in, request) << ")\n";
        if (!write_pte.empty())
          std::cerr << "memplan: " << write_pte << " not written: the plan is unsafe (nor any other output: a run that fails writes none)\n";
        return write_pte.empty() ? kExitOk : kExitVerifyFailed;
      }
      std::cerr << "memplan: plan failed verification: " << verdict.violations.front().message << "\n";
      return kExitVerifyFailed;
    }
    if (!write_pte.empty()) writePte(write_pte, plan, in);
    return kExitOk;
  }
};

}  // namespace

Command addPlanCommand(CLI::App& app) {
  auto cmd = std::make_shared<PlanCommand>();
  CLI::App* sub = app.add_subcommand("plan", "Plan a model, spec list or buffer list and print a report");
  sub->add_option("INPUT", cmd->input,
                  "Model (.onnx, .tflite), ExecuTorch program (.pte), memplan graph (.json), "
                  "ExecuTorch spec list (.json) or MiniMalloc buffer list (.csv)")
      ->required();
  sub->add_option("-o,--output", cmd->output, "Write the plan: OUT.json (plan JSON) or OUT.csv (MiniMalloc CSV, one pool)");
  cmd->plan_flags.addTo(*sub);
  cmd->input_flags.addTo(*sub);
  sub->add_flag("--json", cmd->json, "Print the report as JSON");
  sub->add_flag("--bytes", cmd->exact_bytes, "Exact byte counts beside humane units");
  sub->add_flag("-q,--quiet", cmd->quiet, "No report, no progress");
  sub->add_flag("--timing", cmd->timing,
                "Write planning_seconds into the plan file (then files differ run to run)");
  sub->add_option("--html", cmd->html, "Write an interactive, self-contained HTML viewer");
  sub->add_option("--svg", cmd->svg, "Write a static SVG picture of the layout");
  sub->add_option("--compare", cmd->compare, "Show a second algorithm's plan beside this one in --html");
  cmd->runtime.addTo(*sub);
  sub->add_option("--write-pte", cmd->write_pte,
                  "ExecuTorch .pte: write the program with this plan (memory ids, constants, "
                  "segments and delegates kept)");
  return {sub, [cmd] { return cmd->run(); }};
}

}  // namespace memplan::cli

// `memplan plan INPUT`: plan, verify, report, export.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/cli.h"
#include "memplan/report.h"
#include "memplan/verify.h"

namespace memplan::cli {
namespace {

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
  std::string write_pte;

  bool endsWith(const std::string& s, const std::string& suffix) const {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  }

  // A one-pool plan as a MiniMalloc CSV with an offset column.
  std::string toCsv(const LoadedInput& in, const Plan& plan) const {
    const GraphPlan& g = plan.main();
    if (in.buffers) {
      std::vector<Offset> offsets(in.buffers->problem.buffers.size(), 0);
      for (const Allocation& a : g.allocations) offsets.at(a.spec) = a.offset;
      return writeMiniMallocCsv(*in.buffers, offsets);
    }
    std::size_t pools = 0;
    for (Bytes b : g.bufsizes) pools += b > 0;
    if (pools > 1)
      throw InputError(fmt::format("{}: a CSV holds one pool and this plan has {}; write .json instead",
                                   output, pools));
    BufferList list;
    std::vector<Offset> offsets;
    for (const Allocation& a : g.allocations) {
      const Spec& s = g.specs.specs[a.spec];
      Buffer b;
      b.id = static_cast<BufferId>(list.ids.size());
      b.start = s.first;
      b.end = s.last + 1;
      b.size = a.size;
      b.nbytes = s.nbytes;
      list.ids.push_back(s.name);
      list.problem.buffers.push_back(b);
      offsets.push_back(a.offset);
    }
    return writeMiniMallocCsv(list, offsets);
  }

  int run() {
    const LoadedInput in = loadInput(input, input_flags.toImportOptions());
    if (!write_pte.empty() && !in.pte)
      throw InputError(fmt::format("--write-pte: {} is not an ExecuTorch program (.pte)", input));
    const Plan plan = planInput(in, plan_flags, !quiet && ::isatty(2));
    const VerifyResult verdict = in.pte ? verifyPte(*in.pte, plan) : verifyPlan(plan);
    const Model* model = in.model ? &*in.model : nullptr;

    if (!output.empty()) {
      PlanJsonOptions json_options;
      json_options.include_timing = timing;  // off: plan files are byte-identical run to run
      const std::string data =
          endsWith(output, ".csv") ? toCsv(in, plan) : writePlanJson(plan, model, json_options);
      writeFileAtomic(output, data);
    }
    if (!html.empty()) {
      HtmlOptions options;
      options.title = std::filesystem::path(input).filename().string();
      std::unique_ptr<Plan> other;
      if (!compare.empty()) {
        PlanFlags f = plan_flags;
        f.algorithm = compare;
        other = std::make_unique<Plan>(planInput(in, f, false));
        options.compare = other.get();
        options.label = plan.algorithm;
        options.compare_label = compare;
      }
      writeFileAtomic(html, renderHtml(plan, model, options));
    }
    if (!svg.empty()) {
      SvgOptions options;
      options.title = std::filesystem::path(input).filename().string();
      writeFileAtomic(svg, renderSvg(plan, model, options));
    }
    if (!quiet) {
      ReportOptions options;
      options.exact_bytes = exact_bytes;
      std::cout << (json ? formatReportJson(plan, model, options) : formatReport(plan, model, options));
      if (in.pte && !json) std::cout << pteSummary(*in.pte, plan);
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
                  << " (reproduced bit for bit; --algorithm auto gives a safe plan)\n";
        if (!write_pte.empty())
          std::cerr << "memplan: " << write_pte << " not written: the plan is unsafe\n";
        return write_pte.empty() ? kExitOk : kExitVerifyFailed;
      }
      std::cerr << "memplan: plan failed verification: " << verdict.violations.front().message << "\n";
      return kExitVerifyFailed;
    }
    if (!write_pte.empty()) writePteOutput(in, plan, write_pte);
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
  sub->add_option("-o,--output", cmd->output, "Write the plan: OUT.json (plan JSON) or OUT.csv (one pool)");
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
  sub->add_option("--write-pte", cmd->write_pte,
                  "ExecuTorch .pte: write the program with this plan (memory ids, constants, "
                  "segments and delegates kept)");
  return {sub, [cmd] { return cmd->run(); }};
}

}  // namespace memplan::cli

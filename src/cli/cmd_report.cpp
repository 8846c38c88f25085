// `memplan report INPUT [PLAN]`: the report `plan` prints, for a plan that
// exists already: a plan file, or the plan an ExecuTorch .pte carries.
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "cli.h"
#include "memplan/report.h"

namespace memplan::cli {

Command addReportCommand(CLI::App& app) {
  struct ReportCommand {
    std::string input, plan_path, html, svg;
    InputFlags flags;
    bool json = false, exact_bytes = false, force = false;

    int run() const {
      // A plan file: the input read as the plan says it was, the same bytes.
      Input in;
      Plan plan;
      if (!plan_path.empty()) {
        const std::string text = readFile(plan_path);
        in = readInput(input, flags.toImportOptions(planImportOptions(text, plan_path)));
        plan = readPlanFor(in, text, plan_path, force);
      } else {
        in = readInput(input, flags.toImportOptions());
        plan = carriedPlan(in);  // a .pte's or a .tflite offline plan
      }
      const Model* model = in.model();
      if (!html.empty()) writeHtml(html, plan, in);
      if (!svg.empty()) writeSvg(svg, plan, in);
      ReportOptions options;
      options.exact_bytes = exact_bytes;
      options.include_timing = false;  // not planned here
      options.input_name = input;
      std::cout << (json ? formatReportJson(plan, model, options) : formatReport(plan, model, options));
      if (in.pte() && !json) std::cout << pteSummary(*in.pte(), plan);
      const VerifyResult verdict = plan_path.empty() ? verifyCarriedPlan(in, plan) : memplan::verify(in, plan);
      if (!verdict.ok())
        std::cerr << "memplan: warning: this plan does not verify: "
                  << violationLine(in, verdict.violations.front()) << " (`memplan verify` exits 1)\n";
      return kExitOk;
    }
  };
  auto cmd = std::make_shared<ReportCommand>();
  CLI::App* sub = app.add_subcommand(
      "report", "Report an existing plan: a plan file, or the plan an ExecuTorch .pte carries");
  sub->add_option("INPUT", cmd->input, "The input the plan is for (.pte: its own plan by default)")
      ->required();
  sub->add_option("PLAN", cmd->plan_path, "Plan JSON (`memplan plan -o`) or a CSV solution");
  cmd->flags.addTo(*sub);
  sub->add_flag("--json", cmd->json, "Print the report as JSON");
  sub->add_flag("--bytes", cmd->exact_bytes, "Exact byte counts beside humane units");
  sub->add_option("--html", cmd->html, "Write the interactive HTML viewer of this plan");
  sub->add_option("--svg", cmd->svg, "Write a static SVG picture of the layout");
  sub->add_flag("--force", cmd->force, "Report the plan even if it was made from another file");
  return {sub, [cmd] { return cmd->run(); }};
}

}  // namespace memplan::cli

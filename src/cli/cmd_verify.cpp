// `memplan verify INPUT PLAN`, `memplan replay INPUT PLAN`, `memplan algorithms`.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "cli/cli.h"

namespace memplan::cli {
namespace {

struct CheckCommand {
  std::string input, plan_path;
  InputFlags input_flags;
  bool force = false;

  struct Loaded {
    Input input;
    Plan plan;
  };
  // The input is read as the plan file says it was (shapes, dims, views),
  // with flags given here replacing those; a plan made from other bytes is
  // refused unless --force.
  Loaded load() const {
    if (plan_path.empty()) {  // only a .pte carries its own plan
      Loaded l{readInput(input, input_flags.toImportOptions()), {}};
      if (!l.input.pte)
        throw InputError(fmt::format("{}: no PLAN given (only an ExecuTorch .pte carries its own plan)", input));
      l.plan = embeddedPlanOf(l.input);
      return l;
    }
    const std::string text = readFile(plan_path);
    ImportOptions recorded;
    std::optional<SourceInfo> source;
    if (detectInputKind(plan_path, text) != InputKind::Csv) {
      const PlanProvenance made = readPlanProvenance(text, plan_path);
      recorded = made.import_options;
      source = made.source;
    }
    Loaded l{readInput(input, input_flags.toImportOptions(recorded)), {}};
    if (source && !force) checkSameSource(*source, l.input, plan_path);
    l.plan = readPlan(text, plan_path, l.input);
    return l;
  }

  int verify() const {
    const Loaded l = load();
    // The file's own plan: its offsets as they are, also where no
    // instruction names a tensor.
    const VerifyResult r = l.input.pte && plan_path.empty() ? verifyPte(*l.input.pte, l.plan, true)
                                                            : memplan::verify(l.input, l.plan);
    printWarnings(r.warnings);
    if (!r.ok()) {
      std::cout << "INVALID: " << violationLine(l.input, r.violations.front()) << "\n";
      return kExitVerifyFailed;
    }
    std::cout << fmt::format("OK: {} allocations verified\n", r.checked_allocations);
    return kExitOk;
  }

  int replay() const {
    const Loaded l = load();
    const ReplayResult r = memplan::replay(l.input, l.plan);
    if (r.ok())
      std::cout << fmt::format("OK: {} writes, {} reads checked over {} steps\n", r.writes, r.reads, r.steps);
    else
      std::cout << "CLOBBERED: " << r.message << "\n";
    return r.ok() ? kExitOk : kExitVerifyFailed;
  }

  CLI::App* add(CLI::App& app, const std::string& name, const std::string& help) {
    CLI::App* sub = app.add_subcommand(name, help);
    sub->add_option("INPUT", input, "The input the plan was made for")->required();
    sub->add_option("PLAN", plan_path,
                    "Plan JSON written by `memplan plan -o`, or a CSV solution (offset column) "
                    "of a CSV buffer list; for a .pte without PLAN, the plan the file carries");
    input_flags.addTo(*sub);
    sub->add_flag("--force", force, "Check the plan even if it was made from another file");
    return sub;
  }
};

}  // namespace

Command addVerifyCommand(CLI::App& app) {
  auto cmd = std::make_shared<CheckCommand>();
  CLI::App* sub = cmd->add(app, "verify",
                           "Check a plan: exit 0 if valid, 1 with the first violation otherwise");
  return {sub, [cmd] { return cmd->verify(); }};
}

Command addReplayCommand(CLI::App& app) {
  auto cmd = std::make_shared<CheckCommand>();
  CLI::App* sub = cmd->add(app, "replay",
                           "Run the graph on shadow arenas: exit 0 if no tensor is clobbered, "
                           "1 with the first clobber otherwise");
  return {sub, [cmd] { return cmd->replay(); }};
}

Command addAlgorithmsCommand(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("algorithms", "List the planning algorithms");
  return {sub, [] {
            std::size_t width = 0;
            for (const std::string& n : algorithmNames()) width = std::max(width, n.size());
            for (const std::string& n : algorithmNames())
              std::cout << n << std::string(width + 2 - n.size(), ' ')
                        << findAlgorithmInfo(n)->summary << "\n";
            return kExitOk;
          }};
}

}  // namespace memplan::cli

// `memplan verify INPUT PLAN`, `memplan replay INPUT PLAN`, `memplan algorithms`.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/cli.h"
#include "memplan/replay.h"
#include "memplan/verify.h"

namespace memplan::cli {
namespace {

struct CheckCommand {
  std::string input, plan_path;
  InputFlags input_flags;

  struct Loaded {
    LoadedInput input;
    Plan plan;
  };
  Loaded load() const {
    Loaded l{loadInput(input, input_flags.toImportOptions()), {}};
    if (plan_path.empty()) {  // only a .pte carries its own plan
      if (!l.input.pte)
        throw InputError(fmt::format("{}: no PLAN given (only an ExecuTorch .pte carries its own plan)", input));
      l.plan = embeddedPlan(*l.input.pte);
      return l;
    }
    const std::string text = readFile(plan_path);
    if (detectInputKind(plan_path, text) == InputKind::Csv) {
      l.plan = planFromCsvSolution(l.input, text, plan_path);
      return l;
    }
    // The plan file records the options it was made with (alignment,
    // which inputs/outputs are planned): the specs are rebuilt with them.
    l.plan = readPlanJson(text, plan_path,
                          skeletonPlan(l.input, readPlanJsonOptions(text, plan_path)));
    return l;
  }

  int verify() const {
    const Loaded l = load();
    const VerifyResult r = l.input.pte ? verifyPte(*l.input.pte, l.plan, plan_path.empty())
                                       : verifyPlan(l.plan);
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
    const ReplayResult r = l.input.pte     ? replayPte(*l.input.pte, l.plan)
                           : l.input.model ? replayPlan(*l.input.model, l.plan)
                                           : replaySpecs(l.plan.main());
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

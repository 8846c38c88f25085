// `memplan verify INPUT PLAN`, `memplan replay INPUT PLAN`, `memplan algorithms`.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "cli.h"

namespace memplan::cli {
namespace {

struct CheckCommand {
  std::string input, plan_path;
  InputFlags input_flags;
  bool allow_pinned_overlap = false;
  std::vector<std::string> capacities;  // MEM_ID=BYTES, replacing the plan's
  bool force = false;

  struct Loaded {
    Input input;
    Plan plan;
  };
  // The input is read as the plan file says it was (shapes, dims, views),
  // with flags given here replacing those; a plan made from other bytes is
  // refused unless --force.
  Loaded load() const {
    if (plan_path.empty()) {  // the model carries its plan (.pte, .tflite offline plan)
      Loaded l{input_flags.read(input), {}};
      l.plan = carriedPlan(l.input, allow_pinned_overlap);
      return l;
    }
    const std::string text = readFile(plan_path);
    Loaded l{input_flags.read(input, planImportOptions(text, plan_path)), {}};
    l.plan = readPlanFor(l.input, text, plan_path, force);
    // Pinned tensors may overlap when the plan was made so, or when asked.
    if (allow_pinned_overlap) l.plan.options.allow_pinned_overlap = true;
    // Capacities given here are checked (as well as those the plan records).
    parseCapacities(capacities, l.plan.options.capacities);
    return l;
  }

  int verify() const {
    const Loaded l = load();
    const VerifyResult r = plan_path.empty() ? verifyCarriedPlan(l.input, l.plan) : memplan::verify(l.input, l.plan);
    printWarnings(r.warnings);
    if (!r.ok()) {
      std::cout << "INVALID: " << violationLine(l.input, r.violations.front()) << "\n";
      return kExitVerifyFailed;
    }
    std::cout << fmt::format("OK: {} allocations verified\n", r.checked_allocations);
    if (plan_path.empty())
      if (const std::string s = carriedPlanSummary(l.input); !s.empty()) std::cout << s << "\n";
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
                    "of a CSV buffer list; omitted: the plan the model carries (a .pte, or a "
                    ".tflite with a TFLite Micro offline plan)");
    input_flags.addTo(*sub);
    sub->add_flag("--allow-pinned-overlap", allow_pinned_overlap,
                  "Accept pinned tensors that share bytes while alive");
    sub->add_flag("--force", force, "Check the plan even if it was made from another file");
    sub->add_option("--capacity", capacities,
                    "Pool capacity the plan must keep: MEM_ID=BYTES, e.g. 1=256KiB (repeatable)");
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

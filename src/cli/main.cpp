// memplan command line: plan, verify, replay, import, algorithms, report.
#include <exception>
#include <iostream>
#include <new>

#include <CLI/CLI.hpp>

#include "cli/cli.h"

int main(int argc, char** argv) {
  using namespace memplan::cli;
  CLI::App app{"memplan: static memory planning for ML computation graphs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "memplan 0.1.0");
  const std::vector<Command> commands = {addPlanCommand(app), addVerifyCommand(app),
                                         addReplayCommand(app), addImportCommand(app),
                                         addAlgorithmsCommand(app), addReportCommand(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }
  try {
    for (const Command& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const memplan::InputError& e) {
    std::cerr << "memplan: " << inFlagTerms(e.what()) << "\n";
    return kExitBadInput;
  } catch (const memplan::PlanError& e) {
    std::cerr << "memplan: " << inFlagTerms(e.what()) << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "memplan: out of memory\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    // Not expected: every reader turns bad input into InputError. Still a
    // refusal of this input, never a crash.
    std::cerr << "memplan: error: " << e.what() << "\n";
    return kExitBadInput;
  }
  return kExitBadInput;
}

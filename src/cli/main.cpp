// memplan command line: plan, verify, replay, import, algorithms, report.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli.h"
#include "memplan/types.h"

namespace {

using namespace memplan::cli;

// Every message is one line: "memplan: ...", escaped where not printable.
int report(const std::string& message, int code) {
  std::cerr << "memplan: " << memplan::printable(message, 4000) << "\n";
  return code;
}

// Whether everything written to standard output reached it: a full disk or a
// closed stdout loses a command's product (import's graph, --json), so it
// is an error like a failed -o, not a success.
std::optional<std::string> stdoutError() {
  errno = 0;
  std::cout.flush();
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) != 0 || !std::cout;
  if (!failed) return std::nullopt;
  return std::string("standard output: write failed") + (errno ? std::string(": ") + std::strerror(errno) : "");
}

std::vector<std::string> commandNames(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

// "--flag" and "-f" spellings of a command's options (and the app's own).
std::vector<std::string> optionNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

bool isOption(const std::vector<std::string>& names, const std::string& arg) {
  return std::find(names.begin(), names.end(), arg) != names.end();
}

bool looksLikeNumber(const std::string& arg) {
  return arg.size() > 1 && arg[0] == '-' && (std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.');
}

// CLI11's parse errors, worded for memplan: an unknown command or option
// names the closest known one.
std::string describe(CLI::App& app, int argc, char** argv, const CLI::ParseError& e) {
  const std::vector<std::string> commands = commandNames(app);
  if (argc < 2) return "a command is required (" + CLI::detail::join(commands, ", ") + "); see memplan --help";
  const std::string first = argv[1];
  if (first.empty() || first[0] != '-') {
    if (!isOption(commands, first)) {
      const std::string guess = memplan::closest(first, commands);
      return "unknown command '" + first + "'" + (guess.empty() ? "" : "; did you mean " + guess + "?") +
             " (commands: " + CLI::detail::join(commands, ", ") + ")";
    }
    CLI::App* sub = app.get_subcommand(first);
    std::vector<std::string> known = optionNames(*sub);
    for (const std::string& n : optionNames(app)) known.push_back(n);
    for (int i = 2; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--") break;
      if (arg.size() < 2 || arg[0] != '-' || looksLikeNumber(arg)) continue;
      arg = arg.substr(0, arg.find('='));
      // Short flags may be bundled ("-qo"): check only long ones and "-x".
      if (arg[1] != '-' && arg.size() > 2) continue;
      if (isOption(known, arg)) continue;
      const std::string guess = memplan::closest(arg, known);
      return "unknown option '" + arg + "' for '" + first + "'" +
             (guess.empty() ? "" : "; did you mean " + guess + "?") + " (see memplan " + first +
             " --help)";
    }
    return first + ": " + e.what();
  }
  return e.what();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"memplan: static memory planning for ML computation graphs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "memplan 0.1.0");
  const std::vector<Command> commands = {addPlanCommand(app), addVerifyCommand(app),
                                         addReplayCommand(app), addImportCommand(app),
                                         addAlgorithmsCommand(app), addReportCommand(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    const int code = app.exit(e);  // --help, --version
    if (const auto error = stdoutError()) return report(*error, kExitBadInput);
    return code;
  } catch (const CLI::ParseError& e) {
    return report(describe(app, argc, argv, e), kExitBadInput);
  }
  memplan::removeTemporariesOnSignals();
  try {
    for (const Command& c : commands)
      if (c.app->parsed()) {
        // Every file the command writes, all together or none: a run that
        // fails (an exception, exit code 1) leaves the targets as they were.
        memplan::OutputTransaction outputs;
        const int code = c.run();
        // Before outputs that are the standard output; a product lost
        // there fails the run whatever its verdict.
        if (const auto error = stdoutError()) return report(*error, kExitBadInput);
        if (code != kExitOk) return code;
        outputs.commit();
        return code;
      }
  } catch (const memplan::InputError& e) {
    return report(memplan::inShellTerms(e.what(), memplan::Shell::Cli), kExitBadInput);
  } catch (const memplan::CapacityError& e) {
    return report(std::string("does not fit: ") + e.what(), kExitDoesNotFit);
  } catch (const memplan::PlanError& e) {
    return report(memplan::inShellTerms(e.what(), memplan::Shell::Cli), kExitBadInput);
  } catch (const std::bad_alloc&) {
    return report("out of memory", kExitBadInput);
  } catch (const std::exception& e) {
    // Not expected: every reader turns bad input into InputError. Still a
    // refusal of this input, never a crash.
    return report(std::string("error: ") + e.what(), kExitBadInput);
  }
  return kExitBadInput;
}

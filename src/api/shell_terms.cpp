// The library's names in the words of each shell (memplan.h, inShellTerms):
// one table for the CLI's flags and Python's keywords, so that an error
// raised by the library reads as the user wrote the call.
#include <regex>
#include <string>
#include <string_view>

#include "memplan/memplan.h"

namespace memplan {
namespace {

// "?x3x?x?" -> "[?, 3, ?, ?]"; a placeholder ("DIMS") stays as it is.
std::string pythonShape(const std::string& dims) {
  if (dims.find_first_not_of("0123456789?x") != std::string::npos) return dims;
  std::string out = "[";
  for (char c : dims) out += c == 'x' ? std::string(", ") : std::string(1, c);
  return out + "]";
}

// "--input-shape a=?x3 --input-shape b=2x?" -> "input_shapes={'a': [?, 3], 'b': [2, ?]}".
std::string pythonInputShapes(const std::string& message) {
  static const std::regex run(R"(--input-shape [^\s=]+=[^\s,;)]+( --input-shape [^\s=]+=[^\s,;)]+)*)");
  static const std::regex one(R"(--input-shape ([^\s=]+)=([^\s,;)]+))");
  std::string out;
  auto last = message.cbegin();
  for (std::sregex_iterator it(message.begin(), message.end(), run), end; it != end; ++it) {
    out.append(last, (*it)[0].first);
    const std::string flags = it->str();
    std::string dict;
    for (std::sregex_iterator f(flags.begin(), flags.end(), one); f != end; ++f)
      dict += (dict.empty() ? "" : ", ") + ("'" + (*f)[1].str() + "': ") + pythonShape((*f)[2]);
    out += "input_shapes={" + dict + "}";
    last = (*it)[0].second;
  }
  return out.append(last, message.cend());
}

// The import and planning messages name the CLI's flags with their syntax
// ("--dim SYMBOL=N"); Python users passed keyword arguments.
std::string cliFlagsInPythonTerms(const std::string& message) {
  struct Phrase {
    std::regex cli;
    const char* python;
  };
  static const Phrase kPhrases[] = {
      {std::regex(R"(--input-shape:)"), "input_shapes:"},
      {std::regex(R"(--dim ([^\s=:]+)=([^\s,;)]+))"), "dims={'$1': $2}"},
      {std::regex(R"(--dim ([^\s=:]+):)"), "dims[$1]:"},
      {std::regex(R"(--dim:)"), "dims:"},
      {std::regex(R"(--unknown-size-bytes (N|[0-9]+))"), "unknown_size_bytes=$1"},
      {std::regex(R"(--unknown-size-bytes)"), "unknown_size_bytes"},
      {std::regex(R"(--allow-pinned-overlap)"), "allow_pinned_overlap=True"},
      {std::regex(R"(--per-device)"), "per_device=True"},
      {std::regex(R"(--c-prefix:)"), "prefix:"},
  };
  std::string out = pythonInputShapes(message);
  for (const Phrase& p : kPhrases) out = std::regex_replace(out, p.cli, p.python);
  return out;
}

}  // namespace

std::string inShellTerms(const std::string& message, Shell shell) {
  // The one table of the library's names and what users type.
  struct Term {
    std::string_view field, cli, python;
  };
  static const Term kTerms[] = {
      {"PlanRequest.algorithm", "--algorithm", "algorithm"},
      {"PlanRequest.options.alignment", "--alignment", "alignment"},
      {"PlanRequest.options.alloc_graph_input", "--no-plan-inputs", "plan_inputs"},
      {"PlanRequest.options.alloc_graph_output", "--no-plan-outputs", "plan_outputs"},
      {"PlanRequest.options.alloc_mutable_buffers", "--no-plan-mutable-buffers", "plan_mutable_buffers"},
      {"PlanRequest.options.per_device", "--per-device", "per_device"},
      {"PlanRequest.options.share_mutable_buffers", "--share-mutable-buffers", "share_mutable_buffers"},
      {"PlanRequest.options.capacities", "--capacity", "capacities"},
      {"PlanRequest.options.spill_order", "--spill-order", "spill_order"},
      {"PlanRequest.options.allow_pinned_overlap", "--allow-pinned-overlap", "allow_pinned_overlap"},
      {"PlanRequest.extra_padding", "--extra-padding", "extra_padding"},
      {"PlanRequest.params.effort", "--effort", "effort"},
      {"PlanRequest.params.time_limit_seconds", "--time-limit", "time_limit"},
      {"PlanRequest.reorder", "--reorder", "reorder"},
      {"ImportOptions.input_shapes", "--input-shape", "input_shapes"},
      {"ImportOptions.dims", "--dim", "dims"},
      {"ImportOptions.alias_views", "--alias-views", "alias_views"},
      {"ImportOptions.unknown_size_bytes", "--unknown-size-bytes", "unknown_size_bytes"},
      {"ImportOptions.ignore_offline_plan", "--ignore-offline-plan", "ignore_offline_plan"},
      {"writeCHeader", "--emit-c", "Plan.emit_c"},
      {"writeTflite", "--write-tflite", "Plan.write_tflite"},
      {"writePte", "--write-pte", "Plan.write_pte"},
  };
  for (const Term& t : kTerms)
    if (message.starts_with(t.field) && message.size() > t.field.size() && message[t.field.size()] == ':')
      return std::string(shell == Shell::Cli ? t.cli : t.python) + message.substr(t.field.size());
  // std::regex recurses once per character matched: a message quoting
  // names of hostile length keeps the CLI's words rather than the stack.
  constexpr std::size_t kMaxRephrased = 4096;
  return shell == Shell::Cli || message.size() > kMaxRephrased || message.find("--") == std::string::npos
             ? message
             : cliFlagsInPythonTerms(message);
}

}  // namespace memplan

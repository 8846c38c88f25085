// The library entry point (memplan/memplan.h), continued: plans an input
// carries in itself, TensorFlow Lite Micro beside a plan, the exporters, and
// messages in the shells' terms. The CLI and the Python module call these;
// neither holds any of it.
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "plan/plan_order.h"

#include "memplan/memplan.h"
#include "plan/tflm_analysis.h"
#include "export/tflite_writer.h"

namespace memplan {
namespace {

const Model* tfliteMicroModel(const Input& input) {
  return input.format->can(kRunsOnTfliteMicro) ? input.model() : nullptr;
}

std::string fileName(const Input& input) {
  return std::filesystem::path(input.source.name).filename().string();
}

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

// The plan a written .tflite carries, read back as `memplan verify` reads
// it, passes the same check (writeTfliteOfflinePlan has already compared
// the bytes): a plan memplan writes never fails its own verify.
void checkWrittenTflitePlan(const Input& input, const std::string& written, const Plan& plan) {
  ImportOptions options = input.import_options;
  options.ignore_offline_plan = false;
  const std::string name = input.source.name + " (rewritten)";
  const Input back = readInput(std::string_view(written), name, options);
  const VerifyResult verdict = verifyCarriedPlan(back, carriedPlan(back, plan.options.allow_pinned_overlap));
  if (!verdict.ok())
    throw PlanError(fmt::format("{}: the offline plan read back does not verify: {}; nothing written",
                                input.source.name, verdict.violations.front().message));
}

}  // namespace

Plan carriedPlan(const Input& input, bool allow_pinned_overlap) {
  if (const PteProgram* program = input.pte()) {
    Plan plan = embeddedPlan(*program);
    plan.source = input.source;
    plan.import_options = input.import_options;
    return plan;
  }
  bool pinned = false;
  if (const Model* m = input.model(); m && input.format->can(kCarriesPlan))
    for (const Tensor& t : m->tensors) pinned |= t.offset.has_value();
  if (!pinned)
    throw InputError(fmt::format("{}: carries no plan of its own (no pinned tensor, no TFLite Micro "
                                 "offline plan, not an ExecuTorch program); give a PLAN file",
                                 input.source.name));
  PlanOptions options;
  options.alignment = 1;  // pins are checked as they are: exact bytes
  options.allow_pinned_overlap = allow_pinned_overlap;
  return pinnedPlan(*input.model(), options);
}

VerifyResult verifyCarriedPlan(const Input& input, const Plan& plan) {
  if (const PteProgram* program = input.pte()) return verifyPte(*program, plan, true);
  VerifyResult r = verify(input, plan);
  // The verifier checks each graph; across graphs (a body's tensors over
  // its caller's) TFLite Micro's single time line decides.
  // A graph JSON's bodies are graphs of their own: only a .tflite's
  // subgraphs share one time line.
  const Model* m = tfliteMicroModel(input);
  if (!plan.options.allow_pinned_overlap && m && m->graphs.size() > 1)
    for (std::string& c : tflmPinConflicts(*m)) r.violations.push_back({0, std::move(c)});
  return r;
}

std::optional<TflmComparison> compareWithTflm(const Input& input, const Plan& plan) {
  const Model* m = tfliteMicroModel(input);
  if (!m || plan.graphs.empty()) return std::nullopt;
  const GraphPlan& main = plan.main();
  TflmComparison out;
  for (std::size_t id = 1; id < main.bufsizes.size(); ++id) {
    if (id > 1 && main.bufsizes[id] > 0) return std::nullopt;  // TFLite Micro has one arena
    out.plan += main.bufsizes[id];
  }
  Model unpinned = *m;  // what TFLite Micro plans when the model carries no plan
  for (Tensor& t : unpinned.tensors) t.offset.reset();
  out.tflm = tflmArenaBytes(unpinned);
  const TflmArenaEstimate arena = tflmArenaEstimate(*m, out.plan);
  out.arena_head = arena.head;
  out.arena_size = arena.total;
  return out;
}

std::optional<TflmCarriedArena> tflmCarriedArena(const Input& input) {
  const Model* m = tfliteMicroModel(input);
  if (!m) return std::nullopt;
  const TflmBuffers buffers = tflmBuffers(*m);
  TflmCarriedArena out;
  for (const Buffer& b : buffers.problem.buffers) out.placed_by_tflm += !b.fixed_offset;
  out.tensors = buffers.problem.buffers.size();
  out.head = makeAlgorithm("tflm_greedy")->solve(buffers.problem, AlgorithmParams{}).size;
  return out;
}

void writeCHeader(const std::filesystem::path& path, const Plan& plan, const Input& input,
                  CHeaderOptions options) {
  if (options.source.empty()) options.source = fileName(input);
  // The header's steps are node positions: the program that includes it
  // runs its nodes in its own order, which is not the plan's.
  if (plan.order_applied)
    throw InputError("PlanRequest.reorder: a C header carries no node order, and this plan is made "
                     "for a new one; plan the given order for it");
  writeFileAtomic(path, writeCHeader(plan, input.model(), options));
}

std::vector<std::string> writeTflite(const std::filesystem::path& path, const Plan& plan,
                                     const Input& input) {
  const Model* m = input.model();
  if (!input.format->can(kWritesTflite) || !m || !input.bytes)
    throw InputError(fmt::format("writeTflite: {} is not a .tflite model", input.source.name));
  const TfliteTensorIndex index = tfliteTensorIndex(*input.bytes, input.source.name);
  const std::vector<std::int32_t> offsets = tfliteOfflineOffsets(*m, plan, index);
  // A plan made for a new order runs in it: the operators are written so.
  const std::string bytes = plan.order_applied ? reorderTfliteOperators(*input.bytes, input.source.name,
                                                                        *m, changedOrders(plan.order))
                                               : *input.bytes;
  const std::string written = writeTfliteOfflinePlan(bytes, input.source.name, offsets);
  checkWrittenTflitePlan(input, written, plan);
  writeFileAtomic(path, written);
  if (m->graphs.size() < 2) return {};
  return {fmt::format("{}: the offline plan lists every subgraph's tensors, concatenated, as TFLite "
                      "Micro documents; its allocator (micro_allocation_info.cc) reads each "
                      "subgraph's entries from the start of the list, so check the control-flow "
                      "bodies on your TFLite Micro version",
                      path.string())};
}

void writePte(const std::filesystem::path& path, const Plan& plan, const Input& input) {
  if (!input.format->can(kWritesPte) || !input.pte())
    throw InputError(fmt::format("writePte: {} is not an ExecuTorch program (.pte)", input.source.name));
  // A plan made for a new order runs in it: the instructions are written so.
  const PlannedProgram planned(*input.pte(), plan);
  const PteProgram& program = planned.get();
  // writePte reads its result back and checks that the plan read back is
  // this one; this one must pass `memplan verify` (the Python exporter may
  // be handed ExecuTorch's unsafe plan, which the CLI never writes).
  const VerifyResult verdict = verifyPte(program, plan);
  if (!verdict.ok())
    throw PlanError(fmt::format("{}: the plan does not verify: {}; nothing written", input.source.name,
                                verdict.violations.front().message));
  const std::string written = writePte(program, plan);
  if (plan.order_applied) {
    // Read as a new file (lifetimes from its own order and plan), it must
    // pass `memplan verify` as it is.
    const PteProgram back = readPte(written, input.source.name + " (reordered)");
    const VerifyResult carried = verifyPte(back, embeddedPlan(back), true);
    if (!carried.ok())
      throw PlanError(fmt::format("{}: the reordered program's plan does not verify when read back: {}; "
                                  "nothing written",
                                  input.source.name, carried.violations.front().message));
  }
  writeFileAtomic(path, written);
}

void writeHtml(const std::filesystem::path& path, const Plan& plan, const Input& input,
               HtmlOptions options) {
  if (options.title.empty()) options.title = fileName(input);
  const Model* m = input.model();
  writeFileAtomic(path, renderHtml(plan, m ? &PlannedModel(*m, plan).get() : m, options));
}

void writeSvg(const std::filesystem::path& path, const Plan& plan, const Input& input,
              SvgOptions options) {
  if (options.title.empty()) options.title = fileName(input);
  const Model* m = input.model();
  writeFileAtomic(path, renderSvg(plan, m ? &PlannedModel(*m, plan).get() : m, options));
}

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

// Flags shared by the commands, and what they mean to the library.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli.h"
#include "memplan/types.h"
#include "memplan/limits.h"

namespace memplan::cli {
namespace {

std::int64_t parseInt(const std::string& text, const std::string& what) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty())
    throw InputError(fmt::format("{}: expected an integer, got '{}'", what, text));
  return value;
}

// NAME=VALUE -> (NAME, VALUE); the name may itself contain '='? No: split at the last '='.
std::pair<std::string, std::string> splitAssignment(const std::string& text, const std::string& flag) {
  const auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError(fmt::format("{}: expected NAME=VALUE, got '{}'", flag, text));
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace

void printWarnings(const std::vector<std::string>& warnings) {
  if (warnings.empty()) return;
  std::fprintf(stderr, "memplan: warning: %s", printable(warnings.front(), 4000).c_str());
  if (warnings.size() > 1) std::fprintf(stderr, " (and %zu more like it)", warnings.size() - 1);
  std::fprintf(stderr, "\n");
}

void printEachWarning(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings)
    std::fprintf(stderr, "memplan: warning: %s\n", printable(w, 4000).c_str());
}

namespace {

// "a, b, c and 4 more": the first few names of a list.
std::string firstFew(const std::vector<std::string>& names, std::size_t few = 5) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < few; ++i)
    out += (i ? ", " : "") + ("'" + names[i] + "'");
  if (names.size() > few) out += fmt::format(" and {} more", names.size() - few);
  return out;
}

}  // namespace

void InputFlags::checkApplies(const InputFormat& format, const std::string& path) const {
  const std::pair<ImportOption, std::pair<const char*, bool>> given[] = {
      {kImportInputShapes, {"--input-shape", !input_shapes.empty()}},
      {kImportDims, {"--dim", !dims.empty()}},
      {kImportAliasViews, {"--alias-views", alias_views}},
      {kImportAliasViews, {"--no-alias-views", no_alias_views}},
      {kImportUnknownSizeBytes, {"--unknown-size-bytes", !unknown_size_bytes.empty()}},
      {kImportIgnoreOfflinePlan, {"--ignore-offline-plan", ignore_offline_plan}},
  };
  for (const auto& [bit, flag] : given)
    if (flag.second && !(format.import_options & bit))
      throw InputError(fmt::format("{} applies to {} only; {} is {}", flag.first, formatsReading(bit), path,
                                   format.description));
}

Input InputFlags::read(const std::string& path, const ImportOptions& base) const {
  const std::string bytes = readFile(path);
  checkApplies(detectInputFormat(path, bytes), path);
  return readInput(bytes, path, toImportOptions(base));
}

std::vector<std::string> inputWarnings(const Input& input) {
  std::vector<std::string> out;
  // A .pte's unplanned tensors are the program's choice (no allocation
  // info: inputs and outputs its runtime is given), not a guess of memplan's.
  if (!input.model() || input.pte()) return out;
  const Model& m = *input.model();
  const Bytes guess = input.import_options.unknown_size_bytes;
  std::vector<std::string> guessed, unplanned;
  for (const Tensor& t : m.tensors) {
    if (t.kind == TensorKind::Constant) continue;
    if (t.dynamic_unbound) {
      unplanned.push_back(t.name);
      continue;
    }
    // Sized by the flag: no size from shape and dtype, the flag's bytes.
    if (guess > 0 && t.nbytes == guess && !denseBytes(t.shape, t.dtype)) guessed.push_back(t.name);
  }
  if (!guessed.empty())
    out.push_back(fmt::format("{} tensor{} of unknown size planned at --unknown-size-bytes {}: {} "
                              "(the runtime must not exceed it)",
                              guessed.size(), guessed.size() == 1 ? "" : "s", guess, firstFew(guessed)));
  if (!unplanned.empty())
    out.push_back(fmt::format("{} tensor{} left unplanned (strings, sequences or sizes known only at "
                              "run time; the runtime allocates {}): {}",
                              unplanned.size(), unplanned.size() == 1 ? "" : "s",
                              unplanned.size() == 1 ? "it" : "them", firstFew(unplanned)));
  return out;
}

void checkOutputExtension(const std::string& path, const std::vector<std::string>& allowed,
                          const std::string& flag) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (std::find(allowed.begin(), allowed.end(), ext) != allowed.end()) return;
  // A stream (/dev/stdout, /dev/null, a FIFO) takes the first format.
  std::error_code ec;
  const auto type = std::filesystem::status(path, ec).type();
  if (type == std::filesystem::file_type::character || type == std::filesystem::file_type::fifo ||
      path.rfind("/dev/", 0) == 0 || path.rfind("/proc/self/fd/", 0) == 0)
    return;
  std::string list;
  for (std::size_t i = 0; i < allowed.size(); ++i)
    list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
  throw InputError(fmt::format("{} {}: memplan writes {} files{}", flag, path, list,
                               ext.empty() ? " (no extension given)" : ", not " + ext));
}

Bytes parseBytes(const std::string& text, const std::string& what) {
  static const std::pair<const char*, Bytes> kUnits[] = {
      {"GiB", Bytes{1} << 30}, {"MiB", Bytes{1} << 20}, {"KiB", Bytes{1} << 10},
      {"GB", 1000000000},      {"MB", 1000000},         {"KB", 1000},
      {"kB", 1000},            {"B", 1},
  };
  std::string number = text;
  Bytes unit = 1;
  for (const auto& [suffix, scale] : kUnits) {
    const std::string s = suffix;
    if (text.size() > s.size() && text.compare(text.size() - s.size(), s.size(), s) == 0) {
      number = text.substr(0, text.size() - s.size());
      unit = scale;
      break;
    }
  }
  std::int64_t value = 0;
  const char* end = number.data() + number.size();
  const auto [ptr, ec] = std::from_chars(number.data(), end, value);
  if (number.empty() || ptr != end || ec == std::errc::invalid_argument)
    throw InputError(fmt::format("{}: expected a byte count like 4096, 256KiB or 1MiB (units B, KB, "
                                 "MB, GB, KiB, MiB, GiB), got '{}'", what, text));
  auto bytes = value < 0 || ec != std::errc() ? std::nullopt : checkedMul(static_cast<Bytes>(value), unit);
  if (!bytes) throw InputError(fmt::format("{}: '{}' is not a byte size in [0, 2^62]", what, text));
  return *bytes;
}

void InputFlags::addTo(CLI::App& app) {
  app.add_option("--input-shape", input_shapes,
                 "Bind an input's shape: NAME=1x3x224x224 (ONNX; repeatable)");
  app.add_option("--dim", dims, "Bind a symbolic dimension: SYMBOL=VALUE (ONNX; repeatable)");
  app.add_flag("--alias-views", alias_views,
               "Let Reshape/Flatten/Squeeze/Unsqueeze/Identity results share their input's bytes "
               "(ONNX; only for runtimes that implement them as views)");
  app.add_flag("--no-alias-views", no_alias_views,
               "Copy view results (the default; overrides what a plan file recorded)");
  app.add_option("--unknown-size-bytes", unknown_size_bytes,
                 "Plan tensors whose size cannot be inferred at this many bytes");
  app.add_flag("--ignore-offline-plan", ignore_offline_plan,
               "TFLite: ignore a TFLite Micro offline plan the model carries (plan afresh)");
}

ImportOptions InputFlags::toImportOptions(const ImportOptions& base) const {
  ImportOptions o = base;
  for (const std::string& s : input_shapes) {
    auto [name, value] = splitAssignment(s, "--input-shape");
    std::vector<std::int64_t> shape;
    std::size_t start = 0;
    while (start <= value.size()) {
      const auto x = value.find('x', start);
      const std::string part = value.substr(start, x == std::string::npos ? std::string::npos : x - start);
      const std::int64_t d = parseInt(part, "--input-shape " + name);
      if (d < 0) throw InputError(fmt::format("--input-shape {}: negative dimension {}", name, d));
      shape.push_back(d);
      if (shape.size() > 64) throw InputError("--input-shape " + name + ": more than 64 dimensions");
      if (x == std::string::npos) break;
      start = x + 1;
    }
    o.input_shapes[name] = shape;
  }
  for (const std::string& s : dims) {
    auto [name, value] = splitAssignment(s, "--dim");
    const std::int64_t d = parseInt(value, "--dim " + name);
    if (d < 0) throw InputError(fmt::format("--dim {}: negative value {}", name, d));
    o.dims[name] = d;
  }
  if (alias_views) o.alias_views = true;
  if (no_alias_views) o.alias_views = false;
  if (ignore_offline_plan) o.ignore_offline_plan = true;
  if (!unknown_size_bytes.empty())
    o.unknown_size_bytes = parseBytes(unknown_size_bytes, "--unknown-size-bytes");
  return o;
}

void PlanFlags::addTo(CLI::App& app) {
  app.add_option("-a,--algorithm", algorithm,
                 "Algorithm: auto (default), naive, greedy, greedy_no_overlap, suite, "
                 "best_fit, exact, ... (`memplan algorithms` lists them)");
  app.add_option("--alignment", alignment, "Planning alignment in bytes (default 16; CSV: 1)");
  app.add_option("--extra-padding", extra_padding, "Bytes added at the end of each used pool");
  app.add_flag("--no-plan-inputs", no_plan_inputs, "Leave graph inputs to the caller");
  app.add_flag("--no-plan-outputs", no_plan_outputs, "Leave graph outputs to the caller");
  app.add_flag("--no-plan-mutable-buffers", no_plan_mutable, "Leave mutable buffers unplanned");
  app.add_flag("--per-device", per_device,
               "One set of pools per device present, as ExecuTorch's enable_non_cpu_memory_planning: "
               "CPU:0 first, then cuda, then other devices");
  app.add_flag("--share-mutable-buffers", share_mutable_buffers,
               "Place state shared by the methods exactly as ExecuTorch's share_mutable_buffers "
               "(pool 2); without it, memplan's own placement");
  app.add_option("--effort", effort, "Scale the search work budget (default 1)")
      ->check(CLI::Range(0.0, 1000.0));
  app.add_option("--time-limit", time_limit, "Optional wall-clock cap on search, in seconds")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--capacity", capacities, "Pool capacity: MEM_ID=BYTES, e.g. 1=256KiB (repeatable)");
  app.add_option("--spill-order", spill_order,
                 "Pools to spill into when one overflows, in order, e.g. --spill-order 1 2")
      ->delimiter(',');
  app.add_flag("--allow-pinned-overlap", allow_pinned_overlap,
               "Accept pinned tensors that share bytes while alive (TFLite Micro offline plans "
               "may overlap on purpose); plan the rest around them");
  app.add_flag("--reorder", reorder,
               "Run the nodes in an order that needs less memory, within the data dependencies; "
               "the plan file records the order");
  app.add_flag("--reorder-report", reorder_report,
               "Search for such an order and report what it would save; plan the given order");
}

void parseCapacities(const std::vector<std::string>& flags, std::vector<std::optional<Bytes>>& out) {
  for (const std::string& c : flags) {
    const auto eq = c.find('=');
    if (eq == std::string::npos) throw InputError("--capacity: expected MEM_ID=BYTES, got '" + c + "'");
    const auto id = parseBytes(c.substr(0, eq), "--capacity mem_id");
    if (id < 1 || id > limits::kMaxMemId)
      throw InputError(fmt::format("--capacity: mem_id must be in [1, {}], got '{}'", limits::kMaxMemId, c));
    if (out.size() <= id) out.resize(id + 1);
    out[id] = parseBytes(c.substr(eq + 1), "--capacity " + c.substr(0, eq));
  }
}

PlanRequest PlanFlags::toRequest() const {
  PlanRequest r;
  r.algorithm = algorithm;
  if (!alignment.empty()) r.options.alignment = parseBytes(alignment, "--alignment");
  if (!extra_padding.empty()) r.extra_padding = parseBytes(extra_padding, "--extra-padding");
  r.options.alloc_graph_input = !no_plan_inputs;
  r.options.alloc_graph_output = !no_plan_outputs;
  r.options.alloc_mutable_buffers = !no_plan_mutable;
  r.options.per_device = per_device;
  r.options.share_mutable_buffers = share_mutable_buffers;
  parseCapacities(capacities, r.options.capacities);
  r.options.spill_order = spill_order;
  r.options.allow_pinned_overlap = allow_pinned_overlap;
  r.params.effort = effort;
  r.params.time_limit_seconds = time_limit;
  if (reorder_report) r.reorder = ReorderMode::Report;
  if (reorder) r.reorder = ReorderMode::Apply;
  return r;
}

}  // namespace memplan::cli

// Flags shared by the commands, and what they mean to the library.
#include <charconv>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/cli.h"
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
  std::fprintf(stderr, "memplan: warning: %s", warnings.front().c_str());
  if (warnings.size() > 1) std::fprintf(stderr, " (and %zu more like it)", warnings.size() - 1);
  std::fprintf(stderr, "\n");
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
  const std::int64_t value = parseInt(number, what);
  auto bytes = value < 0 ? std::nullopt : checkedMul(static_cast<Bytes>(value), unit);
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
  app.add_flag("--per-device", per_device, "One set of pools per device: [0, cpu, other devices]");
  app.add_option("--effort", effort, "Scale the search work budget (default 1)")
      ->check(CLI::Range(0.0, 1000.0));
  app.add_option("--time-limit", time_limit, "Optional wall-clock cap on search, in seconds")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--capacity", capacities, "Pool capacity: MEM_ID=BYTES, e.g. 1=256KiB (repeatable)");
  app.add_option("--spill-order", spill_order,
                 "Pools to spill into when one overflows, in order, e.g. --spill-order 1 2")
      ->delimiter(',');
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
  for (const std::string& c : capacities) {
    const auto eq = c.find('=');
    if (eq == std::string::npos) throw InputError("--capacity: expected MEM_ID=BYTES, got '" + c + "'");
    const auto id = parseBytes(c.substr(0, eq), "--capacity mem_id");
    if (id < 1 || id > limits::kMaxMemId)
      throw InputError(fmt::format("--capacity: mem_id must be in [1, {}], got '{}'", limits::kMaxMemId, c));
    if (r.options.capacities.size() <= id) r.options.capacities.resize(id + 1);
    r.options.capacities[id] = parseBytes(c.substr(eq + 1), "--capacity " + c.substr(0, eq));
  }
  r.options.spill_order = spill_order;
  r.params.effort = effort;
  r.params.time_limit_seconds = time_limit;
  return r;
}

std::string inFlagTerms(const std::string& message) {
  static const std::pair<std::string_view, std::string_view> kFlags[] = {
      {"PlanRequest.algorithm", "--algorithm"},
      {"PlanRequest.options.alignment", "--alignment"},
      {"PlanRequest.extra_padding", "--extra-padding"},
      {"PlanRequest.options.spill_order", "--spill-order"},
      {"PlanRequest.options.capacities", "--capacity"},
      {"PlanRequest.params.effort", "--effort"},
      {"PlanRequest.params.time_limit_seconds", "--time-limit"},
  };
  for (const auto& [field, flag] : kFlags)
    if (message.starts_with(field) && message.size() > field.size() && message[field.size()] == ':')
      return std::string(flag) + message.substr(field.size());
  return message;
}

}  // namespace memplan::cli

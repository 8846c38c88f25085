// Reading inputs and planning them, for every command.
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "cli/cli.h"
#include "memplan/progress.h"

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
  app.add_option("--unknown-size-bytes", unknown_size_bytes,
                 "Plan tensors whose size cannot be inferred at this many bytes");
}

ImportOptions InputFlags::toImportOptions() const {
  ImportOptions o;
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
  o.alias_views = alias_views;
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

LoadedInput loadInput(const std::string& path, const ImportOptions& options) {
  LoadedInput in;
  in.path = path;
  std::string bytes = readFile(path);
  in.kind = detectInputKind(path, bytes);
  switch (in.kind) {
    case InputKind::GraphJson: in.model = readGraphJson(bytes, path); break;
    case InputKind::SpecList: in.spec_list = readSpecListJson(bytes, path); break;
    case InputKind::Csv: in.buffers = readMiniMallocCsv(bytes, path); break;
    case InputKind::Onnx: in.model = importOnnx(bytes, path, options); break;
    case InputKind::Tflite: in.model = importTflite(bytes, path, options); break;
    case InputKind::Pte:
      in.pte = std::make_shared<const PteProgram>(readPte(std::move(bytes), path));
      in.model = in.pte->model;
      break;
  }
  return in;
}

namespace {

PlanRequest makeRequest(const PlanFlags& flags, Bytes default_alignment) {
  PlanRequest r;
  r.algorithm = flags.algorithm.empty() ? "auto" : flags.algorithm;
  if (!findAlgorithmInfo(r.algorithm)) {
    std::string known;
    for (const auto& n : algorithmNames()) known += (known.empty() ? "" : ", ") + n;
    throw InputError(fmt::format("--algorithm: unknown algorithm '{}' (known: {})", r.algorithm, known));
  }
  r.options.alignment =
      flags.alignment.empty() ? default_alignment : parseBytes(flags.alignment, "--alignment");
  if (r.options.alignment == 0 || (r.options.alignment & (r.options.alignment - 1)) != 0 ||
      r.options.alignment > (Bytes{1} << 30))
    throw InputError(fmt::format("--alignment: {} is not a power of two <= 2^30", r.options.alignment));
  if (!flags.extra_padding.empty()) r.extra_padding = parseBytes(flags.extra_padding, "--extra-padding");
  r.options.alloc_graph_input = !flags.no_plan_inputs;
  r.options.alloc_graph_output = !flags.no_plan_outputs;
  r.options.alloc_mutable_buffers = !flags.no_plan_mutable;
  r.options.per_device = flags.per_device;
  for (const std::string& c : flags.capacities) {
    const auto eq = c.find('=');
    if (eq == std::string::npos) throw InputError("--capacity: expected MEM_ID=BYTES, got '" + c + "'");
    const auto id = parseBytes(c.substr(0, eq), "--capacity mem_id");
    if (id < 1 || id > 1024) throw InputError("--capacity: mem_id must be in [1, 1024], got '" + c + "'");
    if (r.options.capacities.size() <= id) r.options.capacities.resize(id + 1);
    r.options.capacities[id] = parseBytes(c.substr(eq + 1), "--capacity " + c.substr(0, eq));
  }
  for (MemId m : flags.spill_order)
    if (m < 1 || m > 1024) throw InputError(fmt::format("--spill-order: mem_id {} not in [1, 1024]", m));
  r.options.spill_order = flags.spill_order;
  r.params.effort = flags.effort;
  r.params.time_limit_seconds = flags.time_limit;
  return r;
}

// A MiniMalloc buffer list as specs: closed lifetimes [lower, upper - 1].
GraphSpecs specsFromBuffers(const BufferList& list, Bytes alignment) {
  GraphSpecs specs;
  TimeValue steps = 0;
  for (const Buffer& b : list.problem.buffers) {
    Spec s;
    s.id = static_cast<SpecId>(specs.specs.size());
    s.name = list.ids.at(s.id);
    s.nbytes = b.size;
    s.alignment = std::max(alignment, b.alignment);
    s.first = b.start;
    s.last = b.end - 1;
    s.planned = true;
    steps = std::max(steps, b.end);
    specs.specs.push_back(std::move(s));
  }
  specs.steps = steps;
  return specs;
}

}  // namespace

Plan skeletonPlan(const LoadedInput& in, const PlanOptions& plan_options) {
  Plan plan;
  plan.options = plan_options;
  if (in.model) {
    PlanRequest r;
    r.options = plan_options;
    plan.graphs.resize(in.model->graphs.size());
    // Bodies of control-flow nodes plan their inputs only for map/scan.
    std::vector<PlanOptions> options(in.model->graphs.size(), r.options);
    for (GraphId g = 0; g < static_cast<GraphId>(in.model->graphs.size()); ++g)
      for (const Node& n : in.model->graphs[g].nodes)
        for (GraphId s : n.subgraphs) {
          options[s] = options[g];
          options[s].alloc_graph_input = n.kind == NodeKind::Map || n.kind == NodeKind::Scan;
          options[s].alloc_graph_output = true;
        }
    for (GraphId g = 0; g < static_cast<GraphId>(in.model->graphs.size()); ++g) {
      plan.graphs[g].graph = g;
      plan.graphs[g].parent = in.model->graphs[g].parent;
      plan.graphs[g].specs = collectSpecs(*in.model, g, options[g]);
    }
  } else if (in.spec_list) {
    plan.graphs.resize(1);
    plan.graphs[0].specs = in.spec_list->specs;
  } else {
    plan.graphs.resize(1);
    plan.graphs[0].specs = specsFromBuffers(*in.buffers, plan_options.alignment);
  }
  return plan;
}

Plan planFromCsvSolution(const LoadedInput& in, const std::string& text, const std::string& path) {
  if (!in.buffers)
    throw InputError(fmt::format("{}: a CSV solution can only be checked against a CSV buffer list", path));
  const BufferList solution = readMiniMallocCsv(text, path);
  if (solution.offsets.empty()) throw InputError(fmt::format("{}: no 'offset' column", path));
  if (solution.ids != in.buffers->ids)
    throw InputError(fmt::format("{}: rows do not match {} (ids must be the same, in the same order)",
                                 path, in.path));
  Plan plan;
  plan.options.alignment = 1;
  plan.graphs.resize(1);
  GraphPlan& g = plan.graphs[0];
  g.specs = specsFromBuffers(*in.buffers, 1);
  Bytes height = 0;
  for (std::size_t i = 0; i < solution.offsets.size(); ++i) {
    if (!solution.offsets[i])
      throw InputError(fmt::format("{}: row for '{}' has no offset", path, solution.ids[i]));
    const Spec& s = g.specs.specs[i];
    const Offset offset = *solution.offsets[i];
    const Bytes size = *alignUp(s.nbytes, s.alignment);  // reader bounds both
    g.allocations.push_back({s.id, 1, 0, offset, size});
    height = std::max(height, *checkedAdd(offset, size));
  }
  g.bufsizes = {0, height};
  g.pool_devices.assign(2, Device{});
  PoolInfo pool;
  pool.mem_id = 1;
  pool.size = height;
  pool.lower_bound = lowerBound(in.buffers->problem);
  pool.buffers = g.allocations.size();
  pool.algorithm = "file";
  g.pools.push_back(pool);
  return plan;
}

Plan planInput(const LoadedInput& in, const PlanFlags& flags, bool with_progress) {
  std::optional<ProgressLine> progress;  // shown only on a terminal, after ~1 s
  if (with_progress) progress.emplace();
  const auto watch = [&](PlanRequest& r) {
    if (progress) r.params.progress = progress->callback();
  };
  if (in.pte) {  // every method, memory ids kept; XNNPACK programs padded as ExecuTorch does
    PlanRequest r = makeRequest(flags, 16);
    if (flags.extra_padding.empty()) r.extra_padding = pteDefaultExtraPadding(*in.pte);
    watch(r);
    return planPte(*in.pte, r);
  }
  if (in.model) {
    PlanRequest r = makeRequest(flags, 16);
    watch(r);
    return planModel(*in.model, r);
  }
  Plan plan;
  const auto started = std::chrono::steady_clock::now();
  if (in.spec_list) {
    const SpecListCase& c = *in.spec_list;
    PlanFlags f = flags;
    if (f.algorithm.empty()) f.algorithm = c.algorithm;
    PlanRequest r = makeRequest(f, c.alignment);
    r.extra_padding = flags.extra_padding.empty() ? c.extra_padding : r.extra_padding;
    watch(r);
    GraphSpecs specs = c.specs;
    for (Spec& s : specs.specs) s.alignment = r.options.alignment;
    plan.algorithm = r.algorithm;
    plan.options = r.options;
    plan.graphs.push_back(planSpecs(std::move(specs), r, c.input_mem_buffer_sizes));
  } else {
    PlanRequest r = makeRequest(flags, 1);
    watch(r);
    plan.algorithm = r.algorithm;
    plan.options = r.options;
    plan.graphs.push_back(planSpecs(specsFromBuffers(*in.buffers, r.options.alignment), r, {}));
  }
  GraphPlan& g = plan.graphs[0];
  if (g.pool_devices.size() != g.bufsizes.size()) g.pool_devices.assign(g.bufsizes.size(), Device{});
  plan.planning_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return plan;
}

}  // namespace memplan::cli

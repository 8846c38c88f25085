// The library entry point (memplan/memplan.h): any input, one request, one
// plan; and the way back from a plan file to the input's specs.
#include <algorithm>
#include <chrono>
#include <variant>

#include <fmt/format.h>

#include "algorithms/placement_error.h"
#include "import/minimalloc_csv.h"
#include "support/sha256.h"
#include "support/text.h"
#include "memplan/limits.h"
#include "memplan/memplan.h"
#include "plan/pinned.h"
#include "plan/plan_order.h"
#include "verify/replay.h"

namespace memplan {
namespace {

[[noreturn]] void requestError(std::string_view field, const std::string& what) {
  throw InputError(fmt::format("PlanRequest.{}: {}", field, what));
}

// A MiniMalloc buffer list as specs: closed lifetimes [lower, upper - 1].
GraphSpecs specsFromBuffers(const BufferList& list, Bytes alignment) {
  GraphSpecs specs;
  specs.specs.reserve(list.problem.buffers.size());  // no slack from doubling (256 B a spec)
  TimeValue steps = 0;
  for (const Buffer& b : list.problem.buffers) {
    Spec s;
    s.id = static_cast<SpecId>(specs.specs.size());
    s.name = list.ids.at(s.id);
    s.nbytes = b.size;
    s.alignment = std::max(alignment, b.alignment);
    s.first = b.start;
    s.last = b.end - 1;
    s.offset = b.fixed_offset;
    s.hint = b.hint;
    s.gaps = b.gaps;
    s.planned = true;
    steps = std::max(steps, b.end);
    specs.specs.push_back(std::move(s));
  }
  specs.steps = steps;
  return specs;
}

// Every tensor of the input, aligned, side by side (saturating at kMaxBytes):
// no pool can be larger.
Bytes naiveBytes(const Input& input, Bytes alignment) {
  Bytes total = 0;
  const auto add = [&](Bytes size, Bytes align) {
    total = checkedAdd(total, alignUp(size, std::max(align, alignment)).value_or(kMaxBytes))
                .value_or(kMaxBytes);
  };
  if (const Model* m = input.model())
    for (const Tensor& t : m->tensors) add(t.nbytes, t.alignment);
  if (const SpecList* l = input.specList())
    for (const Spec& s : l->specs.specs) add(s.nbytes, 1);
  if (const BufferList* l = input.buffers())
    for (const Buffer& b : l->problem.buffers) add(b.size, b.alignment);
  return total;
}

// The request with the input's defaults filled in, checked field by field.
PlanRequest resolve(const Input& input, PlanRequest r) {
  const SpecList* list = input.specList();
  if (r.algorithm.empty()) r.algorithm = list ? list->algorithm : "auto";
  if (!findAlgorithmInfo(r.algorithm)) {
    std::string known;
    for (const std::string& n : algorithmNames()) known += (known.empty() ? "" : ", ") + n;
    const std::string guess = closest(r.algorithm, algorithmNames());
    requestError("algorithm", fmt::format("unknown algorithm '{}'{} (known: {})", printable(r.algorithm, 64),
                                          guess.empty() ? "" : "; did you mean " + guess + "?", known));
  }
  if (!r.options.alignment) r.options.alignment = list ? list->alignment : input.buffers() ? 1 : 16;
  // Any alignment works (offsets are multiples of it); powers of two are
  // merely usual.
  if (r.options.alignment > limits::kMaxAlignment)
    requestError("options.alignment",
                 fmt::format("{} is above the limit of 2^30", r.options.alignment));
  if (!r.extra_padding && input.pte()) r.extra_padding = pteDefaultExtraPadding(*input.pte());
  if (!r.extra_padding) r.extra_padding = list ? list->extra_padding : 0;
  if (list && list->per_device) r.options.per_device = true;
  if (*r.extra_padding > limits::kMaxSize)
    requestError("extra_padding", fmt::format("{} is above the limit of 2^62", *r.extra_padding));
  // A pool holds at most every tensor once: with the padding that must stay
  // below the limit, or sizes would overflow.
  if (*r.extra_padding > 0) {
    const Bytes most = naiveBytes(input, r.options.alignment);
    if (!checkedAdd(most, *r.extra_padding))
      requestError("extra_padding",
                   fmt::format("{} overflows: with the input's tensors (up to {} bytes) a pool would "
                               "exceed the limit of 2^62 bytes",
                               *r.extra_padding, most));
  }
  std::vector<std::size_t> listed(limits::kMaxMemId + 1, 0);  // position + 1
  for (std::size_t i = 0; i < r.options.spill_order.size(); ++i) {
    const MemId m = r.options.spill_order[i];
    if (m < 1 || m > limits::kMaxMemId)
      requestError("options.spill_order", fmt::format("mem_id {} not in [1, {}]", m, limits::kMaxMemId));
    // A pool listed twice would spill into itself.
    if (listed[m])
      requestError("options.spill_order",
                   fmt::format("pool {} is listed twice (positions {} and {})", m, listed[m], i + 1));
    listed[m] = i + 1;
  }
  if (r.options.capacities.size() > limits::kMaxPools)
    requestError("options.capacities", fmt::format("{} entries, above the limit of {}",
                                                   r.options.capacities.size(), limits::kMaxPools));
  if (!(r.params.effort >= 0))
    requestError("params.effort", fmt::format("{} is not a non-negative number", r.params.effort));
  if (!(r.params.time_limit_seconds >= 0))
    requestError("params.time_limit_seconds",
                 fmt::format("{} is not a non-negative number", r.params.time_limit_seconds));
  return r;
}

// The specs a plan of `input` made with `options` covers, without
// allocations: what a plan file is read onto.
Plan skeleton(const Input& input, const PlanOptions& options, const PlanProvenance& made = {}) {
  Plan plan;
  plan.options = options;
  if (const Model* model = input.model()) {
    const PlannedModel planned(*model, made.order, made.order_applied);  // the plan's node order
    const Model& m = planned.get();
    for (const Method& method : m.methods) plan.methods.push_back({method.name, method.graph});
    plan.graphs.resize(m.graphs.size());
    const std::vector<PlanOptions> graph_options = graphsPlanOptions(m, options);
    for (GraphId g = 0; g < static_cast<GraphId>(m.graphs.size()); ++g) {
      plan.graphs[g].graph = g;
      plan.graphs[g].parent = m.graphs[g].parent;
      plan.graphs[g].specs = collectSpecs(m, g, graph_options[g]);
    }
  } else if (const SpecList* list = input.specList()) {
    plan.graphs.resize(1);
    plan.graphs[0].specs = list->specs;
    for (Spec& s : plan.graphs[0].specs.specs) s.alignment = planningAlignment(options);
  } else {
    plan.graphs.resize(1);
    plan.graphs[0].specs = specsFromBuffers(*input.buffers(), options.alignment ? options.alignment : 1);
  }
  return plan;
}

// A MiniMalloc CSV solution (an offset column) of a CSV buffer list.
Plan planFromCsvSolution(const Input& input, std::string_view text, const std::string& name) {
  const BufferList* buffers = input.buffers();
  if (!buffers)
    throw InputError(fmt::format("{}: a CSV solution can only be checked against a CSV buffer list", name));
  const BufferList solution = readMiniMallocCsv(text, name);
  if (!csvHasColumn(text, "offset")) throw InputError(fmt::format("{}: no 'offset' column", name));
  if (solution.ids.size() != buffers->ids.size())
    throw InputError(fmt::format("{}: rows do not match {}: {} rows for its {} buffers (one row a buffer)",
                                 name, input.source.name, solution.ids.size(), buffers->ids.size()));
  if (solution.ids != buffers->ids)
    throw InputError(fmt::format("{}: rows do not match {} (ids must be the same, in the same order)",
                                 name, input.source.name));
  Plan plan;
  plan.algorithm = "file";
  plan.options.alignment = 1;
  plan.source = input.source;
  plan.graphs.resize(1);
  GraphPlan& g = plan.graphs[0];
  g.specs = specsFromBuffers(*buffers, 1);
  Bytes height = 0;
  for (std::size_t i = 0; i < solution.offsets.size(); ++i) {
    if (!solution.offsets[i])
      throw InputError(fmt::format("{}: row for '{}' has no offset", name, solution.ids[i]));
    const Spec& s = g.specs.specs[i];
    const Offset offset = *solution.offsets[i];
    const Bytes size = *alignUp(s.nbytes, s.alignment);  // the reader bounds both
    g.allocations.push_back({s.id, 1, 0, offset, size});
    height = std::max(height, *checkedAdd(offset, size));
  }
  g.bufsizes = {0, height};
  g.pool_devices.assign(2, Device{});
  PoolInfo pool;
  pool.mem_id = 1;
  pool.size = height;
  pool.lower_bound = lowerBound(buffers->problem);
  pool.buffers = g.allocations.size();
  pool.algorithm = "file";
  g.pools.push_back(pool);
  return plan;
}

// A one-pool plan as MiniMalloc CSV rows with an offset column.
std::string planCsv(const Plan& plan, const Input& input) {
  const GraphPlan& g = plan.main();
  if (const BufferList* buffers = input.buffers()) {
    std::vector<Offset> offsets(buffers->problem.buffers.size(), 0);
    for (const Allocation& a : g.allocations) offsets.at(a.spec) = a.offset;
    return writeMiniMallocCsv(*buffers, offsets);
  }
  std::size_t pools = 0;
  for (Bytes b : g.bufsizes) pools += b > 0;
  if (pools > 1 || plan.graphs.size() > 1)
    throw InputError(fmt::format("a CSV holds one pool of one graph and this plan has {} pools in {} "
                                 "graphs; write JSON instead", pools, plan.graphs.size()));
  BufferList list;
  std::vector<Offset> offsets;
  for (const Allocation& a : g.allocations) {
    const Spec& s = g.specs.specs[a.spec];
    Buffer b;
    b.id = static_cast<BufferId>(list.ids.size());
    b.start = s.first;
    b.end = s.last + 1;
    b.size = a.size;
    b.nbytes = s.nbytes;
    list.ids.push_back(s.name);
    list.problem.buffers.push_back(b);
    offsets.push_back(a.offset);
  }
  return writeMiniMallocCsv(list, offsets);
}

// A plan file that is a CSV solution (an offset column), not plan JSON.
bool isCsvSolution(const std::string& name, std::string_view text) {
  return detectInputFormat(name, text).name == "csv";
}

bool isCsvName(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".csv";
}

}  // namespace

Input Input::fromModel(Model model) {
  Input in;
  in.format = findInputFormat("graph_json");
  in.content = std::move(model);
  return in;
}

Input Input::fromSpecList(SpecList list) {
  Input in;
  in.format = findInputFormat("spec_list");
  in.content = std::move(list);
  return in;
}

Input Input::fromBuffers(BufferList list) {
  Input in;
  in.format = findInputFormat("csv");
  in.content = std::move(list);
  return in;
}

const Model* Input::model() const {
  if (const auto* m = std::get_if<Model>(&content)) return m;
  if (const PteProgram* p = pte()) return &p->model;
  return nullptr;
}

const SpecList* Input::specList() const { return std::get_if<SpecList>(&content); }
const BufferList* Input::buffers() const { return std::get_if<BufferList>(&content); }

const PteProgram* Input::pte() const {
  const auto* p = std::get_if<std::shared_ptr<const PteProgram>>(&content);
  return p ? p->get() : nullptr;
}

Input readInput(std::string_view bytes, const std::string& name, const ImportOptions& options) {
  const InputFormat& format = detectInputFormat(name, bytes);
  if (!format.read) throw InputError(fmt::format("{}: {}", name, format.refusal));
  checkImportOptions(format, options, name);
  Input in;
  in.format = &format;
  in.content = format.read(bytes, name, options);
  // A copy is written from the file's own bytes.
  if (format.can(kWritesTflite)) in.bytes = std::make_shared<const std::string>(bytes);
  in.source.name = name;
  in.source.size = bytes.size();
  in.source.sha256 = sha256Hex(bytes);
  in.import_options = options;
  return in;
}

Input readInput(const std::filesystem::path& path, const ImportOptions& options) {
  return readInput(readFile(path), path.string(), options);
}

namespace {

// A planning failure names the input (and, for a CSV buffer list, the
// buffer's row), as reading errors do.
[[noreturn]] void rethrowNamingInput(const Input& input, const PlanError& e) {
  std::string where = input.source.name;
  const auto* placing = dynamic_cast<const PlacementError*>(&e);
  if (const BufferList* list = input.buffers(); list && placing) {
    const auto it = std::find(list->ids.begin(), list->ids.end(), placing->buffer());
    if (it != list->ids.end()) where += ": row " + std::to_string(it - list->ids.begin() + 1);
  }
  const std::string what = e.what();
  if (where.empty() || what.rfind(input.source.name + ":", 0) == 0) throw;
  throw PlanError(where + ": " + what);
}

Plan planInput(const Input& input, const PlanRequest& asked);

}  // namespace

Plan plan(const Input& input, const PlanRequest& asked) {
  try {
    return planInput(input, asked);
  } catch (const CapacityError&) {
    throw;
  } catch (const PlanError& e) {
    rethrowNamingInput(input, e);
  }
}

namespace {

Plan planInput(const Input& input, const PlanRequest& asked) {
  const auto started = std::chrono::steady_clock::now();
  const PlanRequest r = resolve(input, asked);
  Plan out;
  if (const PteProgram* program = input.pte()) {
    OrderResult order = orderForRequest(program->model, r, program);
    const bool apply = r.reorder == ReorderMode::Apply;
    out = planPte(PlannedProgram(*program, order, apply).get(), r);
    out.order = std::move(order);
    out.order_applied = apply && out.order.changed();
  } else if (const Model* model = input.model()) {
    OrderResult order = orderForRequest(*model, r);
    const bool apply = r.reorder == ReorderMode::Apply;
    out = planModelWithPins(PlannedModel(*model, order, apply).get(), r);  // pins checked
    out.order = std::move(order);
    out.order_applied = apply && out.order.changed();
  } else {
    GraphSpecs specs = std::move(skeleton(input, r.options).graphs[0].specs);  // not a copy: 256 B a spec
    const SpecList* list = input.specList();
    const std::vector<Bytes> reserved = list ? list->input_mem_buffer_sizes : std::vector<Bytes>{};
    recordRequest(out, r);
    out.graphs.push_back(planSpecs(std::move(specs), r, reserved));
    GraphPlan& g = out.graphs[0];
    g.pool_devices.resize(g.bufsizes.size(), Device{});
  }
  out.source = input.source;
  out.import_options = input.import_options;
  for (const GraphPlan& g : out.graphs)
    for (const PoolInfo& pool : g.pools)
      if (out.search_stopped.empty()) out.search_stopped = pool.stopped;
  out.planning_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

}  // namespace

VerifyResult verify(const Input& input, const Plan& plan) {
  const std::size_t graphs = input.model() ? input.model()->graphs.size() : 1;
  if (plan.graphs.size() != graphs) {
    VerifyResult r;
    r.violations.push_back({0, fmt::format("the plan has {} graphs, the input {}",
                                           plan.graphs.size(), graphs)});
    return r;
  }
  return input.pte() ? verifyPte(PlannedProgram(*input.pte(), plan).get(), plan) : verifyPlan(plan);
}

ReplayResult replay(const Input& input, const Plan& plan, const ReplayOptions& options) {
  if (const PteProgram* program = input.pte())
    return replayPte(PlannedProgram(*program, plan).get(), plan, options);
  return input.model() ? replayPlan(PlannedModel(*input.model(), plan).get(), plan, options)
                       : replaySpecs(plan.main(), plan.options, options);
}

void checkSameSource(const SourceInfo& recorded, const Input& input, const std::string& plan_name) {
  if (input.source.sha256.empty()) return;  // an input made in memory: nothing to compare
  // A plan made in memory records no digest: it cannot be matched to a file.
  if (recorded.sha256.empty())
    throw InputError(fmt::format("{}: source.sha256: empty: the plan records no digest of what it was "
                                 "made from, so it cannot be matched to {} (--force checks it anyway)",
                                 plan_name, input.source.name));
  if (recorded.sha256 != input.source.sha256 || recorded.size != input.source.size)
    throw InputError(fmt::format(
        "{}: made from {} ({} bytes, sha256 {}...), not from {} ({} bytes, sha256 {}...)",
        plan_name, recorded.name, recorded.size, recorded.sha256.substr(0, 12), input.source.name,
        input.source.size, input.source.sha256.substr(0, 12)));
}

Plan readPlan(std::string_view text, const std::string& name, const Input& input) {
  if (isCsvSolution(name, text)) return planFromCsvSolution(input, text, name);
  const PlanProvenance made = readPlanProvenance(text, name);
  Plan plan = readPlanJson(text, name, skeleton(input, made.request.options, made));
  plan.order = made.order;
  plan.order_applied = made.order_applied;
  return plan;
}

Plan readPlan(const std::filesystem::path& path, const Input& input) {
  return readPlan(readFile(path), path.string(), input);
}

ImportOptions planImportOptions(std::string_view text, const std::string& name) {
  if (isCsvSolution(name, text)) return {};
  return readPlanProvenance(text, name).import_options;
}

Plan readPlanFor(const Input& input, std::string_view text, const std::string& name, bool force) {
  if (!force && !isCsvSolution(name, text))
    if (const std::optional<SourceInfo> source = readPlanProvenance(text, name).source)
      checkSameSource(*source, input, name);
  return readPlan(text, name, input);
}

std::string writePlan(const Plan& plan, const Input& input, const WritePlanOptions& options) {
  if (options.format == PlanFormat::Csv) return planCsv(plan, input);
  PlanJsonOptions json;
  json.include_timing = options.include_timing;
  return writePlanJson(plan, input.model(), json);
}

void writePlan(const std::filesystem::path& path, const Plan& plan, const Input& input,
               WritePlanOptions options) {
  options.format = isCsvName(path) ? PlanFormat::Csv : PlanFormat::Json;
  writeFileAtomic(path, writePlan(plan, input, options));
}

}  // namespace memplan

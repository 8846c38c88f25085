// memplan._memplan: the Python binding of the library entry point
// (memplan/memplan.h). A thin shell: it converts arguments, releases the GIL
// around every call that reads, plans or checks, and turns the results into
// small read-only objects. The pure-Python package (python/memplan) adds
// the friendly signatures and the ExecuTorch plug-in on top.
//
// Objects are immutable once made, so several threads may plan, verify and
// replay the same Input at once.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "memplan/limits.h"
#include "memplan/memplan.h"

namespace py = pybind11;
using namespace memplan;

namespace {

using InputPtr = std::shared_ptr<const Input>;

ImportOptions importOptions(const std::map<std::string, std::vector<std::int64_t>>& input_shapes,
                            const std::map<std::string, std::int64_t>& dims, bool alias_views,
                            std::int64_t unknown_size_bytes, bool ignore_offline_plan) {
  ImportOptions o;
  for (const auto& [name, shape] : input_shapes) {
    if (shape.size() > limits::kMaxRank)
      throw InputError(fmt::format("input_shapes[{}]: more than {} dimensions", name, limits::kMaxRank));
    for (std::int64_t d : shape)
      if (d < 0) throw InputError(fmt::format("input_shapes[{}]: negative dimension {}", name, d));
  }
  for (const auto& [name, value] : dims)
    if (value < 0) throw InputError(fmt::format("dims[{}]: negative value {}", name, value));
  if (unknown_size_bytes < 0 || static_cast<Bytes>(unknown_size_bytes) > limits::kMaxSize)
    throw InputError(fmt::format("unknown_size_bytes: {} is not a byte size in [0, 2^62]", unknown_size_bytes));
  o.input_shapes = input_shapes;
  o.dims = dims;
  o.alias_views = alias_views;
  o.unknown_size_bytes = static_cast<Bytes>(unknown_size_bytes);
  o.ignore_offline_plan = ignore_offline_plan;
  return o;
}

// ---- results as plain objects ----

struct PyAllocation {
  py::object id;               // spec list: int id; model/CSV: name; None if ambiguous
  std::string name;
  SpecId spec = 0;
  GraphId graph = 0;
  MemId mem_id = 0;
  std::int32_t mem_obj_id = 0;
  Offset offset = 0;
  Bytes size = 0;
  TimeValue first = 0, last = 0;
};

struct PyPool {
  PoolInfo info;
  py::object ratio() const {
    if (info.lower_bound == 0) return py::none();
    return py::float_(static_cast<double>(info.size) / static_cast<double>(info.lower_bound));
  }
};

// The id a plan file gives a spec (docs/plan-format.md): the integer of a
// spec-list spec ("id N"), else its name; None when empty or not unique.
std::vector<py::object> specIds(const GraphSpecs& specs) {
  std::unordered_map<std::string_view, int> count;
  for (const Spec& s : specs.specs) ++count[s.name];
  std::vector<py::object> ids(specs.specs.size());
  for (std::size_t i = 0; i < specs.specs.size(); ++i) {
    const std::string& name = specs.specs[i].name;
    if (name.empty() || count[name] != 1) {
      ids[i] = py::none();
      continue;
    }
    if (name.size() > 3 && name.compare(0, 3, "id ") == 0) {
      std::int64_t v = 0;
      const char* last = name.data() + name.size();
      const auto [end, ec] = std::from_chars(name.data() + 3, last, v);
      if (ec == std::errc() && end == last && std::to_string(v) == name.substr(3)) {
        ids[i] = py::int_(v);
        continue;
      }
    }
    ids[i] = py::str(name);
  }
  return ids;
}

py::list allocationsOf(const GraphPlan& g) {
  const std::vector<py::object> ids = specIds(g.specs);
  py::list out;
  for (const Allocation& a : g.allocations) {
    PyAllocation x;
    const Spec* s = a.spec >= 0 && static_cast<std::size_t>(a.spec) < g.specs.specs.size()
                        ? &g.specs.specs[a.spec] : nullptr;
    x.id = s ? ids[a.spec] : py::none();
    x.name = s ? s->name : std::string();
    x.spec = a.spec;
    x.graph = g.graph;
    x.mem_id = a.mem_id;
    x.mem_obj_id = a.mem_obj_id;
    x.offset = a.offset;
    x.size = a.size;
    if (s) {
      x.first = s->first;
      x.last = s->last;
    }
    out.append(py::cast(std::move(x)));
  }
  return out;
}

py::list poolsOf(const GraphPlan& g) {
  py::list out;
  for (const PoolInfo& p : g.pools) out.append(py::cast(PyPool{p}));
  return out;
}

Bytes sum(const std::vector<Bytes>& v) {
  Bytes t = 0;
  for (Bytes b : v) t = checkedAdd(t, b).value_or(kMaxBytes);
  return t;
}

Bytes lowerBoundOf(const GraphPlan& g) {
  Bytes t = 0;
  for (const PoolInfo& p : g.pools) t = checkedAdd(t, p.lower_bound).value_or(kMaxBytes);
  return t;
}

// Winner of a graph: the algorithms its pools kept, in mem_id order.
std::string winnerOf(const Plan& plan, const GraphPlan& g) {
  std::vector<std::string> names;
  for (const PoolInfo& p : g.pools)
    if (std::find(names.begin(), names.end(), p.algorithm) == names.end()) names.push_back(p.algorithm);
  if (names.empty()) return plan.algorithm;
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

struct PyGraphPlan {
  std::shared_ptr<const Plan> plan;
  GraphId graph = 0;
  const GraphPlan& g() const { return plan->graphs.at(graph); }
};

struct PyPlan {
  std::shared_ptr<const Plan> plan;
  InputPtr input;
  bool carried = false;  // the plan the input carries (carried_plan)
  const GraphPlan& main() const { return plan->main(); }
};

struct PyVerify {
  VerifyResult r;
};

// One field of the plan beside TFLite Micro's own planner; None unless the
// input is a .tflite planned into one pool.
py::object tflmField(const PyPlan& p, Bytes TflmComparison::*field) {
  std::optional<TflmComparison> c;
  {
    py::gil_scoped_release release;
    c = compareWithTflm(*p.input, *p.plan);
  }
  return c ? py::object(py::int_((*c).*field)) : py::object(py::none());
}

// Pool capacities ({mem_id: bytes}) and the pools to spill into, checked.
void setCapacities(PlanOptions& o, const std::map<std::int64_t, std::int64_t>& capacities,
                   const std::vector<std::int64_t>& spill_order) {
  for (const auto& [mem, bytes] : capacities) {
    if (mem < 1 || mem > limits::kMaxMemId)
      throw InputError(fmt::format("capacities: mem_id must be in [1, {}], got {}", limits::kMaxMemId, mem));
    if (bytes < 0 || static_cast<Bytes>(bytes) > limits::kMaxSize)
      throw InputError(fmt::format("capacities[{}]: {} is not a byte size in [0, 2^62]", mem, bytes));
    if (o.capacities.size() <= static_cast<std::size_t>(mem)) o.capacities.resize(mem + 1);
    o.capacities[mem] = static_cast<Bytes>(bytes);
  }
  for (std::int64_t mem : spill_order) {
    if (mem < 1 || mem > limits::kMaxMemId)
      throw InputError(fmt::format("spill_order: mem_id {} not in [1, {}]", mem, limits::kMaxMemId));
    o.spill_order.push_back(static_cast<MemId>(mem));
  }
}

// ---- the ExecuTorch plug-in's entry: an in-memory spec list ----

struct SpecPlan {
  std::vector<Bytes> bufsizes;
  std::vector<MemId> mem_ids;
  std::vector<std::int32_t> mem_obj_ids;
  std::vector<Offset> offsets;
  bool ok = true;
  std::string violation;
  std::string winner;
  Bytes lower_bound = 0;
  bool proven_optimal = false;
  bool executorch_exact = false;
};

SpecPlan planSpecList(const std::vector<Bytes>& nbytes, const std::vector<TimeValue>& first,
                      const std::vector<TimeValue>& last, const std::vector<std::int64_t>& mem_id,
                      const std::vector<std::int64_t>& inplace_base, const std::string& algorithm,
                      Bytes alignment, Bytes extra_padding, const std::vector<Bytes>& reserved,
                      double effort, double time_limit, const std::map<std::int64_t, std::int64_t>& capacities,
                      const std::vector<std::int64_t>& spill_order) {
  // The library checks the arrays (specListFromArrays), with the words a
  // spec list file gets.
  SpecArrays arrays;
  arrays.nbytes = nbytes;
  arrays.first = first;
  arrays.last = last;
  arrays.mem_id = mem_id;
  arrays.inplace_base = inplace_base;
  arrays.algorithm = algorithm;
  arrays.alignment = alignment;
  arrays.extra_padding = extra_padding;
  arrays.input_mem_buffer_sizes = reserved;
  const std::size_t n = nbytes.size();
  const Input input = Input::fromSpecList(specListFromArrays(arrays));

  PlanRequest request;
  request.algorithm = algorithm;
  request.options.alignment = alignment;
  request.extra_padding = extra_padding;
  request.params.effort = effort;
  request.params.time_limit_seconds = time_limit;
  setCapacities(request.options, capacities, spill_order);
  const Plan plan = memplan::plan(input, request);
  const GraphPlan& g = plan.main();

  SpecPlan out;
  out.bufsizes = g.bufsizes;
  out.mem_ids.assign(n, 0);
  out.mem_obj_ids.assign(n, 0);
  out.offsets.assign(n, 0);
  std::vector<bool> seen(n, false);
  for (const Allocation& a : g.allocations) {
    if (a.spec < 0 || static_cast<std::size_t>(a.spec) >= n) continue;
    seen[a.spec] = true;
    out.mem_ids[a.spec] = a.mem_id;
    out.mem_obj_ids[a.spec] = a.mem_obj_id;
    out.offsets[a.spec] = a.offset;
  }
  const VerifyResult verdict = memplan::verify(input, plan);
  out.ok = verdict.ok();
  if (!out.ok) out.violation = verdict.violations.front().message;
  for (std::size_t i = 0; i < n && out.ok; ++i)
    if (!seen[i]) {
      out.ok = false;
      out.violation = fmt::format("specs[{}] has no allocation", i);
    }
  out.winner = winnerOf(plan, g);
  out.lower_bound = lowerBoundOf(g);
  out.proven_optimal = !g.pools.empty();
  for (const PoolInfo& p : g.pools) out.proven_optimal = out.proven_optimal && p.proven_optimal;
  const AlgorithmInfo* info = findAlgorithmInfo(algorithm);
  out.executorch_exact = info && info->executorch_exact;
  return out;
}

std::string replayIssueName(ReplayIssue i) {
  switch (i) {
    case ReplayIssue::None: return "none";
    case ReplayIssue::Clobber: return "clobber";
    case ReplayIssue::OutOfArena: return "out_of_arena";
    case ReplayIssue::ShortAllocation: return "short_allocation";
    case ReplayIssue::BadPlan: return "bad_plan";
  }
  return "unknown";
}

py::object maybeStr(const std::string& s) { return s.empty() ? py::object(py::none()) : py::object(py::str(s)); }

// The module, in the order a user meets it: errors, inputs, plans, the
// verdicts, plan files and spec lists (ExecuTorch's plug-in). Each binds
// the library's own calls and checks nothing the library does not.

// InputError and PlanError, worded as Python calls (inShellTerms).
void bindErrors(py::module_& m) {
  static py::exception<InputError> input_error(m, "InputError", PyExc_ValueError);
  static py::exception<PlanError> plan_error(m, "PlanError", PyExc_RuntimeError);
  // Messages quote file contents, which need not be UTF-8: bytes that are
  // not come out as \xNN escapes instead of an empty message.
  py::register_exception_translator([](std::exception_ptr p) {
    auto raise = [](PyObject* type, const std::string& message) {
      PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()),
                                            "backslashreplace");
      if (!text) return;  // the decoding error is raised instead
      PyErr_SetObject(type, text);
      Py_DECREF(text);
    };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      raise(input_error.ptr(), inShellTerms(e.what(), Shell::Python));
    } catch (const PlanError& e) {
      raise(plan_error.ptr(), inShellTerms(e.what(), Shell::Python));
    }
  });
}

// memplan.read / read_bytes and the Input they return.
void bindInput(py::module_& m) {
  py::class_<Input, std::shared_ptr<Input>>(m, "Input",
      "An input read by memplan.read(): a model (ONNX, TFLite, memplan graph JSON), an "
      "ExecuTorch spec list, or a MiniMalloc buffer list. Immutable.")
      .def_property_readonly("kind", [](const Input& in) { return std::string(in.format->name); },
                             "The format: 'onnx', 'tflite', 'pte', 'graph_json', 'spec_list' or 'csv'.")
      .def_property_readonly("name", [](const Input& in) { return in.source.name; },
                             "The file name as given (or the name given with the bytes).")
      .def_property_readonly("size", [](const Input& in) { return in.source.size; }, "Bytes of the file.")
      .def_property_readonly("sha256", [](const Input& in) { return in.source.sha256; },
                             "SHA-256 of the file's bytes, lower-case hex.")
      .def_property_readonly("graphs", [](const Input& in) {
            return in.model() ? in.model()->graphs.size() : std::size_t{1}; },
          "Number of graphs (the main graph and its control-flow bodies); 1 for lists.")
      .def_property_readonly("tensors", [](const Input& in) -> std::size_t {
            if (const Model* m = in.model()) return m->tensors.size();
            if (const SpecList* l = in.specList()) return l->specs.specs.size();
            return in.buffers()->problem.buffers.size(); },
          "Tensors of a model; specs of a spec list; buffers of a buffer list.")
      .def_property_readonly("nodes", [](const Input& in) -> std::size_t {
            if (!in.model()) return 0;
            std::size_t n = 0;
            for (const Graph& g : in.model()->graphs) n += g.nodes.size();
            return n; },
          "Nodes of a model, every graph counted; 0 for lists.")
      .def_property_readonly("input_shapes", [](const Input& in) { return in.import_options.input_shapes; })
      .def_property_readonly("dims", [](const Input& in) { return in.import_options.dims; })
      .def_property_readonly("alias_views", [](const Input& in) { return in.import_options.alias_views; })
      .def_property_readonly("unknown_size_bytes", [](const Input& in) { return in.import_options.unknown_size_bytes; })
      .def("__repr__", [](const Input& in) {
        return fmt::format("<memplan.Input {} '{}' ({} bytes)>", in.format->name, in.source.name, in.source.size);
      });

  m.def("read",
        [](const std::filesystem::path& path, const std::map<std::string, std::vector<std::int64_t>>& input_shapes,
           const std::map<std::string, std::int64_t>& dims, bool alias_views, std::int64_t unknown_size_bytes,
           bool ignore_offline_plan) {
          const ImportOptions o = importOptions(input_shapes, dims, alias_views, unknown_size_bytes, ignore_offline_plan);
          py::gil_scoped_release release;
          return std::make_shared<Input>(readInput(path, o));
        },
        py::arg("path"), py::arg("input_shapes"), py::arg("dims"), py::arg("alias_views"),
        py::arg("unknown_size_bytes"), py::arg("ignore_offline_plan") = false);
  m.def("read_bytes",
        [](py::bytes data, const std::string& name, const std::map<std::string, std::vector<std::int64_t>>& input_shapes,
           const std::map<std::string, std::int64_t>& dims, bool alias_views, std::int64_t unknown_size_bytes,
           bool ignore_offline_plan) {
          const ImportOptions o = importOptions(input_shapes, dims, alias_views, unknown_size_bytes, ignore_offline_plan);
          std::string bytes = data;  // a copy: the GIL is released while reading
          py::gil_scoped_release release;
          return std::make_shared<Input>(readInput(std::string_view(bytes), name, o));
        },
        py::arg("data"), py::arg("name"), py::arg("input_shapes"), py::arg("dims"), py::arg("alias_views"),
        py::arg("unknown_size_bytes"), py::arg("ignore_offline_plan") = false);
}

// The parts of a plan: allocations, pools, one graph's plan.
void bindPlanParts(py::module_& m) {
  py::class_<PyAllocation>(m, "Allocation", "Where one planned tensor (storage) lives.")
      .def_readonly("id", &PyAllocation::id,
                    "The plan file's id: a spec list's integer id, else the tensor (buffer) name; None "
                    "when the name is empty or not unique.")
      .def_readonly("name", &PyAllocation::name, "Tensor name (a spec list: 'id N').")
      .def_readonly("spec", &PyAllocation::spec, "Position in the graph's spec order.")
      .def_readonly("graph", &PyAllocation::graph, "Graph index (0 = main).")
      .def_readonly("mem_id", &PyAllocation::mem_id, "Pool (1 and up).")
      .def_readonly("mem_obj_id", &PyAllocation::mem_obj_id,
                    "ExecuTorch shared-object id (greedy algorithms); 0 for offset-based ones.")
      .def_readonly("offset", &PyAllocation::offset, "Absolute byte offset in the pool.")
      .def_readonly("size", &PyAllocation::size, "Bytes reserved (size rounded up to the alignment).")
      .def_property_readonly("lifetime", [](const PyAllocation& a) { return py::make_tuple(a.first, a.last); },
                             "(first, last), closed, in node-list steps.")
      .def("__repr__", [](const PyAllocation& a) {
        return fmt::format("<memplan.Allocation {} mem_id={} offset={} size={} lifetime=({}, {})>",
                           py::repr(a.id).cast<std::string>(), a.mem_id, a.offset, a.size, a.first, a.last);
      });

  py::class_<PyPool>(m, "Pool", "One pool (mem_id) of a graph's plan.")
      .def_property_readonly("mem_id", [](const PyPool& p) { return p.info.mem_id; })
      .def_property_readonly("device", [](const PyPool& p) { return p.info.device.str(); }, "'cpu:0', ...")
      .def_property_readonly("size", [](const PyPool& p) { return p.info.size; },
                             "Bytes (= bufsizes[mem_id]), reserved prefix and padding included.")
      .def_property_readonly("lower_bound", [](const PyPool& p) { return p.info.lower_bound; },
                             "No plan of this pool can be smaller.")
      .def_property_readonly("ratio", &PyPool::ratio, "size / lower_bound; None when the bound is 0.")
      .def_property_readonly("naive_size", [](const PyPool& p) { return p.info.naive_size; },
                             "Sum of the sizes: the pool without reuse.")
      .def_property_readonly("reserved", [](const PyPool& p) { return p.info.reserved; },
                             "Bytes at the front held by control-flow bodies.")
      .def_property_readonly("buffers", [](const PyPool& p) { return p.info.buffers; })
      .def_property_readonly("algorithm", [](const PyPool& p) { return p.info.algorithm; },
                             "The algorithm whose placement was kept.")
      .def_property_readonly("proven_optimal", [](const PyPool& p) { return p.info.proven_optimal; })
      .def_property_readonly("work", [](const PyPool& p) { return p.info.work; },
                             "Search work spent (deterministic).")
      .def("__repr__", [](const PyPool& p) {
        return fmt::format("<memplan.Pool mem_id={} size={} lower_bound={} algorithm={}{}>", p.info.mem_id,
                           p.info.size, p.info.lower_bound, p.info.algorithm,
                           p.info.proven_optimal ? " proven_optimal" : "");
      });

  py::class_<PyGraphPlan>(m, "GraphPlan", "The plan of one graph (main graph or control-flow body).")
      .def_property_readonly("graph", [](const PyGraphPlan& g) { return g.graph; })
      .def_property_readonly("parent", [](const PyGraphPlan& g) -> py::object {
            return g.g().parent == kNone ? py::object(py::none()) : py::object(py::int_(g.g().parent)); },
          "Graph whose pools hold this body's arena; None for the main graph.")
      .def_property_readonly("steps", [](const PyGraphPlan& g) { return g.g().specs.steps; })
      .def_property_readonly("bufsizes", [](const PyGraphPlan& g) { return g.g().bufsizes; })
      .def_property_readonly("pools", [](const PyGraphPlan& g) { return poolsOf(g.g()); })
      .def_property_readonly("allocations", [](const PyGraphPlan& g) { return allocationsOf(g.g()); });

}

void bindPlanWriters(py::class_<PyPlan>& plan);

// Plan: what it holds (its writers: bindPlanWriters).
void bindPlan(py::module_& m) {
  py::class_<PyPlan> plan(m, "Plan", "A plan: pools and offsets for every planned tensor of every graph.");
  plan
      .def_property_readonly("input", [](const PyPlan& p) { return std::const_pointer_cast<Input>(p.input); },
                             "The Input it was made from.")
      .def_property_readonly("algorithm", [](const PyPlan& p) { return p.plan->algorithm; },
                             "The algorithm asked for ('auto', 'greedy', ...).")
      .def_property_readonly("winner", [](const PyPlan& p) { return winnerOf(*p.plan, p.main()); },
                             "The algorithm(s) whose placement was kept in the main graph's pools.")
      .def_property_readonly("bufsizes", [](const PyPlan& p) { return p.main().bufsizes; },
                             "Bytes of each pool of the main graph, index = mem_id; [0] is always 0.")
      .def_property_readonly("total", [](const PyPlan& p) { return sum(p.main().bufsizes); },
                             "sum(bufsizes).")
      .def_property_readonly("lower_bound", [](const PyPlan& p) { return lowerBoundOf(p.main()); },
                             "Sum of the main graph's per-pool lower bounds.")
      .def_property_readonly("ratio", [](const PyPlan& p) -> py::object {
            const Bytes lb = lowerBoundOf(p.main());
            if (lb == 0) return py::none();
            return py::float_(static_cast<double>(sum(p.main().bufsizes)) / static_cast<double>(lb)); },
          "total / lower_bound; None when the bound is 0.")
      .def_property_readonly("proven_optimal", [](const PyPlan& p) {
            bool all = true;
            for (const PoolInfo& q : p.main().pools) all = all && q.proven_optimal;
            return all; },
          "Every pool of the main graph is proven minimal.")
      .def_property_readonly("pools", [](const PyPlan& p) { return poolsOf(p.main()); })
      .def_property_readonly("allocations", [](const PyPlan& p) { return allocationsOf(p.main()); })
      .def_property_readonly("graphs", [](const PyPlan& p) {
            py::list out;
            for (GraphId g = 0; g < static_cast<GraphId>(p.plan->graphs.size()); ++g)
              out.append(py::cast(PyGraphPlan{p.plan, g}));
            return out; })
      .def_property_readonly("alignment", [](const PyPlan& p) { return p.plan->options.alignment; })
      .def_property_readonly("extra_padding", [](const PyPlan& p) { return p.plan->extra_padding; })
      .def_property_readonly("effort", [](const PyPlan& p) { return p.plan->effort; })
      .def_property_readonly("planning_seconds", [](const PyPlan& p) { return p.plan->planning_seconds; })
      .def_property_readonly("order", [](const PyPlan& p) -> py::object {
            if (!p.plan->order_applied) return py::none();
            py::list out;
            for (const GraphOrder& g : p.plan->order.graphs) out.append(py::cast(g.order));
            return out; },
          "Per graph, the node indices (given order) in the order the plan was made for, "
          "when reorder=True changed it; None when the plan is for the given order.")
      .def_property_readonly("order_search", [](const PyPlan& p) -> py::object {
            if (p.plan->order.graphs.empty()) return py::none();
            py::list out;
            for (const GraphOrder& g : p.plan->order.graphs) {
              py::dict d;
              d["graph"] = g.graph;
              d["nodes"] = g.order;
              d["bound_given"] = g.bound_given;
              d["bound_found"] = g.bound_found;
              d["method"] = g.method;
              d["proven_optimal"] = g.proven_optimal;
              d["changed"] = g.changed();
              d["fixed"] = g.fixed;
              d["work"] = g.work;
              out.append(std::move(d));
            }
            return out; },
          "The order search (reorder=True or 'report'), per graph: the order found and its "
          "bound beside the given order's; None without a search.");
  bindPlanWriters(plan);
}

// Plan's writers: the plan file (-o), the C header, a .tflite or .pte with
// the plan, the viewer and the picture.
void bindPlanWriters(py::class_<PyPlan>& plan) {
  plan
      .def("to_json", [](const PyPlan& p, bool include_timing) {
            WritePlanOptions o;
            o.include_timing = include_timing;
            return writePlan(*p.plan, *p.input, o); },
          py::arg("include_timing") = false)
      .def("to_csv", [](const PyPlan& p) {
            WritePlanOptions o;
            o.format = PlanFormat::Csv;
            return writePlan(*p.plan, *p.input, o); })
      .def("write", [](const PyPlan& p, const std::filesystem::path& path, bool include_timing) {
            WritePlanOptions o;
            o.include_timing = include_timing;
            py::gil_scoped_release release;
            writePlan(path, *p.plan, *p.input, o); },
          py::arg("path"), py::arg("include_timing") = false)
      .def_property_readonly("carried", [](const PyPlan& p) { return p.carried; },
                             "The plan the input carries in itself (memplan.carried_plan).")
      .def_property_readonly("tflite_micro_bytes", [](const PyPlan& p) {
            return tflmField(p, &TflmComparison::tflm); },
          "A .tflite planned into one pool: the arena TFLite Micro's own planner "
          "(GreedyMemoryPlanner) needs for it; None otherwise.")
      .def_property_readonly("tflite_micro_arena_size", [](const PyPlan& p) {
            return tflmField(p, &TflmComparison::arena_size); },
          "A .tflite planned into one pool: the kTensorArenaSize to give TFLite Micro "
          "with this plan (its head, TFLite Micro's own tensors, operators and kernel "
          "data; estimated); None otherwise.")
      // Exporters: the library's (memplan/memplan.h), as the CLI's flags.
      .def("emit_c", [](const PyPlan& p, const std::filesystem::path& path, const std::string& prefix) {
            CHeaderOptions o;
            o.prefix = prefix;
            py::gil_scoped_release release;
            writeCHeader(path, *p.plan, *p.input, o); },
          py::arg("path"), py::arg("prefix") = "memplan",
          "Writes the plan as a C/C++ header (`memplan plan --emit-c`), atomically.")
      .def("write_tflite", [](const PyPlan& p, const std::filesystem::path& path) {
            std::vector<std::string> warnings;
            {
              py::gil_scoped_release release;
              warnings = writeTflite(path, *p.plan, *p.input);
            }
            for (const std::string& w : warnings)
              if (PyErr_WarnEx(PyExc_UserWarning, w.c_str(), 1) != 0) throw py::error_already_set();
          },
          py::arg("path"),
          "Writes a copy of the .tflite input carrying the plan as TensorFlow Lite Micro's offline "
          "plan (`memplan plan --write-tflite`), atomically.")
      .def("write_pte", [](const PyPlan& p, const std::filesystem::path& path) {
            py::gil_scoped_release release;
            writePte(path, *p.plan, *p.input); },
          py::arg("path"),
          "Writes the .pte input with the plan (`memplan plan --write-pte`), atomically.")
      .def("write_html", [](const PyPlan& p, const std::filesystem::path& path, const std::string& title) {
            HtmlOptions o;
            o.title = title;
            py::gil_scoped_release release;
            writeHtml(path, *p.plan, *p.input, o); },
          py::arg("path"), py::arg("title") = "",
          "Writes the self-contained HTML viewer (`memplan plan --html`), atomically.")
      .def("write_svg", [](const PyPlan& p, const std::filesystem::path& path, const std::string& title) {
            SvgOptions o;
            o.title = title;
            py::gil_scoped_release release;
            writeSvg(path, *p.plan, *p.input, o); },
          py::arg("path"), py::arg("title") = "",
          "Writes a static SVG picture of the layout (`memplan plan --svg`), atomically.");
}

// memplan.plan: a PlanRequest from keywords.
void bindPlanning(py::module_& m) {
  m.def("plan",
        [](const InputPtr& input, const std::string& algorithm, Bytes alignment, std::optional<std::int64_t> extra_padding,
           bool plan_inputs, bool plan_outputs, bool plan_mutable_buffers, bool per_device, double effort,
           double time_limit, const std::map<std::int64_t, std::int64_t>& capacities,
           const std::vector<std::int64_t>& spill_order, bool share_mutable_buffers, bool allow_pinned_overlap,
           const std::string& reorder) {
          PlanRequest r;
          if (reorder == "apply") r.reorder = ReorderMode::Apply;
          else if (reorder == "report") r.reorder = ReorderMode::Report;
          else if (!reorder.empty())
            throw InputError(fmt::format("reorder: '{}' is not True, False or 'report'", reorder));
          r.algorithm = algorithm;
          r.options.alignment = alignment;
          if (extra_padding) {
            if (*extra_padding < 0) throw InputError(fmt::format("extra_padding: {} is negative", *extra_padding));
            r.extra_padding = static_cast<Bytes>(*extra_padding);
          }
          r.options.alloc_graph_input = plan_inputs;
          r.options.alloc_graph_output = plan_outputs;
          r.options.alloc_mutable_buffers = plan_mutable_buffers;
          r.options.per_device = per_device;
          r.options.share_mutable_buffers = share_mutable_buffers;
          r.options.allow_pinned_overlap = allow_pinned_overlap;
          setCapacities(r.options, capacities, spill_order);
          r.params.effort = effort;
          r.params.time_limit_seconds = time_limit;
          std::shared_ptr<const Plan> plan;
          {
            py::gil_scoped_release release;
            plan = std::make_shared<const Plan>(memplan::plan(*input, r));
          }
          return PyPlan{plan, input};
        },
        py::arg("input"), py::arg("algorithm"), py::arg("alignment"), py::arg("extra_padding"),
        py::arg("plan_inputs"), py::arg("plan_outputs"), py::arg("plan_mutable_buffers"), py::arg("per_device"),
        py::arg("effort"), py::arg("time_limit"), py::arg("capacities"), py::arg("spill_order"),
        py::arg("share_mutable_buffers") = false, py::arg("allow_pinned_overlap") = false,
        py::arg("reorder") = "");

}

// verify and replay, and their verdicts.
void bindVerdicts(py::module_& m) {
  py::class_<PyVerify>(m, "VerifyResult", "The verifier's verdict on a plan.")
      .def_property_readonly("ok", [](const PyVerify& v) { return v.r.ok(); })
      .def("__bool__", [](const PyVerify& v) { return v.r.ok(); })
      .def_property_readonly("violations", [](const PyVerify& v) {
            std::vector<std::string> out;
            for (const Violation& x : v.r.violations) out.push_back(x.message);
            return out; },
          "One line per violation (at most 16), the first first.")
      .def_property_readonly("first_violation", [](const PyVerify& v) -> py::object {
            if (v.r.violations.empty()) return py::none();
            return py::str(v.r.violations.front().message); })
      .def_property_readonly("violation_graphs", [](const PyVerify& v) {
            std::vector<GraphId> out;
            for (const Violation& x : v.r.violations) out.push_back(x.graph);
            return out; },
          "Graph of each violation.")
      .def_property_readonly("warnings", [](const PyVerify& v) { return v.r.warnings; })
      .def_property_readonly("checked_allocations", [](const PyVerify& v) { return v.r.checked_allocations; })
      .def("__repr__", [](const PyVerify& v) {
        return v.r.ok() ? fmt::format("<memplan.VerifyResult ok, {} allocations>", v.r.checked_allocations)
                        : fmt::format("<memplan.VerifyResult FAILED: {}>", v.r.violations.front().message);
      });
  m.def("verify", [](const InputPtr& input, const PyPlan& plan) {
          py::gil_scoped_release release;
          return PyVerify{plan.carried && input == plan.input ? verifyCarriedPlan(*input, *plan.plan)
                                                              : memplan::verify(*input, *plan.plan)};
        }, py::arg("input"), py::arg("plan"));

  py::class_<ReplayResult>(m, "ReplayResult", "The replay's verdict: the model run on shadow arenas.")
      .def_property_readonly("ok", &ReplayResult::ok)
      .def("__bool__", &ReplayResult::ok)
      .def_property_readonly("issue", [](const ReplayResult& r) { return replayIssueName(r.issue); },
                             "'none', 'clobber', 'out_of_arena', 'short_allocation' or 'bad_plan'.")
      .def_readonly("message", &ReplayResult::message, "One line naming the first problem ('' when ok).")
      .def_property_readonly("first_violation", [](const ReplayResult& r) { return maybeStr(r.message); },
                             "The message, or None when ok.")
      .def_readonly("graph", &ReplayResult::graph)
      .def_readonly("victim", &ReplayResult::victim, "Tensor whose bytes were lost (clobber).")
      .def_readonly("writer", &ReplayResult::writer, "Tensor that overwrote them.")
      .def_readonly("writer_node", &ReplayResult::writer_node)
      .def_readonly("write_step", &ReplayResult::write_step)
      .def_readonly("reader_node", &ReplayResult::reader_node)
      .def_readonly("read_step", &ReplayResult::read_step)
      .def_readonly("mem_id", &ReplayResult::mem_id)
      .def_readonly("offset", &ReplayResult::offset, "First clobbered byte in the pool.")
      .def_readonly("writes", &ReplayResult::writes)
      .def_readonly("reads", &ReplayResult::reads)
      .def_readonly("steps", &ReplayResult::steps)
      .def("__repr__", [](const ReplayResult& r) {
        return r.ok() ? fmt::format("<memplan.ReplayResult ok, {} writes, {} reads>", r.writes, r.reads)
                      : fmt::format("<memplan.ReplayResult FAILED: {}>", r.message);
      });
  m.def("replay", [](const InputPtr& input, const PyPlan& plan, std::uint64_t max_dense_bytes, bool force_sparse) {
          ReplayOptions o;
          o.max_dense_bytes = max_dense_bytes;
          o.force_sparse = force_sparse;
          py::gil_scoped_release release;
          return memplan::replay(*input, *plan.plan, o);
        }, py::arg("input"), py::arg("plan"), py::arg("max_dense_bytes"), py::arg("force_sparse"));

}

// Plan files, carried plans, the algorithm list and spec lists.
void bindPlanFiles(py::module_& m) {
  m.def("read_plan", [](const std::filesystem::path& path, const InputPtr& input) {
          std::shared_ptr<const Plan> plan;
          {
            py::gil_scoped_release release;
            const std::string text = readFile(path);
            plan = std::make_shared<const Plan>(readPlanFor(*input, text, path.string()));
          }
          return PyPlan{plan, input};
        }, py::arg("path"), py::arg("input"));
  m.def("carried_plan", [](const InputPtr& input, bool allow_pinned_overlap) {
          std::shared_ptr<const Plan> plan;
          {
            py::gil_scoped_release release;
            plan = std::make_shared<const Plan>(carriedPlan(*input, allow_pinned_overlap));
          }
          return PyPlan{plan, input, true};
        }, py::arg("input"), py::arg("allow_pinned_overlap") = false);
  m.def("plan_source", [](const std::filesystem::path& path) -> py::object {
          PlanProvenance made;
          {
            py::gil_scoped_release release;
            const std::string text = readFile(path);
            made = readPlanProvenance(text, path.string());
          }
          if (!made.source) return py::none();
          py::dict d;
          d["name"] = made.source->name;
          d["size"] = made.source->size;
          d["sha256"] = made.source->sha256;
          d["input_shapes"] = made.import_options.input_shapes;
          d["dims"] = made.import_options.dims;
          d["alias_views"] = made.import_options.alias_views;
          d["unknown_size_bytes"] = made.import_options.unknown_size_bytes;
          d["ignore_offline_plan"] = made.import_options.ignore_offline_plan;
          return d;
        }, py::arg("path"));

  m.def("algorithms", [] {
    py::list out;
    for (const std::string& name : algorithmNames()) {
      const AlgorithmInfo* info = findAlgorithmInfo(name);
      out.append(py::make_tuple(name, std::string(info->summary), info->executorch_exact));
    }
    return out;
  }, "(name, summary, executorch_exact) for every algorithm.");

  m.def("_plan_specs",
        [](const std::vector<Bytes>& nbytes, const std::vector<TimeValue>& first, const std::vector<TimeValue>& last,
           const std::vector<std::int64_t>& mem_id, const std::vector<std::int64_t>& inplace_base,
           const std::string& algorithm, Bytes alignment, Bytes extra_padding, const std::vector<Bytes>& reserved,
           double effort, double time_limit, const std::map<std::int64_t, std::int64_t>& capacities,
           const std::vector<std::int64_t>& spill_order) {
          SpecPlan r;
          {
            py::gil_scoped_release release;
            r = planSpecList(nbytes, first, last, mem_id, inplace_base, algorithm, alignment, extra_padding,
                             reserved, effort, time_limit, capacities, spill_order);
          }
          py::dict d;
          d["bufsizes"] = r.bufsizes;
          d["mem_ids"] = r.mem_ids;
          d["mem_obj_ids"] = r.mem_obj_ids;
          d["offsets"] = r.offsets;
          d["ok"] = r.ok;
          d["violation"] = r.violation;
          d["winner"] = r.winner;
          d["lower_bound"] = r.lower_bound;
          d["proven_optimal"] = r.proven_optimal;
          d["executorch_exact"] = r.executorch_exact;
          return d;
        },
        py::arg("nbytes"), py::arg("first"), py::arg("last"), py::arg("mem_id"), py::arg("inplace_base"),
        py::arg("algorithm"), py::arg("alignment"), py::arg("extra_padding"), py::arg("reserved"),
        py::arg("effort"), py::arg("time_limit"),
        py::arg("capacities") = std::map<std::int64_t, std::int64_t>{},
        py::arg("spill_order") = std::vector<std::int64_t>{},
        "Plans an in-memory spec list (the ExecuTorch plug-in's entry). mem_id 0 = none, "
        "inplace_base -1 = none; capacities {mem_id: bytes} spill into the pools of spill_order.");

}

}  // namespace

PYBIND11_MODULE(_memplan, m) {
  m.doc() = "memplan's C++ library (memplan/memplan.h) for Python; use the `memplan` package.";
  bindErrors(m);
  bindInput(m);
  bindPlanParts(m);
  bindPlan(m);
  bindPlanning(m);
  bindVerdicts(m);
  bindPlanFiles(m);
  m.attr("__version__") = MEMPLAN_VERSION;
}

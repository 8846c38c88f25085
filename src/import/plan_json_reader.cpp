// Plan JSON reader (format: docs/plan-format.md; ids: import/plan_file.h).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <variant>

#include "import/order_json.h"
#include "import/plan_file.h"
#include "memplan/io.h"
#include "memplan/limits.h"
#include "support/json_text.h"
#include "support/text.h"

namespace memplan {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using planfile::SpecKey;
using planfile::specKeys;
using planfile::bufferDeviceJson;
using planfile::methodsJson;
using planfile::sharedStateJson;
using jsontext::dump;
using jsontext::item;
using jsontext::oneLine;
using jsontext::textJson;
using jsontext::typeName;

using limits::kMaxPools;

class PlanReader : public jsontext::Fields {
 public:
  explicit PlanReader(const std::string& source) : Fields(source) {}

  json parse(std::string_view text) const {
    const json root = jsontext::parse(text, source(), schema());
    if (!root.is_object()) fail("", std::string("expected a JSON object, got ") + typeName(root));
    const json* format = find(root, "format");
    if (!format || !format->is_string() ||
        format->get_ref<const std::string&>() != "memplan-plan")
      fail("format", "expected \"memplan-plan\"");
    const json* version = find(root, "version");
    if (!version) fail("version", "missing (this memplan reads versions 1 to 4)");
    if (!version->is_number_unsigned() || version->get<std::uint64_t>() < 1 ||
        version->get<std::uint64_t>() > 4)
      fail("version",
           oneLine(version->dump(), 40) + " is not supported (this memplan reads versions 1 to 4)");
    return root;
  }

  // Members and array limits refused while parsing, before their values are built.
  static const jsontext::Schema& schema() {
    constexpr std::size_t kMaxAllocations = 2 * limits::kMaxTensors + 16;  // as readGraph allows
    static const jsontext::Schema kSchema{
        "",
        {"format", "version", "source", "import_options", "algorithm", "options", "search",
         "planning_seconds", "methods", "shared_state", "bufsizes", "allocations", "graphs", "order"},
        {{"graphs", limits::kMaxGraphs}, {"methods", limits::kMaxGraphs},
         {"allocations", kMaxAllocations}, {"graphs[].allocations", kMaxAllocations},
         {"bufsizes", kMaxPools}, {"graphs[].bufsizes", kMaxPools}, {"graphs[].pools", kMaxPools},
         {"graphs[].pool_devices", kMaxPools}, {"options.capacities", kMaxPools},
         {"options.spill_order", kMaxPools}, {"order.graphs", limits::kMaxGraphs},
         {"order.graphs[].nodes", limits::kMaxNodes}}};
    return kSchema;
  }

  PlanProvenance provenance(const json& root) const {
    PlanProvenance p;
    if (const json* s = find(root, "source")) {
      object(*s, "source");
      knownKeys(*s, "source", {"name", "size", "sha256"});
      SourceInfo src;
      src.name = text(require(*s, "source", "name"), "source.name");
      src.size = unsignedInt(require(*s, "source", "size"), "source.size", UINT64_MAX);
      src.sha256 = str(require(*s, "source", "sha256"), "source.sha256");
      if (!src.sha256.empty() && (src.sha256.size() != 64 ||
                                  src.sha256.find_first_not_of("0123456789abcdef") != std::string::npos))
        fail("source.sha256", "expected 64 lower-case hex digits");
      p.source = std::move(src);
    }
    if (const json* v = find(root, "import_options")) {
      object(*v, "import_options");
      knownKeys(*v, "import_options", {"input_shapes", "dims", "alias_views", "unknown_size_bytes",
                                                "ignore_offline_plan"});
      if (const json* shapes = find(*v, "input_shapes"))
        named(*shapes, "import_options.input_shapes", [&](const std::string& name, const json& dims,
                                                          const std::string& at) {
          array(dims, at, limits::kMaxRank);
          std::vector<std::int64_t> shape;
          for (std::size_t i = 0; i < dims.size(); ++i)
            shape.push_back(static_cast<std::int64_t>(unsignedInt(dims[i], item(at, i), kMaxBytes)));
          p.import_options.input_shapes[name] = std::move(shape);
        });
      if (const json* dims = find(*v, "dims"))
        named(*dims, "import_options.dims", [&](const std::string& name, const json& value,
                                                const std::string& at) {
          p.import_options.dims[name] = static_cast<std::int64_t>(unsignedInt(value, at, kMaxBytes));
        });
      if (const json* b = find(*v, "alias_views"))
        p.import_options.alias_views = boolean(*b, "import_options.alias_views");
      if (const json* b = find(*v, "unknown_size_bytes"))
        p.import_options.unknown_size_bytes =
            unsignedInt(*b, "import_options.unknown_size_bytes", kMaxBytes);
      if (const json* b = find(*v, "ignore_offline_plan"))
        p.import_options.ignore_offline_plan = boolean(*b, "import_options.ignore_offline_plan");
    }
    if (const json* o = find(root, "order")) readOrderJson(*this, *o, p.order, p.order_applied);
    if (const json* a = find(root, "algorithm")) p.request.algorithm = str(*a, "algorithm");
    p.request.options = options(root);
    if (const json* v = find(root, "options"); v && find(*v, "extra_padding"))
      p.request.extra_padding = unsignedInt(*find(*v, "extra_padding"), "options.extra_padding", kMaxBytes);
    if (const json* s = find(root, "search")) {
      object(*s, "search");
      knownKeys(*s, "search", {"effort", "time_limit_seconds", "seed", "stopped"});
      if (const json* x = find(*s, "stopped")) {
        const std::string why = str(*x, "search.stopped");
        if (why != "time limit" && why != "interrupted")
          fail("search.stopped", "expected \"time limit\" or \"interrupted\"");
      }
      const auto number = [&](const char* key) -> std::optional<double> {
        const json* x = find(*s, key);
        if (!x) return std::nullopt;
        if (!x->is_number() || x->get<double>() < 0)
          fail(std::string("search.") + key, "expected a non-negative number");
        return x->get<double>();
      };
      if (auto e = number("effort")) p.request.params.effort = *e;
      if (auto t = number("time_limit_seconds")) p.request.params.time_limit_seconds = *t;
      if (const json* x = find(*s, "seed")) p.request.params.seed = unsignedInt(*x, "search.seed", UINT64_MAX);
    }
    return p;
  }

  PlanOptions options(const json& root) const {
    PlanOptions o;
    const json* v = find(root, "options");
    if (!v) return o;
    object(*v, "options");
    knownKeys(*v, "options", {"alloc_graph_input", "alloc_graph_output", "alloc_mutable_buffers",
                              "alignment", "per_device", "share_mutable_buffers", "capacities",
                              "spill_order", "extra_padding", "allow_pinned_overlap"});
    if (const json* b = find(*v, "alloc_graph_input")) o.alloc_graph_input = boolean(*b, "options.alloc_graph_input");
    if (const json* b = find(*v, "alloc_graph_output")) o.alloc_graph_output = boolean(*b, "options.alloc_graph_output");
    if (const json* b = find(*v, "alloc_mutable_buffers"))
      o.alloc_mutable_buffers = boolean(*b, "options.alloc_mutable_buffers");
    if (const json* b = find(*v, "per_device")) o.per_device = boolean(*b, "options.per_device");
    if (const json* b = find(*v, "allow_pinned_overlap"))
      o.allow_pinned_overlap = boolean(*b, "options.allow_pinned_overlap");
    if (const json* b = find(*v, "share_mutable_buffers"))
      o.share_mutable_buffers = boolean(*b, "options.share_mutable_buffers");
    if (const json* a = find(*v, "alignment")) {
      o.alignment = unsignedInt(*a, "options.alignment", Bytes{1} << 30);
      if (o.alignment == 0) fail("options.alignment", "expected a positive integer, got 0");
    }
    if (const json* c = find(*v, "capacities")) {
      array(*c, "options.capacities", kMaxPools);
      for (std::size_t i = 0; i < c->size(); ++i)
        o.capacities.push_back((*c)[i].is_null()
                                   ? std::optional<Bytes>()
                                   : unsignedInt((*c)[i], item("options.capacities", i), kMaxBytes));
    }
    if (const json* s = find(*v, "spill_order")) {
      array(*s, "options.spill_order", kMaxPools);
      for (std::size_t i = 0; i < s->size(); ++i)
        o.spill_order.push_back(memId((*s)[i], item("options.spill_order", i)));
    }
    return o;
  }

  Plan plan(const json& root, Plan skeleton) const {
    const PlanOptions file_options = options(root);
    const auto same = [&](bool file, bool input, const char* field) {
      if (file != input)
        fail(std::string("options.") + field,
             std::string("the plan was made with ") + (file ? "true" : "false") +
                 ", the check with " + (input ? "true" : "false"));
    };
    same(file_options.alloc_graph_input, skeleton.options.alloc_graph_input, "alloc_graph_input");
    same(file_options.alloc_graph_output, skeleton.options.alloc_graph_output, "alloc_graph_output");
    same(file_options.alloc_mutable_buffers, skeleton.options.alloc_mutable_buffers,
         "alloc_mutable_buffers");
    same(file_options.share_mutable_buffers, skeleton.options.share_mutable_buffers,
         "share_mutable_buffers");
    const PlanProvenance made = provenance(root);
    skeleton.options = file_options;
    skeleton.algorithm = made.request.algorithm;
    skeleton.extra_padding = made.request.extra_padding.value_or(0);
    skeleton.effort = made.request.params.effort;
    skeleton.time_limit_seconds = made.request.params.time_limit_seconds;
    skeleton.seed = made.request.params.seed;
    if (const json* s = find(root, "search"); s && find(*s, "stopped"))
      skeleton.search_stopped = find(*s, "stopped")->get<std::string>();
    if (made.source) skeleton.source = *made.source;
    skeleton.import_options = made.import_options;
    if (const json* t = find(root, "planning_seconds")) {
      if (!t->is_number() || t->get<double>() < 0)
        fail("planning_seconds", "expected a non-negative number");
      skeleton.planning_seconds = t->get<double>();
    }
    const json* graphs = find(root, "graphs");
    if (!graphs) fail("graphs", "missing");
    array(*graphs, "graphs", limits::kMaxGraphs);
    if (graphs->size() != skeleton.graphs.size())
      fail("graphs", "the plan has " + std::to_string(graphs->size()) + " graphs, the input " +
                         std::to_string(skeleton.graphs.size()));
    for (std::size_t g = 0; g < graphs->size(); ++g) readGraph((*graphs)[g], g, skeleton.graphs[g]);
    // Methods and shared state are read off the graphs; the sections the
    // writer adds for reading by eye must say the same.
    const json* methods = find(root, "methods");
    if (!skeleton.methods.empty() && !methods)
      fail("methods", "missing: the input has " + std::to_string(skeleton.methods.size()) + " methods");
    if (methods && *methods != json::parse(dump(methodsJson(skeleton))))
      fail("methods", "differs from the input's methods and their graphs' bufsizes");
    const json* state = find(root, "shared_state");
    const ojson derived = sharedStateJson(skeleton);
    if (state ? *state != json::parse(dump(derived)) : !derived.is_null())
      fail("shared_state", state ? "differs from the state allocations of the methods' graphs"
                                 : "missing: the methods' graphs hold shared state");
    // The top-level copies exist for reading by eye; a hand edit must not
    // make them say something else than the graph that is verified.
    for (const char* key : {"bufsizes", "allocations"}) {
      const json* top = find(root, key);
      if (!top) continue;
      const json* inner = graphs->empty() ? nullptr : find((*graphs)[0], key);
      if (!inner || *top != *inner)
        fail(key, std::string("differs from graphs[0].") + key + " (the top-level copy must match)");
    }
    return skeleton;
  }

 private:
  // An object of names (or, with names that are not UTF-8, a list of
  // {"name": ..., "value": ...}): `each(name, value, path)` for every entry.
  template <typename Each>
  void named(const json& v, const std::string& at, Each each) const {
    if (v.is_array()) {
      array(v, at, limits::kMaxTensors);
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string eat = item(at, i);
        object(v[i], eat);
        knownKeys(v[i], eat, {"name", "value"});
        each(text(require(v[i], eat, "name"), eat + ".name"), require(v[i], eat, "value"), eat + ".value");
      }
      return;
    }
    object(v, at);
    for (const auto& [name, value] : v.items()) each(name, value, at + "." + oneLine(name, 60));
  }

  MemId memId(const json& v, const std::string& at) const {
    return static_cast<MemId>(unsignedInt(v, at, limits::kMaxMemId));
  }
  Device device(const json& v, const std::string& at) const {
    const std::string text = str(v, at);
    const auto d = parseDevice(text);
    if (!d) fail(at, "expected a device like \"cpu:0\", got '" + oneLine(text, 60) + "'");
    return *d;
  }

  // Long (~130 lines) on purpose: one graph's members in the order of
  // docs/plan-format.md, each read and checked where its place is named.
  void readGraph(const json& v, std::size_t gi, GraphPlan& g) const {
    const std::string at = item("graphs", gi);
    object(v, at);
    knownKeys(v, at, {"graph", "name", "steps", "bufsizes", "pool_devices", "non_const_buffer_device",
                      "pools", "allocations"});
    if (const json* id = find(v, "graph"); id && unsignedInt(*id, at + ".graph", limits::kMaxGraphs) != gi)
      fail(at + ".graph", "must equal the graph's position " + std::to_string(gi));
    g.graph = static_cast<GraphId>(gi);

    if (const json* steps = find(v, "steps")) {
      const std::uint64_t n = unsignedInt(*steps, at + ".steps", static_cast<std::uint64_t>(limits::kMaxTime));
      if (n != static_cast<std::uint64_t>(g.specs.steps))
        fail(at + ".steps", std::to_string(n) + " differs from the input's " +
                                std::to_string(g.specs.steps) + " steps");
    }
    g.bufsizes.clear();
    if (const json* b = find(v, "bufsizes")) {
      array(*b, at + ".bufsizes", kMaxPools);
      for (std::size_t i = 0; i < b->size(); ++i)
        g.bufsizes.push_back(unsignedInt((*b)[i], item(at + ".bufsizes", i), kMaxBytes));
      if (!g.bufsizes.empty() && g.bufsizes[0] != 0)
        fail(at + ".bufsizes[0]", std::to_string(g.bufsizes[0]) +
                                      ": mem_id 0 holds constants, which are not planned (always 0)");
    }
    const std::size_t num_pools = g.bufsizes.size();
    g.pool_devices.assign(num_pools, Device{});
    if (const json* d = find(v, "pool_devices")) {
      array(*d, at + ".pool_devices", kMaxPools);
      if (d->size() != num_pools)
        fail(at + ".pool_devices", std::to_string(d->size()) + " entries for " +
                                       std::to_string(num_pools) + " bufsizes");
      for (std::size_t i = 0; i < d->size(); ++i)
        g.pool_devices[i] = device((*d)[i], item(at + ".pool_devices", i));
    }
    // ExecuTorch's view of pool_devices: it must say the same.
    const json* bd = find(v, "non_const_buffer_device");
    const ojson derived = bufferDeviceJson(g);
    if (bd ? *bd != json::parse(dump(derived)) : !derived.empty())
      fail(at + ".non_const_buffer_device",
           bd ? "differs from pool_devices (one entry per pool not on a CPU)"
              : "missing: pool_devices has pools not on a CPU");

    g.pools.clear();
    if (const json* p = find(v, "pools")) {
      array(*p, at + ".pools", kMaxPools);
      std::vector<bool> listed(num_pools, false);
      for (std::size_t i = 0; i < p->size(); ++i) {
        const std::string pat = item(at + ".pools", i);
        g.pools.push_back(pool((*p)[i], pat, num_pools));
        samePool(g, g.pools.back(), listed, pat);
      }
    }

    // Ids of the input's specs, to match allocations against.
    const std::vector<SpecKey> keys = specKeys(g.specs);
    std::unordered_map<std::int64_t, SpecId> by_int;
    std::unordered_map<std::string, SpecId> by_name;
    for (std::size_t s = 0; s < keys.size(); ++s) {
      if (const auto* i = std::get_if<std::int64_t>(&keys[s])) by_int.emplace(*i, static_cast<SpecId>(s));
      if (const auto* n = std::get_if<std::string>(&keys[s])) by_name.emplace(*n, static_cast<SpecId>(s));
    }
    g.allocations.clear();
    if (const json* list = find(v, "allocations")) {
      const std::string lat = at + ".allocations";
      // Each spec at most once, plus slack for duplicates the verifier reports.
      array(*list, lat, 2 * g.specs.specs.size() + 16);
      g.allocations.reserve(list->size());
      for (std::size_t i = 0; i < list->size(); ++i) {
        const json& a = (*list)[i];
        const std::string aat = item(lat, i);
        object(a, aat);
        knownKeys(a, aat, {"id", "tensor", "spec", "mem_id", "mem_obj_id", "mem_offset", "size", "lifetime"});
        Allocation x;
        const json* id = find(a, "id");
        if (const json* tensor = find(a, "tensor")) {
          // Version 4, a model's plan: the tensor identifies, the name must agree.
          const std::uint64_t t = unsignedInt(*tensor, aat + ".tensor", limits::kMaxTensors);
          const SpecId s = t < g.specs.tensor_spec.size() ? g.specs.tensor_spec[t] : kNone;
          if (s == kNone || static_cast<std::uint64_t>(g.specs.specs[s].tensor) != t)
            fail(aat + ".tensor", "tensor " + std::to_string(t) + " is no planned storage of graph " +
                                      std::to_string(gi) + " of the input");
          if (id && !id->is_null() && text(*id, aat + ".id") != g.specs.specs[s].name)
            fail(aat + ".id", "tensor " + std::to_string(t) + " is '" + oneLine(g.specs.specs[s].name, 80) +
                                  "' in the input, '" + oneLine(text(*id, aat + ".id"), 80) + "' here");
          x.spec = s;
        } else if (!id) {
          fail(aat, "missing 'id'");
        } else if (id->is_string() || id->is_object()) {
          const std::string name = text(*id, aat + ".id");
          const auto it = by_name.find(name);
          if (it == by_name.end())
            fail(aat + ".id", "no tensor '" + oneLine(name, 80) + "' in graph " + std::to_string(gi) +
                                  " of the input");
          x.spec = it->second;
        } else if (id->is_number_integer()) {
          const std::int64_t n = signedInt(*id, aat + ".id", INT64_MIN, INT64_MAX);
          const auto it = by_int.find(n);
          if (it == by_int.end())
            fail(aat + ".id", "no spec with id " + std::to_string(n) + " in graph " +
                                  std::to_string(gi) + " of the input");
          x.spec = it->second;
        } else if (id->is_null()) {
          const json* spec = find(a, "spec");
          if (!spec) fail(aat, "'id' is null and 'spec' is missing");
          const std::uint64_t s = unsignedInt(*spec, aat + ".spec", 0x7fffffff);
          if (s >= keys.size() || !std::holds_alternative<std::monostate>(keys[s]))
            fail(aat + ".spec", "spec " + std::to_string(s) +
                                    " of the input has no unnamed tensor there");
          x.spec = static_cast<SpecId>(s);
        } else {
          fail(aat + ".id", std::string("expected a name, an integer or null, got ") + typeName(*id));
        }
        const auto need = [&](const char* key) -> const json& {
          const json* f = find(a, key);
          if (!f) fail(aat, std::string("missing '") + key + "'");
          return *f;
        };
        x.mem_id = static_cast<MemId>(signedInt(need("mem_id"), aat + ".mem_id", 0, kMaxPools));
        x.mem_obj_id = static_cast<std::int32_t>(
            signedInt(need("mem_obj_id"), aat + ".mem_obj_id", -1, 0x7fffffff));
        x.offset = unsignedInt(need("mem_offset"), aat + ".mem_offset", kMaxBytes);
        x.size = unsignedInt(need("size"), aat + ".size", kMaxBytes);
        if (const json* l = find(a, "lifetime")) {
          array(*l, aat + ".lifetime", 2);
          if (l->size() != 2) fail(aat + ".lifetime", "expected [first, last]");
          signedInt((*l)[0], aat + ".lifetime[0]", INT64_MIN, INT64_MAX);
          signedInt((*l)[1], aat + ".lifetime[1]", INT64_MIN, INT64_MAX);
        }
        g.allocations.push_back(x);
      }
      std::stable_sort(g.allocations.begin(), g.allocations.end(),
                       [](const Allocation& p, const Allocation& q) { return p.spec < q.spec; });
    }
  }

  // What the report shows of a pool must be the plan's: its size and device
  // those of bufsizes and pool_devices, each pool listed once.
  void samePool(const GraphPlan& g, const PoolInfo& p, std::vector<bool>& listed, const std::string& at) const {
    const auto m = static_cast<std::size_t>(p.mem_id);
    if (listed[m]) fail(at + ".mem_id", "pool " + std::to_string(m) + " is listed twice");
    listed[m] = true;
    if (p.size != g.bufsizes[m])
      fail(at + ".size", std::to_string(p.size) + " differs from bufsizes[" + std::to_string(m) +
                             "] = " + std::to_string(g.bufsizes[m]));
    if (p.device != g.pool_devices[m])
      fail(at + ".device", p.device.str() + " differs from pool_devices[" + std::to_string(m) +
                               "] = " + g.pool_devices[m].str());
    if (p.reserved > p.size)
      fail(at + ".reserved", std::to_string(p.reserved) + " is above the pool's size " + std::to_string(p.size));
  }

  PoolInfo pool(const json& v, const std::string& at, std::size_t num_pools) const {
    object(v, at);
    knownKeys(v, at, {"mem_id", "device", "size", "lower_bound", "ratio", "naive_size", "reserved",
                      "buffers", "algorithm", "proven_optimal", "work", "state"});
    PoolInfo p;
    const json* id = find(v, "mem_id");
    if (!id) fail(at, "missing 'mem_id'");
    p.mem_id = memId(*id, at + ".mem_id");
    if (p.mem_id < 1 || static_cast<std::size_t>(p.mem_id) >= num_pools)
      fail(at + ".mem_id", std::to_string(p.mem_id) + " is not a pool of bufsizes (1 to " +
                               std::to_string(num_pools == 0 ? 0 : num_pools - 1) + ")");
    if (const json* d = find(v, "device")) p.device = device(*d, at + ".device");
    if (const json* x = find(v, "size")) p.size = unsignedInt(*x, at + ".size", kMaxBytes);
    if (const json* x = find(v, "lower_bound")) p.lower_bound = unsignedInt(*x, at + ".lower_bound", kMaxBytes);
    if (const json* x = find(v, "naive_size")) p.naive_size = unsignedInt(*x, at + ".naive_size", UINT64_MAX);
    if (const json* x = find(v, "reserved")) p.reserved = unsignedInt(*x, at + ".reserved", kMaxBytes);
    if (const json* x = find(v, "buffers")) p.buffers = unsignedInt(*x, at + ".buffers", UINT64_MAX);
    if (const json* x = find(v, "algorithm")) p.algorithm = str(*x, at + ".algorithm");
    if (const json* x = find(v, "proven_optimal")) p.proven_optimal = boolean(*x, at + ".proven_optimal");
    if (const json* x = find(v, "work")) p.work = unsignedInt(*x, at + ".work", UINT64_MAX);
    if (const json* x = find(v, "state")) p.state = boolean(*x, at + ".state");
    if (const json* x = find(v, "ratio"); x && !x->is_null() && !x->is_number())
      fail(at + ".ratio", "expected a number or null");
    return p;
  }

};

}  // namespace

PlanProvenance readPlanProvenance(std::string_view text, const std::string& source_name) {
  const PlanReader r(source_name);
  return r.provenance(r.parse(text));
}

Plan readPlanJson(std::string_view text, const std::string& source_name, Plan skeleton) {
  const PlanReader r(source_name);
  return r.plan(r.parse(text), std::move(skeleton));
}

}  // namespace memplan

// Plan JSON writer (format: docs/plan-format.md; ids: import/plan_file.h).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <variant>

#include "import/order_json.h"
#include "import/plan_file.h"
#include "memplan/io.h"
#include "support/json_text.h"
#include "support/text.h"

namespace memplan {
namespace {

using ojson = nlohmann::ordered_json;
using planfile::SpecKey;
using planfile::specKeys;
using planfile::methodsJson;
using planfile::sharedStateJson;
using planfile::bufferDeviceJson;

// ---- writer ----

// Six decimals: enough for a ratio or a duration, short and stable.
double round6(double v) { return std::round(v * 1e6) / 1e6; }

using jsontext::dump;
using jsontext::textJson;

// Names as object keys (input shapes, dims): an object when every name is
// valid UTF-8, else a list of {"name": ..., "value": ...} (a key cannot be
// {"bytes": ...}).
template <typename Map>
ojson namedJson(const Map& map) {
  bool plain = true;
  for (const auto& entry : map) plain &= isUtf8(entry.first);
  if (plain) {
    ojson j = ojson::object();
    for (const auto& [name, value] : map) j[name] = value;
    return j;
  }
  ojson j = ojson::array();
  for (const auto& [name, value] : map) j.push_back(ojson{{"name", textJson(name)}, {"value", value}});
  return j;
}

ojson sourceJson(const SourceInfo& s) {
  ojson j;
  j["name"] = textJson(s.name);
  j["size"] = s.size;
  j["sha256"] = s.sha256;
  return j;
}

ojson importJson(const ImportOptions& o) {
  ojson j;
  j["input_shapes"] = namedJson(o.input_shapes);
  j["dims"] = namedJson(o.dims);
  j["alias_views"] = o.alias_views;
  j["unknown_size_bytes"] = o.unknown_size_bytes;
  if (o.ignore_offline_plan) j["ignore_offline_plan"] = true;  // only when set: older files stay byte-identical
  return j;
}

ojson searchJson(const Plan& p) {
  ojson j;
  j["effort"] = p.effort;
  j["time_limit_seconds"] = p.time_limit_seconds;
  j["seed"] = p.seed;
  if (!p.search_stopped.empty()) j["stopped"] = p.search_stopped;  // only when cut short
  return j;
}

ojson optionsJson(const PlanOptions& o, Bytes extra_padding) {
  ojson j;
  j["alloc_graph_input"] = o.alloc_graph_input;
  j["alloc_graph_output"] = o.alloc_graph_output;
  j["alloc_mutable_buffers"] = o.alloc_mutable_buffers;
  j["alignment"] = o.alignment;
  j["per_device"] = o.per_device;
  j["share_mutable_buffers"] = o.share_mutable_buffers;
  ojson caps = ojson::array();
  for (const auto& c : o.capacities) caps.push_back(c ? ojson(*c) : ojson(nullptr));
  j["capacities"] = std::move(caps);
  j["spill_order"] = o.spill_order;
  j["extra_padding"] = extra_padding;
  if (o.allow_pinned_overlap) j["allow_pinned_overlap"] = true;  // only when set, as above
  return j;
}

// Appends `v` as JSON writes an integer.
template <typename Int>
void appendInt(std::string& out, Int v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// Appends `s` as dump(textJson(s)) writes it; printable ASCII without
// quotes or backslashes (every name a list or a model of real size has)
// directly, anything else through the JSON library.
void appendText(std::string& out, std::string_view s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (!plain) {
    out += dump(textJson(s));
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

// Whether the allocation's spec is one of g's (a plan read from a file may
// name others).
bool knownSpec(const GraphPlan& g, const Allocation& a) {
  return a.spec >= 0 && static_cast<std::size_t>(a.spec) < g.specs.specs.size();
}

// One allocation on one line, written directly: a plan of a million
// buffers writes a million of them (twice for the main graph), and a JSON
// document per line cost most of the command's time. Same bytes as dump()
// of {"id", ["tensor" | "spec"], "mem_id", "mem_obj_id", "mem_offset",
// "size", ["lifetime"]}.
void appendAllocation(std::string& out, const GraphPlan& g, const Allocation& a,
                      const std::vector<SpecKey>& keys, bool by_tensor) {
  const bool known = knownSpec(g, a);
  const SpecKey none{};
  const SpecKey& key = known ? keys[a.spec] : none;
  out += "{\"id\":";
  if (by_tensor && known && g.specs.specs[a.spec].tensor != kNone) {
    appendText(out, g.specs.specs[a.spec].name);
    out += ",\"tensor\":";
    appendInt(out, g.specs.specs[a.spec].tensor);
  } else if (const auto* i = std::get_if<std::int64_t>(&key)) {
    appendInt(out, *i);
  } else if (const auto* s = std::get_if<std::string>(&key)) {
    appendText(out, *s);
  } else {
    out += "null,\"spec\":";
    appendInt(out, a.spec);
  }
  out += ",\"mem_id\":";
  appendInt(out, a.mem_id);
  out += ",\"mem_obj_id\":";
  appendInt(out, a.mem_obj_id);
  out += ",\"mem_offset\":";
  appendInt(out, a.offset);
  out += ",\"size\":";
  appendInt(out, a.size);
  if (known) {
    out += ",\"lifetime\":[";
    appendInt(out, g.specs.specs[a.spec].first);
    out += ',';
    appendInt(out, g.specs.specs[a.spec].last);
    out += ']';
  }
  out += '}';
}

void appendAllocations(std::string& out, const GraphPlan& g, const std::vector<SpecKey>& keys,
                       const std::string& indent, bool by_tensor) {
  out += '[';
  for (std::size_t i = 0; i < g.allocations.size(); ++i) {
    out += i ? ",\n" : "\n";
    out += indent;
    out += "  ";
    appendAllocation(out, g, g.allocations[i], keys, by_tensor);
  }
  out += g.allocations.empty() ? "]" : "\n" + indent + "]";
}

// At least the bytes appendAllocations writes for g at either indent: per
// line its fixed text and indent, seven integers of at most 20 characters
// and a name escaped at most six characters a byte (a spec's key, when a
// name, is its name).
std::size_t allocationsBound(const GraphPlan& g) {
  constexpr std::size_t kLine = 96 + 8 + 7 * 20 + 2;
  std::size_t bytes = 16;
  for (const Allocation& a : g.allocations)
    bytes += kLine + 6 * (knownSpec(g, a) ? g.specs.specs[a.spec].name.size() : 0);
  return bytes;
}

}  // namespace

std::string writePlanJson(const Plan& plan, const Model* model, const PlanJsonOptions& options) {
  std::string out = "{\n  \"format\": \"memplan-plan\",\n  \"version\": 4,\n";
  out += "  \"source\": " + dump(sourceJson(plan.source)) + ",\n";
  out += "  \"import_options\": " + dump(importJson(plan.import_options)) + ",\n";
  out += "  \"algorithm\": " + dump(ojson(plan.algorithm)) + ",\n";
  out += "  \"options\": " + dump(optionsJson(plan.options, plan.extra_padding)) + ",\n";
  out += "  \"search\": " + dump(searchJson(plan)) + ",\n";
  if (const ojson order = orderJson(plan); !order.is_null()) out += "  \"order\": " + dump(order) + ",\n";
  if (options.include_timing)
    out += "  \"planning_seconds\": " + dump(ojson(round6(plan.planning_seconds))) + ",\n";
  if (!plan.methods.empty()) {
    out += "  \"methods\": [";
    const ojson methods = methodsJson(plan);
    for (std::size_t i = 0; i < methods.size(); ++i) out += (i ? ",\n    " : "\n    ") + dump(methods[i]);
    out += "\n  ],\n";
  }
  if (const ojson state = sharedStateJson(plan); !state.is_null())
    out += "  \"shared_state\": " + dump(state) + ",\n";
  std::vector<SpecKey> keys;  // the keys of the graph being written
  if (!plan.graphs.empty()) {
    // The main graph's numbers again at the top, shaped like the expected
    // block of an ExecuTorch conformance case.
    out += "  \"bufsizes\": " + dump(ojson(plan.graphs[0].bufsizes)) + ",\n";
    out += "  \"allocations\": ";
    keys = specKeys(plan.graphs[0].specs);
    // Room for every graph's allocations up front: a plan of a million
    // buffers writes some 200 MB, and a string grown by doubling holds
    // the old copy beside one twice its size (the command's peak). Pages
    // reserved and never written cost no memory.
    std::size_t room = out.size() + 4096 + allocationsBound(plan.graphs[0]);
    for (const GraphPlan& g : plan.graphs) room += 4096 + 512 * g.pools.size() + allocationsBound(g);
    out.reserve(room);
    appendAllocations(out, plan.graphs[0], keys, "  ", model != nullptr);
    out += ",\n";
  }
  out += "  \"graphs\": [";
  for (std::size_t gi = 0; gi < plan.graphs.size(); ++gi) {
    const GraphPlan& g = plan.graphs[gi];
    out += gi ? ",\n    {\n" : "\n    {\n";
    out += "      \"graph\": " + std::to_string(gi) + ",\n";
    const bool named = model && gi < model->graphs.size();
    out += "      \"name\": " + dump(textJson(named ? model->graphs[gi].name : std::string())) + ",\n";
    out += "      \"steps\": " + std::to_string(g.specs.steps) + ",\n";
    out += "      \"bufsizes\": " + dump(ojson(g.bufsizes)) + ",\n";
    ojson devices = ojson::array();
    for (std::size_t m = 0; m < g.bufsizes.size(); ++m)
      devices.push_back(m < g.pool_devices.size() ? g.pool_devices[m].str() : Device{}.str());
    out += "      \"pool_devices\": " + dump(devices) + ",\n";
    if (const ojson bd = bufferDeviceJson(g); !bd.empty())
      out += "      \"non_const_buffer_device\": " + dump(bd) + ",\n";
    out += "      \"pools\": [";
    for (std::size_t p = 0; p < g.pools.size(); ++p) {
      const PoolInfo& info = g.pools[p];
      ojson j;
      j["mem_id"] = info.mem_id;
      j["device"] = info.device.str();
      j["size"] = info.size;
      j["lower_bound"] = info.lower_bound;
      j["ratio"] = info.lower_bound > 0
                       ? ojson(round6(static_cast<double>(info.size) /
                                      static_cast<double>(info.lower_bound)))
                       : ojson(nullptr);
      j["naive_size"] = info.naive_size;
      j["reserved"] = info.reserved;
      j["buffers"] = info.buffers;
      j["algorithm"] = info.algorithm;
      j["proven_optimal"] = info.proven_optimal;
      j["work"] = info.work;
      if (info.state) j["state"] = true;
      out += p ? ",\n        " : "\n        ";
      out += dump(j);
    }
    out += g.pools.empty() ? "],\n" : "\n      ],\n";
    out += "      \"allocations\": ";
    if (gi != 0) keys = specKeys(g.specs);  // graph 0's were made above
    appendAllocations(out, g, keys, "      ", model != nullptr);
    out += "\n    }";
  }
  out += plan.graphs.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

std::string writePlanJson(const Plan& plan, const Model* model) {
  return writePlanJson(plan, model, PlanJsonOptions{});
}

}  // namespace memplan

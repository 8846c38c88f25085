// Plan JSON writer (format: docs/plan-format.md; ids: import/plan_file.h).
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

ojson allocationJson(const GraphPlan& g, const Allocation& a, const std::vector<SpecKey>& keys,
                     bool by_tensor) {
  ojson j;
  const bool known = a.spec >= 0 && static_cast<std::size_t>(a.spec) < g.specs.specs.size();
  const SpecKey key = known ? keys[a.spec] : SpecKey{};
  if (by_tensor && known && g.specs.specs[a.spec].tensor != kNone) {
    j["id"] = textJson(g.specs.specs[a.spec].name);
    j["tensor"] = g.specs.specs[a.spec].tensor;
  } else if (const auto* i = std::get_if<std::int64_t>(&key)) {
    j["id"] = *i;
  } else if (const auto* s = std::get_if<std::string>(&key)) {
    j["id"] = textJson(*s);
  } else {
    j["id"] = nullptr;
    j["spec"] = a.spec;
  }
  j["mem_id"] = a.mem_id;
  j["mem_obj_id"] = a.mem_obj_id;
  j["mem_offset"] = a.offset;
  j["size"] = a.size;
  if (known) j["lifetime"] = {g.specs.specs[a.spec].first, g.specs.specs[a.spec].last};
  return j;
}

void appendAllocations(std::string& out, const GraphPlan& g, const std::string& indent, bool by_tensor) {
  const std::vector<SpecKey> keys = specKeys(g.specs);
  out += '[';
  for (std::size_t i = 0; i < g.allocations.size(); ++i) {
    out += i ? ",\n" : "\n";
    out += indent + "  " + dump(allocationJson(g, g.allocations[i], keys, by_tensor));
  }
  out += g.allocations.empty() ? "]" : "\n" + indent + "]";
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
  if (!plan.graphs.empty()) {
    // The main graph's numbers again at the top, shaped like the expected
    // block of an ExecuTorch conformance case.
    out += "  \"bufsizes\": " + dump(ojson(plan.graphs[0].bufsizes)) + ",\n";
    out += "  \"allocations\": ";
    appendAllocations(out, plan.graphs[0], "  ", model != nullptr);
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
    appendAllocations(out, g, "      ", model != nullptr);
    out += "\n    }";
  }
  out += plan.graphs.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

std::string writePlanJson(const Plan& plan, const Model* model) {
  return writePlanJson(plan, model, PlanJsonOptions{});
}

}  // namespace memplan

// Plan files: spec keys shared by the reader and the writer (plan_file.h).
#include "import/plan_file.h"

#include <charconv>
#include <string_view>
#include <unordered_map>

#include "support/json_text.h"

namespace memplan::planfile {

using ojson = nlohmann::ordered_json;
using jsontext::textJson;

std::optional<std::int64_t> specListId(const std::string& name) {
  if (name.size() < 4 || name.compare(0, 3, "id ") != 0) return std::nullopt;
  const std::string_view digits = std::string_view(name).substr(name[3] == '-' ? 4 : 3);
  // As to_string writes it: no sign but '-', no leading zero, no "-0".
  if (digits.empty() || (digits[0] == '0' && (digits.size() > 1 || name[3] == '-')))
    return std::nullopt;
  std::int64_t v = 0;
  const char* last = name.data() + name.size();
  const auto [end, ec] = std::from_chars(name.data() + 3, last, v);
  if (ec != std::errc() || end != last) return std::nullopt;
  return v;
}

std::vector<SpecKey> specKeys(const GraphSpecs& specs) {
  const std::size_t n = specs.specs.size();
  // One lookup per name; a count's address stays put as the map grows.
  std::unordered_map<std::string_view, int> count;
  count.reserve(n);
  std::vector<const int*> uses(n);
  for (std::size_t i = 0; i < n; ++i) {
    int& c = count[specs.specs[i].name];
    ++c;
    uses[i] = &c;
  }
  std::vector<SpecKey> keys(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string& name = specs.specs[i].name;
    if (name.empty() || *uses[i] != 1) continue;
    if (auto id = specListId(name)) keys[i] = *id;
    else keys[i] = name;
  }
  return keys;
}

ojson methodsJson(const Plan& plan) {
  ojson out = ojson::array();
  for (const MethodPlan& m : plan.methods) {
    ojson j;
    j["name"] = textJson(m.name);
    j["graph"] = m.graph;
    const bool known = m.graph >= 0 && static_cast<std::size_t>(m.graph) < plan.graphs.size();
    j["bufsizes"] = known ? ojson(plan.graphs[m.graph].bufsizes) : ojson::array();
    out.push_back(std::move(j));
  }
  return out;
}

ojson sharedStateJson(const Plan& plan) {
  const std::vector<StateSlot> slots = sharedState(plan);
  if (slots.empty()) return nullptr;
  ojson j;
  j["mode"] = plan.options.share_mutable_buffers ? "executorch" : "memplan";
  ojson buffers = ojson::array();
  for (const StateSlot& s : slots)
    buffers.push_back(ojson{{"fqn", textJson(s.fqn)}, {"mem_id", s.mem_id}, {"mem_offset", s.offset}, {"size", s.size}});
  j["buffers"] = std::move(buffers);
  return j;
}

ojson bufferDeviceJson(const GraphPlan& g) {
  ojson out = ojson::array();
  for (const BufferDevice& d : nonConstBufferDevice(g))
    out.push_back(ojson{{"buffer_idx", d.buffer_idx}, {"device_type", d.device.type},
                        {"device_index", d.device.index}});
  return out;
}

}  // namespace memplan::planfile

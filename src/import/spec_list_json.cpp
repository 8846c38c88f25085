// Reader of ExecuTorch spec lists (the conformance case format):
//
//   {"name": ..., "algorithm": "greedy" | "greedy_no_overlap" | "naive" | "suite",
//    "alignment": 16, "extra_padding": 0, "input_mem_buffer_sizes": null | [...],
//    "per_device": false,
//    "specs": [{"id": 0, "nbytes": 100, "lifetime": [3, 9],
//               "mem_id": null | 1.., "inplace_base": null | <id>,
//               "device": "cpu:0" | "cuda:1" | ...}, ...],
//    "expected": {...}}
//
// `device` (default "cpu:0") and `per_device` (ExecuTorch's
// enable_non_cpu_memory_planning, default false) are memplan's additions:
// ExecuTorch's TensorSpec.device / device_index and apply_algo's flag.
//
// "expected" (a conformance case's expected plan) is the test harness's
// business: the reader accepts it and leaves it alone.
//
// Every malformed field is an InputError naming the file and the JSON path
// ("case.json: specs[3].lifetime: ..."). Counts are capped before anything
// is allocated for them, and nesting is checked before parsing so a deep
// document cannot exhaust the stack.
#include <algorithm>
#include <bit>
#include <climits>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/json_text.h"
#include "memplan/io.h"
#include "memplan/limits.h"

namespace memplan {
namespace {

using Json = nlohmann::json;

using limits::kMaxAlignment;
using limits::kMaxMemId;
using limits::kMaxPools;
using limits::kMaxSpecs;
using limits::kMaxTime;

// Entry i of `a` as a spec, each field checked where it is named.
Spec arraySpec(const SpecArrays& a, std::size_t i) {
  Spec s;
  s.id = static_cast<SpecId>(i);
  s.name = fmt::format("specs[{}]", i);
  if (a.nbytes[i] > limits::kMaxSize)
    throw InputError(fmt::format("{}: {} bytes, above the limit of 2^62", s.name, a.nbytes[i]));
  s.nbytes = a.nbytes[i];
  if (a.first[i] < 0 || a.first[i] > a.last[i] || a.last[i] >= kMaxTime)
    throw InputError(fmt::format("{}.lifetime: expected [first, last] with 0 <= first <= last, got [{}, {}]",
                                 s.name, a.first[i], a.last[i]));
  s.first = a.first[i];
  s.last = a.last[i];
  if (const std::int64_t mem = a.mem_id[i]; mem != 0) {
    if (mem < 1 || mem > kMaxMemId)
      throw InputError(fmt::format("{}.mem_id: {} out of range [1, {}] (0 holds constants)", s.name, mem,
                                   kMaxMemId));
    s.mem_id = static_cast<MemId>(mem);
  }
  if (const std::int64_t base = a.inplace_base[i]; base >= 0) {
    if (static_cast<std::uint64_t>(base) >= a.nbytes.size() || static_cast<std::size_t>(base) == i)
      throw InputError(fmt::format("{}.inplace_base: no other spec at index {}", s.name, base));
    s.inplace_base = static_cast<SpecId>(base);
  }
  s.alignment = a.alignment;
  s.planned = true;
  return s;
}

// The first spec whose chain of in-place bases comes back to a spec on it;
// nullopt when every chain ends. Linear: each spec is walked once.
std::optional<std::size_t> firstInplaceCycle(const GraphSpecs& specs) {
  const std::size_t n = specs.specs.size();
  // 0 = unvisited, 1 = on the current chain, 2 = known acyclic.
  std::vector<std::uint8_t> state(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    SpecId s = static_cast<SpecId>(i);
    while (s != kNone && state[s] == 0) {
      state[s] = 1;
      s = specs.specs[s].inplace_base;
    }
    if (s != kNone && state[s] == 1) return i;
    for (SpecId t = static_cast<SpecId>(i); t != kNone && state[t] == 1; t = specs.specs[t].inplace_base)
      state[t] = 2;
  }
  return std::nullopt;
}

}  // namespace

// Long (~120 lines) on purpose: the members in the order of the format,
// each read and checked where its place is named, then the in-place bases
// (which need every id) in one pass.
SpecList readSpecListJson(std::string_view text, const std::string& source_name) {
  const jsontext::Fields r(source_name);
  // Unknown members and over-long arrays are refused while parsing, before
  // their values are built.
  static const jsontext::Schema kSchema{
      "top level",
      {"name", "algorithm", "alignment", "extra_padding", "input_mem_buffer_sizes", "per_device",
       "specs", "expected"},
      {{"specs", kMaxSpecs}, {"input_mem_buffer_sizes", kMaxPools}}};
  const Json doc = jsontext::parse(text, source_name, kSchema);
  r.object(doc, "top level");

  SpecList c;
  if (const Json* name = r.find(doc, "name")) c.name = r.str(*name, "name");
  c.algorithm = "greedy";
  if (const Json* algo = r.find(doc, "algorithm")) {
    c.algorithm = r.str(*algo, "algorithm");
    // The case names one of ExecuTorch's algorithms.
    const AlgorithmInfo* info = findAlgorithmInfo(c.algorithm);
    if (!info || !info->executorch_exact) {
      std::string known;
      for (const std::string& n : algorithmNames())
        if (findAlgorithmInfo(n)->executorch_exact) known += (known.empty() ? "" : ", ") + n;
      r.fail("algorithm", fmt::format("unknown algorithm '{}' (expected one of ExecuTorch's: {})",
                                      jsontext::oneLine(c.algorithm, 64), known));
    }
  }
  if (const Json* a = r.find(doc, "alignment")) {
    c.alignment = r.unsignedInt(*a, "alignment", kMaxAlignment);
    if (c.alignment == 0) r.fail("alignment", "expected a positive integer, got 0");
  }
  if (const Json* p = r.find(doc, "extra_padding"))
    c.extra_padding = r.unsignedInt(*p, "extra_padding", kMaxBytes - 1);
  if (const Json* imb = r.optional(doc, "input_mem_buffer_sizes")) {
    r.array(*imb, "input_mem_buffer_sizes", kMaxPools);
    c.input_mem_buffer_sizes.reserve(imb->size());
    for (std::size_t i = 0; i < imb->size(); ++i)
      c.input_mem_buffer_sizes.push_back(
          r.unsignedInt((*imb)[i], jsontext::item("input_mem_buffer_sizes", i), kMaxBytes - 1));
  }

  if (const Json* pd = r.find(doc, "per_device")) c.per_device = r.boolean(*pd, "per_device");

  const Json& specs = r.array(r.require(doc, "", "specs"), "specs", kMaxSpecs);
  const std::size_t n = specs.size();
  c.specs.specs.reserve(n);
  c.ids.reserve(n);
  std::unordered_map<std::int64_t, SpecId> index_of;
  index_of.reserve(n);
  std::vector<std::optional<std::int64_t>> base_ids(n);
  TimeValue steps = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string at = jsontext::item("specs", i);
    const Json& e = r.object(specs[i], at);
    r.knownKeys(e, at, {"id", "nbytes", "lifetime", "mem_id", "inplace_base", "device"});
    Spec s;
    s.id = static_cast<SpecId>(i);
    const std::int64_t id = r.signedInt(r.require(e, at, "id"), at + ".id", INT64_MIN, INT64_MAX);
    if (!index_of.emplace(id, s.id).second) r.fail(at + ".id", fmt::format("duplicate id {}", id));
    s.name = fmt::format("id {}", id);
    s.nbytes = r.unsignedInt(r.require(e, at, "nbytes"), at + ".nbytes", kMaxBytes - 1);
    const std::string lat = at + ".lifetime";
    const Json& life = r.array(r.require(e, at, "lifetime"), lat, 2);
    if (life.size() != 2) r.fail(lat, "expected [first, last] with first <= last");
    const auto first = static_cast<TimeValue>(r.unsignedInt(life[0], lat + "[0]", kMaxTime));
    const auto last = static_cast<TimeValue>(r.unsignedInt(life[1], lat + "[1]", kMaxTime));
    if (first > last)
      r.fail(lat, fmt::format("expected [first, last] with first <= last, got [{}, {}]", first, last));
    s.first = first;
    s.last = last;
    steps = std::max(steps, last + 1);
    if (const Json* m = r.optional(e, "mem_id")) {
      const std::int64_t mem = r.signedInt(*m, at + ".mem_id", INT64_MIN, INT64_MAX);
      if (mem < 1 || mem > kMaxMemId)
        r.fail(at + ".mem_id", fmt::format("{} out of range [1, {}] (0 holds constants)", mem, kMaxMemId));
      s.mem_id = static_cast<MemId>(mem);
    }
    if (const Json* d = r.find(e, "device")) {
      const std::string text = r.str(*d, at + ".device");
      const auto device = parseDevice(text);
      if (!device)
        r.fail(at + ".device", fmt::format("expected a device like \"cuda:0\" (lower-case type, "
                                           "index), got '{}'", jsontext::oneLine(text, 60)));
      s.device = *device;
    }
    if (const Json* b = r.optional(e, "inplace_base"))
      base_ids[i] = r.signedInt(*b, at + ".inplace_base", INT64_MIN, INT64_MAX);
    s.alignment = c.alignment;
    s.planned = true;
    c.ids.push_back(id);
    c.specs.specs.push_back(std::move(s));
  }
  // In-place bases: existing ids, no cycles.
  for (std::size_t i = 0; i < n; ++i) {
    if (!base_ids[i]) continue;
    auto it = index_of.find(*base_ids[i]);
    const std::string at = jsontext::item("specs", i) + ".inplace_base";
    if (it == index_of.end()) r.fail(at, fmt::format("no spec has id {}", *base_ids[i]));
    if (it->second == static_cast<SpecId>(i)) r.fail(at, "a spec cannot be its own base");
    c.specs.specs[i].inplace_base = it->second;
  }
  if (const std::optional<std::size_t> i = firstInplaceCycle(c.specs))
    r.fail(jsontext::item("specs", *i) + ".inplace_base", "inplace_base chain forms a cycle");
  c.specs.steps = steps;
  return c;
}

SpecList specListFromArrays(const SpecArrays& a) {
  const std::size_t n = a.nbytes.size();
  if (a.first.size() != n || a.last.size() != n || a.mem_id.size() != n || a.inplace_base.size() != n)
    throw InputError("specs: nbytes, lifetimes, mem_ids and inplace_bases differ in length");
  if (n > kMaxSpecs) throw InputError(fmt::format("specs: {} specs, above the limit of {}", n, kMaxSpecs));
  if (a.input_mem_buffer_sizes.size() > kMaxPools)
    throw InputError(fmt::format("input_mem_buffer_sizes: {} entries, above the limit of {}",
                                 a.input_mem_buffer_sizes.size(), kMaxPools));
  for (std::size_t m = 0; m < a.input_mem_buffer_sizes.size(); ++m)
    if (a.input_mem_buffer_sizes[m] > limits::kMaxSize)
      throw InputError(fmt::format("input_mem_buffer_sizes[{}]: {} is above the limit of 2^62", m,
                                   a.input_mem_buffer_sizes[m]));
  SpecList list;
  list.name = "specs";
  list.algorithm = a.algorithm;
  list.alignment = a.alignment;
  list.extra_padding = a.extra_padding;
  list.input_mem_buffer_sizes = a.input_mem_buffer_sizes;
  list.specs.specs.reserve(n);
  list.ids.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    list.specs.specs.push_back(arraySpec(a, i));
    list.ids.push_back(static_cast<std::int64_t>(i));
    list.specs.steps = std::max(list.specs.steps, a.last[i] + 1);
  }
  if (const std::optional<std::size_t> i = firstInplaceCycle(list.specs))
    throw InputError(fmt::format("specs[{}].inplace_base: inplace_base chain forms a cycle", *i));
  return list;
}

}  // namespace memplan

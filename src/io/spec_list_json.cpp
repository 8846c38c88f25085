// Reader of ExecuTorch spec lists (the conformance case format):
//
//   {"name": ..., "algorithm": "greedy" | "greedy_no_overlap" | "naive" | "suite",
//    "alignment": 16, "extra_padding": 0, "input_mem_buffer_sizes": null | [...],
//    "specs": [{"id": 0, "nbytes": 100, "lifetime": [3, 9],
//               "mem_id": null | 1.., "inplace_base": null | <id>}, ...],
//    "expected": {"bufsizes": [...], "allocations": [{"id", "mem_id",
//                 "mem_obj_id", "mem_offset"}, ...]}}          (optional)
//
// Every malformed field is an InputError naming the file and the JSON path
// ("case.json: specs[3].lifetime: ..."). Counts are capped before anything
// is allocated for them, and nesting is checked before parsing so a deep
// document cannot exhaust the stack.
#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/json_text.h"
#include "memplan/io.h"

namespace memplan {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kMaxSpecs = std::size_t{1} << 22;
constexpr std::int64_t kMaxMemId = 4096;
constexpr std::size_t kMaxPools = kMaxMemId + 1;
constexpr Bytes kMaxAlignment = Bytes{1} << 30;
constexpr TimeValue kMaxTime = TimeValue{1} << 62;

class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw InputError(fmt::format("{}: {}: {}", source_, where, what));
  }

  const Json* field(const Json& obj, const char* key) const {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  const Json& require(const Json& obj, const std::string& where, const char* key) const {
    const Json* f = field(obj, key);
    if (!f) fail(where.empty() ? key : where + "." + key, "missing");
    return *f;
  }

  // A non-negative integer <= max.
  std::uint64_t unsignedValue(const Json& j, const std::string& where, std::uint64_t max) const {
    if (!j.is_number_integer())
      fail(where, fmt::format("expected a non-negative integer, got {}", brief(j)));
    if (j.is_number_unsigned()) {
      const auto v = j.get<std::uint64_t>();
      if (v > max) fail(where, fmt::format("{} exceeds the limit of {}", v, max));
      return v;
    }
    const auto v = j.get<std::int64_t>();
    if (v < 0) fail(where, fmt::format("expected a non-negative integer, got {}", v));
    if (static_cast<std::uint64_t>(v) > max) fail(where, fmt::format("{} exceeds the limit of {}", v, max));
    return static_cast<std::uint64_t>(v);
  }

  std::int64_t signedValue(const Json& j, const std::string& where) const {
    if (!j.is_number_integer()) fail(where, fmt::format("expected an integer, got {}", brief(j)));
    if (j.is_number_unsigned() &&
        j.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail(where, "integer out of range");
    return j.get<std::int64_t>();
  }

  const Json& array(const Json& j, const std::string& where, std::size_t max) const {
    if (!j.is_array()) fail(where, fmt::format("expected an array, got {}", brief(j)));
    if (j.size() > max) fail(where, fmt::format("{} entries exceed the limit of {}", j.size(), max));
    return j;
  }

  static std::string brief(const Json& j) {
    switch (j.type()) {
      case Json::value_t::null: return "null";
      case Json::value_t::boolean: return "a boolean";
      case Json::value_t::string: return "a string";
      case Json::value_t::array: return "an array";
      case Json::value_t::object: return "an object";
      case Json::value_t::number_float: return "a fraction";
      default: return "a number";
    }
  }

 private:
  const std::string& source_;
};

}  // namespace

SpecListCase readSpecListJson(std::string_view text, const std::string& source_name) {
  Reader r(source_name);
  const Json doc = jsontext::parse(text, source_name);
  if (!doc.is_object()) r.fail("top level", "expected an object, got " + Reader::brief(doc));

  SpecListCase c;
  if (const Json* name = r.field(doc, "name")) {
    if (!name->is_string()) r.fail("name", "expected a string, got " + Reader::brief(*name));
    c.name = name->get<std::string>();
  }
  c.algorithm = "greedy";
  if (const Json* algo = r.field(doc, "algorithm")) {
    if (!algo->is_string()) r.fail("algorithm", "expected a string, got " + Reader::brief(*algo));
    c.algorithm = algo->get<std::string>();
    // The case names one of ExecuTorch's algorithms.
    const AlgorithmInfo* info = findAlgorithmInfo(c.algorithm);
    if (!info || !info->executorch_exact) {
      std::string known;
      for (const std::string& n : algorithmNames())
        if (findAlgorithmInfo(n)->executorch_exact) known += (known.empty() ? "" : ", ") + n;
      r.fail("algorithm", fmt::format("unknown algorithm '{}' (expected one of ExecuTorch's: {})",
                                      c.algorithm.substr(0, 64), known));
    }
  }
  if (const Json* a = r.field(doc, "alignment")) {
    c.alignment = r.unsignedValue(*a, "alignment", kMaxAlignment);
    if (c.alignment == 0 || (c.alignment & (c.alignment - 1)) != 0)
      r.fail("alignment", fmt::format("{} is not a power of two", c.alignment));
  }
  if (const Json* p = r.field(doc, "extra_padding"))
    c.extra_padding = r.unsignedValue(*p, "extra_padding", kMaxBytes - 1);
  if (const Json* imb = r.field(doc, "input_mem_buffer_sizes"); imb && !imb->is_null()) {
    r.array(*imb, "input_mem_buffer_sizes", kMaxPools);
    c.input_mem_buffer_sizes.reserve(imb->size());
    for (std::size_t i = 0; i < imb->size(); ++i)
      c.input_mem_buffer_sizes.push_back(r.unsignedValue(
          (*imb)[i], fmt::format("input_mem_buffer_sizes[{}]", i), kMaxBytes - 1));
  }

  const Json& specs = r.array(r.require(doc, "", "specs"), "specs", kMaxSpecs);
  const std::size_t n = specs.size();
  c.specs.specs.reserve(n);
  c.ids.reserve(n);
  std::unordered_map<std::int64_t, SpecId> index_of;
  index_of.reserve(n);
  std::vector<std::optional<std::int64_t>> base_ids(n);
  TimeValue steps = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string at = fmt::format("specs[{}]", i);
    const Json& e = specs[i];
    if (!e.is_object()) r.fail(at, "expected an object, got " + Reader::brief(e));
    Spec s;
    s.id = static_cast<SpecId>(i);
    const std::int64_t id = r.signedValue(r.require(e, at, "id"), at + ".id");
    if (!index_of.emplace(id, s.id).second) r.fail(at + ".id", fmt::format("duplicate id {}", id));
    s.name = fmt::format("id {}", id);
    s.nbytes = r.unsignedValue(r.require(e, at, "nbytes"), at + ".nbytes", kMaxBytes - 1);
    const Json& life = r.require(e, at, "lifetime");
    const std::string lat = at + ".lifetime";
    if (!life.is_array() || life.size() != 2 || !life[0].is_number_integer() ||
        !life[1].is_number_integer())
      r.fail(lat, "expected [first, last] with first <= last");
    const auto first = static_cast<TimeValue>(r.unsignedValue(life[0], lat + "[0]", kMaxTime));
    const auto last = static_cast<TimeValue>(r.unsignedValue(life[1], lat + "[1]", kMaxTime));
    if (first > last)
      r.fail(lat, fmt::format("expected [first, last] with first <= last, got [{}, {}]", first, last));
    s.first = first;
    s.last = last;
    steps = std::max(steps, last + 1);
    if (const Json* m = r.field(e, "mem_id"); m && !m->is_null()) {
      const std::int64_t mem = r.signedValue(*m, at + ".mem_id");
      if (mem < 1 || mem > kMaxMemId)
        r.fail(at + ".mem_id", fmt::format("{} out of range [1, {}] (0 holds constants)", mem, kMaxMemId));
      s.mem_id = static_cast<MemId>(mem);
    }
    if (const Json* b = r.field(e, "inplace_base"); b && !b->is_null())
      base_ids[i] = r.signedValue(*b, at + ".inplace_base");
    s.alignment = c.alignment;
    s.planned = true;
    c.ids.push_back(id);
    c.specs.specs.push_back(std::move(s));
  }
  // In-place bases: existing ids, no cycles.
  for (std::size_t i = 0; i < n; ++i) {
    if (!base_ids[i]) continue;
    auto it = index_of.find(*base_ids[i]);
    if (it == index_of.end())
      r.fail(fmt::format("specs[{}].inplace_base", i), fmt::format("no spec has id {}", *base_ids[i]));
    if (it->second == static_cast<SpecId>(i))
      r.fail(fmt::format("specs[{}].inplace_base", i), "a spec cannot be its own base");
    c.specs.specs[i].inplace_base = it->second;
  }
  {
    // 0 = unvisited, 1 = on the current chain, 2 = known acyclic.
    std::vector<std::uint8_t> state(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      SpecId s = static_cast<SpecId>(i);
      while (s != kNone && state[s] == 0) {
        state[s] = 1;
        s = c.specs.specs[s].inplace_base;
      }
      if (s != kNone && state[s] == 1)
        r.fail(fmt::format("specs[{}].inplace_base", i), "inplace_base chain forms a cycle");
      for (SpecId t = static_cast<SpecId>(i); t != kNone && state[t] == 1; t = c.specs.specs[t].inplace_base)
        state[t] = 2;
    }
  }
  c.specs.steps = steps;

  if (const Json* exp = r.field(doc, "expected"); exp && !exp->is_null()) {
    if (!exp->is_object()) r.fail("expected", "expected an object, got " + Reader::brief(*exp));
    c.has_expected = true;
    const Json& bufs = r.array(r.require(*exp, "expected", "bufsizes"), "expected.bufsizes", kMaxPools);
    for (std::size_t i = 0; i < bufs.size(); ++i)
      c.expected_bufsizes.push_back(
          r.unsignedValue(bufs[i], fmt::format("expected.bufsizes[{}]", i), kMaxBytes));
    const Json& allocs =
        r.array(r.require(*exp, "expected", "allocations"), "expected.allocations", kMaxSpecs);
    c.expected_allocations.reserve(allocs.size());
    for (std::size_t i = 0; i < allocs.size(); ++i) {
      const std::string at = fmt::format("expected.allocations[{}]", i);
      const Json& a = allocs[i];
      if (!a.is_object()) r.fail(at, "expected an object, got " + Reader::brief(a));
      SpecListCase::Expected x{};
      x.id = r.signedValue(r.require(a, at, "id"), at + ".id");
      if (!index_of.count(x.id)) r.fail(at + ".id", fmt::format("no spec has id {}", x.id));
      x.mem_id = static_cast<MemId>(r.unsignedValue(r.require(a, at, "mem_id"), at + ".mem_id", kMaxMemId));
      x.mem_obj_id = static_cast<std::int32_t>(
          r.unsignedValue(r.require(a, at, "mem_obj_id"), at + ".mem_obj_id", kMaxSpecs));
      x.offset = r.unsignedValue(r.require(a, at, "mem_offset"), at + ".mem_offset", kMaxBytes);
      c.expected_allocations.push_back(x);
    }
  }
  return c;
}

}  // namespace memplan

// The plan as a C/C++ header, and as in-memory tables (see
// memplan/c_header.h).
//
// What keeps the header valid C99 and C++ under -Wall -Wextra -pedantic:
// only stdint.h types, /* */ comments with printable ASCII (no "*/", "/*"
// or "??" inside them), identifiers of [A-Za-z0-9_] without "__", no empty
// enum or zero-length array, literals suffixed u / ull, static const data
// (no definitions clash when several files include it), and static_assert
// only where the language has it (C11 _Static_assert, C++11).
#include "memplan/c_header.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

namespace memplan {
namespace {

constexpr std::size_t kMaxIdentifier = 60;  // before a collision suffix

// Upper case, [A-Z0-9_], no "__", no leading/trailing '_'.
std::string identifierOf(std::string_view name) {
  std::string out;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    char x = '_';
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9'))
      x = static_cast<char>(u >= 'a' && u <= 'z' ? u - 'a' + 'A' : u);
    if (x == '_' && (out.empty() || out.back() == '_')) continue;
    out.push_back(x);
    if (out.size() >= kMaxIdentifier) break;
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

// Printable ASCII for a comment: nothing that ends it, nests it or forms a
// trigraph.
std::string commentText(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    const char x = (u >= 0x20 && u < 0x7f) ? c : '?';
    if ((x == '/' && !out.empty() && out.back() == '*') || (x == '*' && !out.empty() && out.back() == '/') ||
        (x == '?' && !out.empty() && out.back() == '?'))
      out.push_back(' ');
    out.push_back(x);
  }
  if (!out.empty() && (out.back() == '/' || out.back() == '*')) out.push_back(' ');
  return out;
}

bool isCIdentifier(std::string_view s) {
  if (s.empty() || s.size() > 40) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  if (s[0] == '_' && s.size() > 1 && (std::isupper(static_cast<unsigned char>(s[1])) || s[1] == '_'))
    return false;
  if (s.find("__") != std::string_view::npos) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::int32_t step32(TimeValue t, const std::string& what) {
  if (t < 0 || t > std::numeric_limits<std::int32_t>::max())
    throw InputError(fmt::format("{}: step {} does not fit an int32", what, t));
  return static_cast<std::int32_t>(t);
}

}  // namespace

PlanTable<std::uint64_t> RuntimeTable::view() const {
  PlanTable<std::uint64_t> v;
  v.num_pools = pool_size.empty() ? 0 : pool_size.size() - 1;
  v.num_tensors = tensor_offset.size();
  v.alignment = static_cast<std::size_t>(alignment);
  v.granule = static_cast<std::size_t>(granule);
  v.pool_size = pool_size.data();
  v.tensor_pool = tensor_pool.data();
  v.tensor_offset = tensor_offset.data();
  v.tensor_size = tensor_size.data();
  v.first_step = first_step.data();
  v.last_step = last_step.data();
  v.tensor_graph = tensor_graph.data();
  return v;
}

RuntimeTable runtimeTable(const Plan& plan, const Model* model) {
  RuntimeTable t;
  t.pool_size.assign(2, 0);
  t.alignment = std::max<Bytes>(plan.options.alignment, 1);
  Bytes granule = 0;
  for (const GraphPlan& g : plan.graphs) {
    for (std::size_t m = 1; m < g.bufsizes.size(); ++m) {
      if (t.pool_size.size() <= m) t.pool_size.resize(m + 1, 0);
      t.pool_size[m] = std::max<std::uint64_t>(t.pool_size[m], g.bufsizes[m]);
    }
    for (const Allocation& a : g.allocations) {
      if (a.spec < 0 || static_cast<std::size_t>(a.spec) >= g.specs.specs.size()) continue;
      const Spec& s = g.specs.specs[a.spec];
      std::string name = s.name;
      if (name.empty() && model && s.tensor >= 0 && static_cast<std::size_t>(s.tensor) < model->tensors.size())
        name = model->tensors[static_cast<std::size_t>(s.tensor)].name;
      if (name.empty()) name = fmt::format("spec{}", s.id);
      t.names.push_back(name);
      t.specs.push_back(s.id);
      t.tensor_pool.push_back(static_cast<std::uint64_t>(a.mem_id));
      t.tensor_offset.push_back(a.offset);
      t.tensor_size.push_back(a.size);
      t.first_step.push_back(step32(s.first, name));
      t.last_step.push_back(step32(s.last, name));
      t.tensor_graph.push_back(g.graph);
      std::vector<std::string> aliases;
      if (model)
        for (TensorId m : s.members)
          if (m != s.tensor && m >= 0 && static_cast<std::size_t>(m) < model->tensors.size())
            aliases.push_back(model->tensors[static_cast<std::size_t>(m)].name);
      t.alias_names.push_back(std::move(aliases));
      t.alignment = std::max<Bytes>(t.alignment, s.alignment);
      granule = std::gcd(granule, std::gcd(a.offset, a.size));
    }
  }
  // The largest power of two dividing every offset and size (1 at least).
  t.granule = granule == 0 ? t.alignment : (granule & (~granule + 1));
  t.granule = std::min<std::uint64_t>(t.granule, t.alignment);
  if (!plan.graphs.empty()) {
    const GraphPlan& main = plan.graphs[0];
    t.first_node_step = model && !model->graphs.empty()
                            ? step32(static_cast<TimeValue>(model->graphs[0].inputs.size()), "inputs")
                            : 0;
    t.output_step = step32(std::max<TimeValue>(main.specs.steps - 1, 0), "output");
  }
  // Identifiers: collisions numbered _2, _3, ... in list order. Each base
  // remembers the next number to try (every number below it is taken), so
  // n tensors of one name cost O(n), not O(n^2).
  std::unordered_set<std::string> taken;
  std::unordered_map<std::string, std::uint64_t> next_number;
  const auto unique = [&](const std::string& name, const std::string& fallback) {
    std::string base = identifierOf(name);
    if (base.empty()) base = fallback;
    std::string id = base;
    if (taken.count(id)) {
      std::uint64_t& k = next_number.try_emplace(base, 2).first->second;
      do id = fmt::format("{}_{}", base, k++);
      while (taken.count(id));
    }
    taken.insert(id);
    return id;
  };
  for (std::size_t i = 0; i < t.names.size(); ++i)
    t.identifiers.push_back(unique(t.names[i], fmt::format("TENSOR_{}", i)));
  for (std::size_t i = 0; i < t.names.size(); ++i) {
    t.alias_identifiers.emplace_back();
    for (std::size_t k = 0; k < t.alias_names[i].size(); ++k)
      t.alias_identifiers.back().push_back(unique(t.alias_names[i][k], fmt::format("TENSOR_{}_{}", i, k + 1)));
  }
  return t;
}

namespace {

// The header's text, section by section (writeCHeader).
class HeaderWriter {
 public:
  HeaderWriter(const Plan& plan, const Model* model, const CHeaderOptions& options, const RuntimeTable& t)
      : plan(plan), model(model), options(options), t(t), n(t.tensor_offset.size()),
        pools(t.pool_size.size() - 1), lo(options.prefix), up(options.prefix) {
    std::transform(lo.begin(), lo.end(), lo.begin(), [](unsigned char c) { return std::tolower(c); });
    std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
    std::uint64_t widest = 0;
    for (auto v : {&t.pool_size, &t.tensor_offset, &t.tensor_size})
      for (std::uint64_t x : *v) widest = std::max(widest, x);
    wide = widest > std::numeric_limits<std::uint32_t>::max();
    suffix = wide ? "ull" : "u";
    for (std::uint64_t s : t.pool_size) arena += s;
  }

  std::string text() {
    openingComment();
    macros();
    tensorIds();
    tables();
    planStruct();
    staticAsserts();
    line("#endif /* " + guard() + " */");
    return h;
  }

 private:
  void line(const std::string& s) {
    h += s;
    h += '\n';
  }
  std::string guard() const { return up + "_PLAN_H_"; }

  void openingComment() {
    line("/* Memory plan" + (options.source.empty() ? std::string() : " for " + commentText(options.source)) +
         ", generated by memplan. Do not edit.");
    line(fmt::format(" * Algorithm {}; {} tensors in {} pool(s), {} bytes in all.",
                     commentText(plan.algorithm), n, pools, arena));
    line(fmt::format(" * Tensor t lives at pool {0}_tensor_pool[t], bytes [{0}_tensor_offset[t],", lo));
    line(fmt::format(" * + {}_tensor_size[t]) of that pool, from step {}_tensor_first_step[t]", lo, lo));
    line(fmt::format(" * through {}_tensor_last_step[t] (steps of its graph: the main graph's", lo));
    line(fmt::format(" * node n runs at {}_NODE_STEP(n)). Pool buffers must be aligned to", up));
    line(fmt::format(" * {}_ALIGNMENT (a power of two or not: {}_ALIGN_UP rounds a pointer up", up, up));
    line(fmt::format(" * to it). In C, {}_TENSOR_PTR(pools, t) is tensor t's address, pools[p]", up));
    line(fmt::format(" * pool p's base; in C++, memplan::Arena (memplan/runtime.h) reads {}_plan.", lo));
    line(" */");
  }

  // Include guard, sizes, steps and the pointer macros.
  void macros() {
    line("#ifndef " + guard());
    line("#define " + guard());
    line("");
    line("#include <stdint.h>");
    line("");
    line(fmt::format("#define {}_ALIGNMENT {}u", up, t.alignment));
    line(fmt::format("#define {}_GRANULE {}u", up, t.granule));
    line(fmt::format("#define {}_NUM_POOLS {}u", up, pools));
    for (std::size_t m = 1; m <= pools; ++m)
      line(fmt::format("#define {}_POOL_{}_SIZE {}{}", up, m, t.pool_size[m], suffix));
    line(fmt::format("#define {}_ARENA_SIZE {}{} /* all pools */", up, arena, suffix));
    line(fmt::format("#define {}_NUM_TENSORS {}u", up, n));
    std::uint64_t shadow = n;  // memplan::Arena's checked mode (runtime.h)
    for (std::size_t m = 1; m <= pools; ++m) shadow += (t.pool_size[m] + t.granule - 1) / t.granule;
    line(fmt::format("#define {}_SHADOW_WORDS {}u /* memplan::Arena's checked mode */", up, shadow));
    line(fmt::format("#define {}_NODE_STEP(n) ((int32_t)({} + (n)))", up, t.first_node_step));
    line(fmt::format("#define {}_OUTPUT_STEP {}", up, t.output_step));
    line("");
    line("/* A pointer rounded up to the alignment (give a pool its size + ALIGNMENT - 1");
    line(" * bytes and use the rounded pointer); whether a pointer is aligned. */");
    line(fmt::format("#define {0}_ALIGN_UP(p) ((void*)((unsigned char*)(p) + ({0}_ALIGNMENT - "
                     "(uintptr_t)(p) % {0}_ALIGNMENT) % {0}_ALIGNMENT))", up));
    line(fmt::format("#define {0}_IS_ALIGNED(p) ((uintptr_t)(p) % {0}_ALIGNMENT == 0u)", up));
    line(fmt::format("/* Tensor t's address; pools[p] is pool p's base (pools[0] unused). */"));
    line(fmt::format("#define {0}_TENSOR_PTR(pools, t) ((void*)((unsigned char*)(pools)[{1}_tensor_pool[t]] + "
                     "{1}_tensor_offset[t]))", up, lo));
    line("");
    line(fmt::format("typedef {} {}_word_t;", wide ? "uint64_t" : "uint32_t", lo));
    line("");
  }

  // One enumerator per tensor, and one per alias sharing its storage.
  void tensorIds() {
    line(fmt::format("enum {}_tensor_id {{", lo));
    for (std::size_t i = 0; i < n; ++i) {
      std::string what = commentText(t.names[i]);
      if (model && t.tensor_graph[i] >= 0 && static_cast<std::size_t>(t.tensor_graph[i]) < plan.graphs.size()) {
        const GraphPlan& g = plan.graphs[static_cast<std::size_t>(t.tensor_graph[i])];
        const TensorId tensor = g.specs.specs[static_cast<std::size_t>(t.specs[i])].tensor;
        if (tensor >= 0 && static_cast<std::size_t>(tensor) < model->tensors.size()) {
          const Tensor& x = model->tensors[static_cast<std::size_t>(tensor)];
          std::string shape;
          for (std::size_t d = 0; d < x.shape.size(); ++d) {
            if (d) shape += 'x';
            shape += std::to_string(x.shape[d]);
          }
          what += fmt::format(" [{}{}{}]", shape, shape.empty() ? "" : " ", dtypeName(x.dtype));
        }
      }
      if (t.tensor_graph[i] != 0) what += fmt::format(" (graph {})", t.tensor_graph[i]);
      line(fmt::format("  {}_T_{} = {}, /* {} */", up, t.identifiers[i], i, what));
      for (std::size_t k = 0; k < t.alias_identifiers[i].size(); ++k)
        line(fmt::format("  {}_T_{} = {}, /* {}: shares the storage of {} */", up, t.alias_identifiers[i][k], i,
                         commentText(t.alias_names[i][k]), commentText(t.names[i])));
  }
  line(fmt::format("  {}_TENSOR_COUNT = {}", up, n));
  line("};");
  line("");
  }

  // A static array of `count` values, rows of at most 80 columns.
  template <typename Value>
  void table(const char* type, const std::string& name, std::size_t count, Value value, const char* lit) {
    line(fmt::format("static const {} {}_{}[{}] = {{", type, lo, name, count));
    std::string row = "  ";
    for (std::size_t i = 0; i < count; ++i) {
      const std::string item = fmt::format("{}{}{}", value(i), lit, i + 1 < count ? "," : "");
      if (row.size() + item.size() + 1 > 80) {
        line(row);
        row = "  ";
      }
      row += (row.size() > 2 ? " " : "") + item;
    }
    line(row);
    line("};");
  }

  void tables() {
    const std::size_t len = std::max<std::size_t>(n, 1);  // C has no empty arrays
    const std::string word = lo + "_word_t";
    table(word.c_str(), "pool_size", pools + 1, [&](std::size_t m) { return t.pool_size[m]; }, suffix);
    const auto entry = [&](const auto& v) {
      return [&v, n = n](std::size_t i) { return i < n ? static_cast<std::int64_t>(v[i]) : 0; };
    };
    table(word.c_str(), "tensor_pool", len, entry(t.tensor_pool), suffix);
    table(word.c_str(), "tensor_offset", len, entry(t.tensor_offset), suffix);
    table(word.c_str(), "tensor_size", len, entry(t.tensor_size), suffix);
    table("int32_t", "tensor_first_step", len, entry(t.first_step), "");
    table("int32_t", "tensor_last_step", len, entry(t.last_step), "");
    table("int32_t", "tensor_graph", len, entry(t.tensor_graph), "");
    line("");
  }

  void planStruct() {
    line(fmt::format("typedef struct {}_plan_s {{", lo));
    for (const char* f : {"num_pools", "num_tensors", "alignment", "granule"})
      line(fmt::format("  uint32_t {};", f));
    for (const char* f : {"pool_size", "tensor_pool", "tensor_offset", "tensor_size"})
      line(fmt::format("  const {}_word_t* {};", lo, f));
    for (const char* f : {"first_step", "last_step", "tensor_graph"})
      line(fmt::format("  const int32_t* {};", f));
    line(fmt::format("}} {}_plan_t;", lo));
    line("");
    line(fmt::format("static const {0}_plan_t {0}_plan = {{", lo));
    line(fmt::format("  {0}_NUM_POOLS, {0}_NUM_TENSORS, {0}_ALIGNMENT, {0}_GRANULE,", up));
    line(fmt::format("  {0}_pool_size, {0}_tensor_pool, {0}_tensor_offset, {0}_tensor_size,", lo));
    line(fmt::format("  {0}_tensor_first_step, {0}_tensor_last_step, {0}_tensor_graph", lo));
    line("};");
    line("");
  }

  // Compile-time checks of the tables against the macros.
  void staticAsserts() {
    line("#if defined(__cplusplus) && __cplusplus >= 201103L");
    line(fmt::format("#define {}_STATIC_ASSERT(c, m) static_assert(c, m)", up));
    line("#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L");
    line(fmt::format("#define {}_STATIC_ASSERT(c, m) _Static_assert(c, m)", up));
    line("#endif");
    line(fmt::format("#ifdef {}_STATIC_ASSERT", up));
    line(fmt::format("{0}_STATIC_ASSERT({0}_ALIGNMENT > 0u, \"alignment is positive\");", up));
    line(fmt::format("{0}_STATIC_ASSERT({0}_TENSOR_COUNT == {0}_NUM_TENSORS, \"one id per tensor\");", up));
    line(fmt::format("{0}_STATIC_ASSERT(sizeof({1}_pool_size) / sizeof({1}_pool_size[0]) == "
                     "{0}_NUM_POOLS + 1u, \"one size per pool\");",
                     up, lo));
    if (n > 0)
      line(fmt::format("{0}_STATIC_ASSERT(sizeof({1}_tensor_offset) / sizeof({1}_tensor_offset[0]) == "
                       "{0}_NUM_TENSORS, \"one offset per tensor\");",
                       up, lo));
    // Each tensor inside its pool and aligned: literals against the macros,
    // so a hand-edited pool size or alignment fails to compile.
    for (std::size_t i = 0; i < n; ++i)
      line(fmt::format("{0}_STATIC_ASSERT({1}{3} + {2}{3} <= {0}_POOL_{4}_SIZE && {1}{3} % {0}_GRANULE == 0u, "
                       "\"{0}_T_{5} fits pool {4}\");",
                       up, t.tensor_offset[i], t.tensor_size[i], suffix, t.tensor_pool[i], t.identifiers[i]));
    line("#endif");
    line("");
  }

  const Plan& plan;
  const Model* model;
  const CHeaderOptions& options;
  const RuntimeTable& t;
  const std::size_t n;      // tensors
  const std::size_t pools;  // pools, numbered from 1
  std::string lo, up;       // the prefix in lower and upper case
  bool wide = false;        // some value needs 64 bits
  const char* suffix = "u";
  Bytes arena = 0;          // all pools' bytes
  std::string h;
};

}  // namespace

std::string writeCHeader(const Plan& plan, const Model* model, const CHeaderOptions& options) {
  if (!isCIdentifier(options.prefix))
    throw InputError(fmt::format("--c-prefix: '{}' is not a C identifier (letters, digits, '_', "
                                 "at most 40, no '__')",
                                 commentText(options.prefix)));
  const RuntimeTable t = [&] {
    try {
      return runtimeTable(plan, model);
    } catch (const InputError& e) {
      // A value of the input the header cannot hold: name the input.
      const std::string& input = plan.source.name.empty() ? options.source : plan.source.name;
      if (input.empty()) throw;
      throw InputError(fmt::format("{}: {}, the C header's type for steps", input, e.what()));
    }
  }();
  return HeaderWriter(plan, model, options, t).text();
}

}  // namespace memplan

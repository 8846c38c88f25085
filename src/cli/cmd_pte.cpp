// ExecuTorch programs on the command line: the per-method summary and
// method selection.
#include <fmt/format.h>

#include "cli.h"
#include "memplan/report.h"

namespace memplan::cli {

std::string pteSummary(const PteProgram& program, const Plan& plan) {
  std::vector<std::vector<std::string>> rows = {
      {"method", "pool", "file arena", "this plan", "lower bound", "change", ""}};
  for (std::size_t g = 0; g < program.methods.size() && g < plan.graphs.size(); ++g) {
    const PteMethod& m = program.methods[g];
    for (const PoolInfo& pool : plan.graphs[g].pools) {
      const auto id = static_cast<std::size_t>(pool.mem_id);
      const Bytes file = id < m.buffer_sizes.size() ? m.buffer_sizes[id] : 0;
      const double change = file == 0 ? 0.0
                                       : (static_cast<double>(pool.size) - static_cast<double>(file)) *
                                             100.0 / static_cast<double>(file);
      std::string note;
      if (pool.algorithm == "original") note = "the file's placement";
      rows.push_back({m.name, std::to_string(pool.mem_id), fmt::format("{} B", file),
                      fmt::format("{} B", pool.size), fmt::format("{} B", pool.lower_bound),
                      fmt::format("{:+.1f}%", change), note});
    }
  }
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  std::string out = fmt::format("\nExecuTorch program: {} method{}\n", program.methods.size(),
                                program.methods.size() == 1 ? "" : "s");
  for (const auto& r : rows) {
    std::string line = "  ";
    for (std::size_t c = 0; c < r.size(); ++c) {
      const bool left = c == 0 || c + 1 == r.size();
      const std::string pad(width[c] - r[c].size(), ' ');
      line += left ? r[c] + pad : pad + r[c];
      line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string violationLine(const Input& input, const Violation& v) {
  if (input.pte()) return v.message;  // names the method already
  return fmt::format("graph {}: {}", v.graph, v.message);
}

GraphId pteMethodIndex(const PteProgram& program, const std::string& name) {
  std::string names;
  for (const PteMethod& m : program.methods) names += (names.empty() ? "" : ", ") + m.name;
  if (name.empty()) {
    if (program.methods.size() == 1) return 0;
    throw InputError(fmt::format("{}: {} methods ({}): choose one with --method", program.source,
                                 program.methods.size(), names));
  }
  for (std::size_t g = 0; g < program.methods.size(); ++g)
    if (program.methods[g].name == name) return static_cast<GraphId>(g);
  throw InputError(fmt::format("--method: {} has no method '{}' (methods: {})", program.source, name, names));
}

}  // namespace memplan::cli

// Checking a plan of an ExecuTorch program: the verifier, what the runtime
// checks at load, and the replay, method by method.
#include <algorithm>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "memplan/pte.h"
#include "verify/replay.h"

namespace memplan {
namespace {

// The runtime places a planned tensor at buffer[memory_id - 1] + offset and
// refuses the method when its bytes do not fit there.
void checkBounds(const PteProgram& p, const Plan& plan, bool file_offsets, VerifyResult& r) {
  for (std::size_t t = 0; t < p.tensors.size(); ++t) {
    const PteTensor& x = p.tensors[t];
    if (!x.allocation) continue;
    const auto g = static_cast<std::size_t>(x.method);
    if (g >= plan.graphs.size()) continue;
    const GraphPlan& gp = plan.graphs[g];
    const std::string& name = p.model.tensors[t].name;
    const auto m = static_cast<std::size_t>(x.allocation->mem_id);
    const PteMethod& method = p.methods[g];
    if (m >= method.buffer_sizes.size()) {
      r.violations.push_back({x.method, fmt::format("{}: '{}' is in memory id {}, but the method has {} "
                                                    "buffers (non_const_buffer_sizes)",
                                                    methodLabel(p, x.method), name, m,
                                                    method.buffer_sizes.empty() ? 0 : method.buffer_sizes.size() - 1)});
      continue;
    }
    const SpecId s = static_cast<std::size_t>(t) < gp.specs.tensor_spec.size() ? gp.specs.tensor_spec[t] : kNone;
    if (s != kNone && gp.find(s)) continue;  // checked by the verifier
    // Named by no instruction: only its place at load matters.
    const Bytes size = m < gp.bufsizes.size() ? gp.bufsizes[m] : 0;
    const Bytes n = p.model.tensors[t].nbytes;
    Offset off = x.allocation->offset;
    if (!file_offsets && (off > size || n > size - off)) off = 0;  // the writer's rule
    if (n > 0 && (off > size || n > size - off))
      r.violations.push_back({x.method, fmt::format("{}: '{}' at bytes [{}, {}) lies outside buffer {} of {} "
                                                    "bytes (the runtime refuses to load it)",
                                                    methodLabel(p, x.method), name, off, off + n, m, size)});
  }
}

}  // namespace

VerifyResult verifyPte(const PteProgram& p, const Plan& plan, bool file_offsets) {
  VerifyResult r = verifyPlan(plan);
  for (Violation& v : r.violations)
    if (v.graph >= 0 && static_cast<std::size_t>(v.graph) < p.methods.size())
      v.message = methodLabel(p, v.graph) + ": " + v.message;
  checkBounds(p, plan, file_offsets, r);
  return r;
}

ReplayResult replayPte(const PteProgram& p, const Plan& plan, const ReplayOptions& options) {
  ReplayResult total;
  if (plan.graphs.size() != p.methods.size()) {
    total.issue = ReplayIssue::BadPlan;
    total.message = fmt::format("replay: the plan has {} graphs, the program {} methods",
                                plan.graphs.size(), p.methods.size());
    return total;
  }
  TensorId base = 0;
  for (GraphId g = 0; g < static_cast<GraphId>(p.methods.size()); ++g) {
    const Model model = methodModel(p, g);
    const auto count = static_cast<TensorId>(model.tensors.size());
    // The method's plan, its tensor ids counted from the method's first.
    Plan one;
    one.algorithm = plan.algorithm;
    one.options = plan.options;
    GraphPlan gp = plan.graphs[static_cast<std::size_t>(g)];
    gp.graph = 0;
    gp.parent = kNone;
    TensorSpecMap local;
    for (const auto& [t, s] : gp.specs.tensor_spec.entries())
      if (t >= base && t - base < count) local.set(t - base, s);
    gp.specs.tensor_spec = std::move(local);
    gp.specs.graph = 0;
    for (Spec& s : gp.specs.specs) {
      s.tensor -= base;
      for (TensorId& t : s.members) t -= base;
    }
    one.graphs.push_back(std::move(gp));
    ReplayResult r = replayPlan(model, one, options);
    // Counts saturate at 2^64 - 1, as each method's do.
    const auto add = [](std::uint64_t& sum, std::uint64_t n) {
      sum = n > std::numeric_limits<std::uint64_t>::max() - sum ? std::numeric_limits<std::uint64_t>::max()
                                                                : sum + n;
    };
    add(total.writes, r.writes);
    add(total.reads, r.reads);
    add(total.steps, r.steps);
    total.dense_pools += r.dense_pools;
    total.sparse_pools += r.sparse_pools;
    add(total.shadow_work, r.shadow_work);
    if (!r.ok()) {
      const ReplayResult counts = total;
      total = std::move(r);
      total.graph = g;
      total.message = methodLabel(p, g) + ": " + total.message;
      total.writes = counts.writes;
      total.reads = counts.reads;
      total.steps = counts.steps;
      return total;
    }
    base += count;
  }
  return total;
}

}  // namespace memplan

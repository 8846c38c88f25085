// Text and JSON reports of a plan.
//
// Per pool: arena size, lower bound, their ratio, whether the size is proven
// optimal, the naive sum (no reuse) and the saving against it, the winning
// algorithm; then the peak moment (the first step where live bytes are
// highest) and the largest tensors live there, which are what one would
// have to shrink to make the arena smaller.
#include "memplan/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <nlohmann/json.hpp>

#include "export/export_util.h"
#include "export/order_report.h"
#include "plan/plan_order.h"
#include "verify/pieces.h"

namespace memplan {

using exportutil::sanitizeUtf8;

namespace {

// Saving of `size` against `naive`, in percent (negative = smaller).
double changePercent(Bytes size, Bytes naive) {
  if (naive == 0) return 0.0;
  return (static_cast<double>(size) - static_cast<double>(naive)) * 100.0 /
         static_cast<double>(naive);
}

std::string percentText(double pct) {
  std::string s = fmt::format("{:+.1f}%", pct);
  if (s == "-0.0%") s = "+0.0%";
  return s;
}

std::string ratioText(Bytes size, Bytes bound) {
  if (bound == 0) return "-";
  return fmt::format("{:.3f}", static_cast<double>(size) / static_cast<double>(bound));
}

// Columns padded to the widest cell; `right` marks right-aligned columns.
std::string table(const std::vector<std::vector<std::string>>& rows,
                  const std::vector<bool>& right, const std::string& indent) {
  std::vector<std::size_t> width;
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const bool r = c < right.size() && right[c];
      const std::size_t pad = width[c] - row[c].size();
      if (c) line += "  ";
      if (r) line.append(pad, ' ');
      line += row[c];
      if (!r && c + 1 < row.size()) line.append(pad, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace

std::string formatSaving(Bytes size, Bytes naive, bool exact) {
  return fmt::format("{} instead of {}, {}", formatBytes(size, exact), formatBytes(naive, exact),
                     percentText(changePercent(size, naive)));
}

namespace {

// What the report calls the input: the file as given, whatever its kind
// (a spec list or CSV has no model to name).
std::string inputName(const Plan& plan, const Model* model, const ReportOptions& options) {
  if (!options.input_name.empty()) return options.input_name;
  if (!plan.source.name.empty()) return plan.source.name;
  return model ? model->name : std::string();
}

bool isEntryGraph(const Plan& plan, GraphId g) {
  if (g == 0) return true;
  for (const MethodPlan& m : plan.methods)
    if (m.graph == g) return true;
  return false;
}

// A graph's name in the report: its method's name for an entry graph.
std::string graphName(const Plan& plan, const Model* model, GraphId g) {
  for (const MethodPlan& m : plan.methods)
    if (m.graph == g) return m.name;
  return exportutil::graphLabel(model, g);
}

// Per method: pools (its entry graph's bufsizes), activations, state.
struct MethodSummary {
  std::string name;
  std::vector<Bytes> bufsizes;
  Bytes activations = 0, state = 0;
};

std::vector<MethodSummary> methodSummaries(const Plan& plan) {
  std::vector<MethodSummary> out;
  std::vector<MethodPlan> methods = plan.methods;
  if (methods.empty() && !sharedState(plan).empty()) methods.push_back({"", 0});
  for (const MethodPlan& m : methods) {
    if (m.graph < 0 || static_cast<std::size_t>(m.graph) >= plan.graphs.size()) continue;
    const GraphPlan& g = plan.graphs[m.graph];
    MethodSummary sum{m.name.empty() ? "main" : m.name, g.bufsizes};
    std::vector<bool> state(g.bufsizes.size(), false);
    for (const PoolInfo& p : g.pools)
      if (p.state && p.mem_id >= 0 && static_cast<std::size_t>(p.mem_id) < state.size()) state[p.mem_id] = true;
    for (std::size_t i = 1; i < g.bufsizes.size(); ++i) (state[i] ? sum.state : sum.activations) += g.bufsizes[i];
    out.push_back(std::move(sum));
  }
  return out;
}

// Bytes of the methods' arenas when the methods share them (one arena per
// mem_id, as large as the largest method's: ExecuTorch's
// share_memory_arenas), and when each method has its own activations.
std::pair<Bytes, Bytes> methodTotals(const std::vector<MethodSummary>& methods) {
  std::vector<Bytes> shared;
  Bytes state = 0, own = 0;
  for (const MethodSummary& m : methods) {
    if (shared.size() < m.bufsizes.size()) shared.resize(m.bufsizes.size(), 0);
    for (std::size_t i = 0; i < m.bufsizes.size(); ++i) shared[i] = std::max(shared[i], m.bufsizes[i]);
    state = std::max(state, m.state);
    own += m.activations;
  }
  Bytes total = 0;
  for (Bytes b : shared) total += b;
  return {total, state + own};
}

// Planned tensors of non-CPU:0 devices that went to CPU:0 pools (planning
// without per-device partitions), and their devices.
std::pair<std::size_t, std::vector<Device>> offCpuTensors(const Plan& plan) {
  std::size_t count = 0;
  std::vector<Device> devices;
  if (plan.options.per_device) return {0, devices};
  for (const GraphPlan& g : plan.graphs)
    for (const Spec& s : g.specs.specs) {
      if (!s.planned || s.device.isCpu0()) continue;
      ++count;
      if (std::find(devices.begin(), devices.end(), s.device) == devices.end()) devices.push_back(s.device);
    }
  std::sort(devices.begin(), devices.end());
  return {count, devices};
}

}  // namespace

std::vector<ReportPool> analyzePlan(const Plan& plan, const Model* model,
                                    const ReportOptions& options) {
  std::optional<PlannedModel> planned;  // node names in the order planned
  if (model && plan.order_applied) model = &planned.emplace(*model, plan).get();
  std::vector<ReportPool> out;
  for (std::size_t g = 0; g < plan.graphs.size(); ++g) {
    if (!options.include_subgraphs && !isEntryGraph(plan, static_cast<GraphId>(g))) continue;
    const GraphPlan& gp = plan.graphs[g];
    const exportutil::ProducerOps producers = exportutil::producerOps(model, gp.graph);
    std::vector<PoolInfo> pools = gp.pools;
    std::stable_sort(pools.begin(), pools.end(),
                     [](const PoolInfo& a, const PoolInfo& b) { return a.mem_id < b.mem_id; });
    for (const PoolInfo& info : pools) {
      ReportPool rp;
      rp.graph = gp.graph;
      rp.info = info;
      const exportutil::Peak peak = exportutil::peakOf(exportutil::liveCurve(gp, info.mem_id));
      rp.peak_step = peak.step;
      rp.peak_live = peak.live;
      const exportutil::StepInfo at = exportutil::stepInfo(model, gp.graph, rp.peak_step);
      rp.peak_node = at.name;
      rp.peak_op = at.op;
      // The tensors holding bytes at the peak, counted as the live curve
      // counts them (pieces: a gap may hold none).
      std::vector<const Allocation*> live;
      std::vector<piece::Piece> pieces;
      for (const Allocation& a : gp.allocations) {
        const Spec* spec = exportutil::allocSpec(gp, a);
        if (a.mem_id != info.mem_id || !spec) continue;
        piece::piecesOf(*spec, a.size, pieces);
        if (std::any_of(pieces.begin(), pieces.end(), [&](const piece::Piece& p) {
              return p.first <= rp.peak_step && rp.peak_step <= p.last;
            }))
          live.push_back(&a);
      }
      // Largest first; ties by offset then spec so the order is total.
      std::sort(live.begin(), live.end(), [](const Allocation* a, const Allocation* b) {
        if (a->size != b->size) return a->size > b->size;
        if (a->offset != b->offset) return a->offset < b->offset;
        return a->spec < b->spec;
      });
      if (live.size() > options.top_tensors) live.resize(options.top_tensors);
      for (const Allocation* a : live)
        rp.top.push_back(exportutil::describe(gp, *a, model, producers));
      out.push_back(std::move(rp));
    }
  }
  return out;
}

namespace {
// Converter-made names run to hundreds of characters (TFLite joins every
// fused op's name): the text report keeps both ends of long ones.
std::string shortName(const std::string& name, std::size_t max = 48) {
  const std::string clean = sanitizeUtf8(name);
  if (clean.size() <= max) return clean;
  std::size_t head = max / 2 - 2, tail = max - head - 3;
  // Cut on UTF-8 character boundaries.
  while (head > 0 && (static_cast<unsigned char>(clean[head]) & 0xC0) == 0x80) --head;
  std::size_t from = clean.size() - tail;
  while (from < clean.size() && (static_cast<unsigned char>(clean[from]) & 0xC0) == 0x80) ++from;
  return clean.substr(0, head) + "..." + clean.substr(from);
}

// The methods' arenas and state, when the input has several methods.
void methodsText(std::string& out, const Plan& plan, bool exact) {
  const std::vector<MethodSummary> methods = methodSummaries(plan);
  if (methods.empty()) return;
  out += fmt::format("methods (state shared by fqn, {}):\n",
                     plan.options.share_mutable_buffers ? "placed as ExecuTorch's share_mutable_buffers does"
                                                        : "planned once in its own pool");
  std::vector<std::vector<std::string>> t = {{"method", "pools", "activations", "state"}};
  for (const MethodSummary& m : methods) {
    std::string list;
    for (Bytes b : m.bufsizes) list += (list.empty() ? "" : ", ") + std::to_string(b);
    t.push_back({shortName(m.name, 32), "[" + list + "]", formatBytes(m.activations, exact),
                 formatBytes(m.state, exact)});
  }
  out += table(t, {false, false, true, true}, "  ");
  const auto [shared, separate] = methodTotals(methods);
  out += fmt::format("  total: {} with the methods sharing arenas; {} with activations per method\n",
                     formatBytes(shared, exact), formatBytes(separate, exact));
}

// One row per pool.
void poolSummaryText(std::string& out, const Plan& plan, const Model* model,
                     const std::vector<ReportPool>& pools, bool exact) {
  std::vector<std::vector<std::string>> rows = {{"graph", "pool", "device", "arena", "lower bound",
                                                 "ratio", "optimal", "naive", "saving",
                                                 "algorithm", "tensors"}};
  for (const ReportPool& p : pools) {
    const PoolInfo& i = p.info;
    rows.push_back({shortName(graphName(plan, model, p.graph), 32), std::to_string(i.mem_id),
                    sanitizeUtf8(i.device.str()), formatBytes(i.size, exact),
                    formatBytes(i.lower_bound, exact), ratioText(i.size, i.lower_bound),
                    exportutil::isOptimal(i) ? "yes" : "no", formatBytes(i.naive_size, exact),
                    percentText(changePercent(i.size, i.naive_size)),
                    sanitizeUtf8(i.algorithm.empty() ? "-" : i.algorithm),
                    std::to_string(i.buffers)});
  }
  out += table(rows, {false, true, false, true, true, true, false, true, true, false, true}, "");
}

// What the search stages gained, when it went past the heuristics.
void searchStagesText(std::string& out, const PoolInfo& i, bool exact) {
  if (i.stages.size() <= 1 && i.stopped.empty()) return;
  auto times = [&](Bytes b) {
    return i.lower_bound ? fmt::format("{:.4f}x", static_cast<double>(b) /
                                                      static_cast<double>(i.lower_bound))
                         : formatBytes(b, exact);
  };
  std::string line;
  for (std::size_t k = 0; k < i.stages.size(); ++k) {
    const SearchStage& st = i.stages[k];
    line += fmt::format("{}{} {}", k ? ", " : "", st.stage, times(st.size));
    if (k > 0 && st.size < i.stages[k - 1].size)
      line += fmt::format(" (-{})", formatBytes(i.stages[k - 1].size - st.size, exact));
  }
  out += fmt::format("  search: {}\n", line.empty() ? "-" : line);
  if (!i.stopped.empty())
    out += fmt::format("  stopped ({}): the best plan found until then\n", i.stopped);
}

// The tensors live at a pool's peak.
void peakTensorsText(std::string& out, const ReportPool& p, const Model* model, bool exact) {
  const bool shapes = model != nullptr;
  std::vector<std::vector<std::string>> t;
  if (shapes) t.push_back({"tensor", "op", "shape", "dtype", "bytes", "offset", "lifetime"});
  else t.push_back({"tensor", "bytes", "offset", "lifetime"});
  for (const ReportTensor& r : p.top) {
    std::vector<std::string> row = {shortName(r.name)};
    if (shapes) {
      row.push_back(sanitizeUtf8(r.op));
      row.push_back(r.shape.empty() ? "-" : r.shape);
      row.push_back(r.dtype.empty() ? "-" : r.dtype);
    }
    row.push_back(formatBytes(r.bytes, exact));
    row.push_back(std::to_string(r.offset));
    row.push_back(fmt::format("{}..{}", r.first, r.last));
    t.push_back(std::move(row));
  }
  out += table(t, shapes ? std::vector<bool>{false, false, false, false, true, true, false}
                         : std::vector<bool>{false, true, true, false},
               "    ");
}

// Per pool: the saving in words, the peak, the tensors that make it.
void poolDetailText(std::string& out, const Plan& plan, const Model* model, const ReportPool& p,
                    bool exact) {
  const PoolInfo& i = p.info;
  out += fmt::format("\n{} pool {}: {}\n", shortName(graphName(plan, model, p.graph), 32),
                     i.mem_id, formatSaving(i.size, i.naive_size, exact));
  std::string where;
  if (!p.peak_node.empty() || !p.peak_op.empty())
    where = fmt::format(" ({}{})", shortName(p.peak_node),
                        p.peak_op.empty() || p.peak_op == p.peak_node
                            ? std::string()
                            : " " + sanitizeUtf8(p.peak_op));
  searchStagesText(out, i, exact);
  out += fmt::format("  peak at step {}{}: {} live", p.peak_step, where,
                     formatBytes(p.peak_live, exact));
  if (i.reserved > 0)
    out += fmt::format(" + {} reserved for control-flow bodies", formatBytes(i.reserved, exact));
  out += '\n';
  if (!p.top.empty()) peakTensorsText(out, p, model, exact);
}

}  // namespace

std::string formatReport(const Plan& plan, const Model* model, const ReportOptions& options) {
  const bool exact = options.exact_bytes;
  const std::vector<ReportPool> pools = analyzePlan(plan, model, options);
  std::string out = "memplan";
  if (const std::string name = inputName(plan, model, options); !name.empty())
    out += ": " + sanitizeUtf8(name);
  out += fmt::format(", algorithm {}", sanitizeUtf8(plan.algorithm.empty() ? "-" : plan.algorithm));
  if (options.include_timing) out += fmt::format(", planned in {:.2f} s", plan.planning_seconds);
  out += '\n';
  if (const auto [count, devices] = offCpuTensors(plan); count > 0) {
    std::string names;
    for (const Device& d : devices) names += (names.empty() ? "" : ", ") + sanitizeUtf8(d.str());
    out += fmt::format("note: {} tensor{} on {} planned into CPU:0 pools, as ExecuTorch does without "
                       "per-device planning (--per-device gives each device its own pools)\n",
                       count, count == 1 ? "" : "s", names);
  }
  if (pools.empty()) return out + "no planned tensors\n";
  methodsText(out, plan, exact);
  poolSummaryText(out, plan, model, pools, exact);
  out += exportutil::orderReportText(plan, model, exact);
  for (const ReportPool& p : pools) poolDetailText(out, plan, model, p, exact);
  return out;
}

std::string formatReportJson(const Plan& plan, const Model* model, const ReportOptions& options) {
  using nlohmann::json;
  const std::vector<ReportPool> pools = analyzePlan(plan, model, options);
  json doc = json::object();
  doc["model"] = model ? json(sanitizeUtf8(model->name)) : json(nullptr);
  const std::string input = inputName(plan, model, options);
  doc["input"] = input.empty() ? json(nullptr) : json(sanitizeUtf8(input));
  doc["algorithm"] = sanitizeUtf8(plan.algorithm);
  if (options.include_timing) doc["planning_seconds"] = plan.planning_seconds;
  Bytes total = 0, naive = 0;
  json arr = json::array();
  for (const ReportPool& p : pools) {
    const PoolInfo& i = p.info;
    if (p.graph == 0) {
      total += i.size;
      naive += i.naive_size;
    }
    json pool = {
        {"graph", p.graph},
        {"graph_name", sanitizeUtf8(graphName(plan, model, p.graph))},
        {"mem_id", i.mem_id},
        {"device", sanitizeUtf8(i.device.str())},
        {"arena_bytes", i.size},
        {"lower_bound_bytes", i.lower_bound},
        {"ratio", i.lower_bound ? json(std::round(static_cast<double>(i.size) * 1e6 /
                                                  static_cast<double>(i.lower_bound)) / 1e6)
                                : json(nullptr)},
        {"proven_optimal", exportutil::isOptimal(i)},
        {"naive_bytes", i.naive_size},
        {"saving_bytes", i.naive_size >= i.size ? i.naive_size - i.size : 0},
        {"change_percent", std::round(changePercent(i.size, i.naive_size) * 10.0) / 10.0},
        {"reserved_bytes", i.reserved},
        {"algorithm", sanitizeUtf8(i.algorithm)},
        {"tensors", i.buffers},
        {"work", i.work},
    };
    if (!i.stages.empty()) {
      json stages = json::array();
      for (const SearchStage& st : i.stages)
        stages.push_back({{"stage", st.stage}, {"bytes", st.size}, {"work", st.work}});
      pool["stages"] = std::move(stages);
    }
    if (!i.stopped.empty()) pool["stopped"] = i.stopped;
    json top = json::array();
    for (const ReportTensor& r : p.top) {
      json t = {{"name", sanitizeUtf8(r.name)}, {"spec", r.spec}, {"op", sanitizeUtf8(r.op)},
                {"bytes", r.bytes}, {"offset", r.offset}, {"first", r.first}, {"last", r.last}};
      t["shape"] = r.has_shape ? json(r.dims) : json(nullptr);
      t["dtype"] = r.dtype.empty() ? json(nullptr) : json(r.dtype);
      top.push_back(std::move(t));
    }
    pool["peak"] = {{"step", p.peak_step},
                    {"node", sanitizeUtf8(p.peak_node)},
                    {"op", sanitizeUtf8(p.peak_op)},
                    {"live_bytes", p.peak_live},
                    {"top_tensors", std::move(top)}};
    arr.push_back(std::move(pool));
  }
  doc["main_arena_bytes"] = total;
  doc["main_naive_bytes"] = naive;
  if (const std::vector<MethodSummary> methods = methodSummaries(plan); !methods.empty()) {
    json list = json::array();
    for (const MethodSummary& m : methods)
      list.push_back({{"name", sanitizeUtf8(m.name)}, {"bufsizes", m.bufsizes},
                      {"activation_bytes", m.activations}, {"state_bytes", m.state}});
    doc["methods"] = std::move(list);
    const auto [shared, separate] = methodTotals(methods);
    doc["methods_total_bytes"] = shared;
    doc["methods_total_bytes_separate_activations"] = separate;
  }
  if (const auto [count, devices] = offCpuTensors(plan); count > 0)
    doc["off_cpu_tensors_in_cpu_pools"] = count;
  if (json order = exportutil::orderReportJson(plan); !order.is_null()) doc["order"] = std::move(order);
  doc["pools"] = std::move(arr);
  return doc.dump(2) + "\n";
}

}  // namespace memplan

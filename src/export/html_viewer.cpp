// The HTML viewer: one self-contained page (inline script and style, no
// network) that draws a plan on a canvas.
//
// The C++ side only gathers facts into one JSON document embedded in the
// page; the script (viewer/viewer.js, with viewer.css and viewer.html,
// embedded at build time) does layout, zoom, pan, tooltips and tabs. Tensors are stored column-wise (one array per field)
// so a 100k-tensor plan stays a few MiB and parses fast.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "export/export_util.h"
#include "export/viewer_assets.h"  // generated from src/export/viewer/
#include "memplan/report.h"

namespace memplan {

namespace {

using nlohmann::json;
using viewer::kViewerBody;
using viewer::kViewerCss;
using viewer::kViewerJs;
using exportutil::sanitizeUtf8;

// What runs at each step of graph `gp` (names only with a model; a
// model's node list bounds this, so it cannot blow up on a spec list with
// huge lifetimes), its control-flow nodes, and the node that runs it.
void addSteps(json& g, const GraphPlan& gp, const Graph* mg, TimeValue steps, const Model* model) {
  json step_names = json::array(), step_ops = json::array(), control = json::array();
  if (mg) {
    const TimeValue known = std::min<TimeValue>(
        steps, static_cast<TimeValue>(mg->inputs.size() + mg->nodes.size() + 1));
    for (TimeValue t = 0; t < known; ++t) {
      const exportutil::StepInfo info = exportutil::stepInfo(model, gp.graph, t);
      step_names.push_back(sanitizeUtf8(info.name));
      step_ops.push_back(sanitizeUtf8(info.op));
    }
    if (mg->parent_node >= 0) {
      if (const Graph* pg = exportutil::modelGraph(model, mg->parent);
          pg && static_cast<std::size_t>(mg->parent_node) < pg->nodes.size()) {
        const Node& pn = pg->nodes[static_cast<std::size_t>(mg->parent_node)];
        g["parent_node"] = sanitizeUtf8(pn.name);
        g["parent_kind"] = std::string(nodeKindName(pn.kind));
      }
    }
    for (std::size_t n = 0; n < mg->nodes.size(); ++n) {
      const Node& node = mg->nodes[n];
      if (node.subgraphs.empty()) continue;
      control.push_back({{"step", nodeTime(*mg, static_cast<NodeId>(n))},
                         {"name", sanitizeUtf8(node.name)},
                         {"op", sanitizeUtf8(node.op)},
                         {"kind", std::string(nodeKindName(node.kind))},
                         {"subgraphs", node.subgraphs}});
    }
  }
  // Steps that only make constants: the viewer folds them (a toggle).
  g["constant_steps"] = exportutil::constantSteps(model, gp.graph);
  g["step_names"] = std::move(step_names);
  g["step_ops"] = std::move(step_ops);
  g["control"] = std::move(control);
}

// The graph's pools by mem_id, each with its live-bytes curve and peak.
json poolsJson(const GraphPlan& gp) {
  std::vector<PoolInfo> pools = gp.pools;
  std::stable_sort(pools.begin(), pools.end(),
                   [](const PoolInfo& a, const PoolInfo& b) { return a.mem_id < b.mem_id; });
  json pj = json::array();
  for (const PoolInfo& p : pools) {
    json live = json::array();
    const auto curve = exportutil::liveCurve(gp, p.mem_id);
    for (const auto& [t, b] : curve) {
      live.push_back(t);
      live.push_back(b);
    }
    const exportutil::Peak peak = exportutil::peakOf(curve);
    pj.push_back({{"mem_id", p.mem_id},
                  {"device", sanitizeUtf8(p.device.str())},
                  {"size", p.size},
                  {"lower_bound", p.lower_bound},
                  {"naive", p.naive_size},
                  {"reserved", p.reserved},
                  {"buffers", p.buffers},
                  {"algorithm", sanitizeUtf8(p.algorithm)},
                  {"optimal", exportutil::isOptimal(p)},
                  {"peak_step", peak.step},
                  {"peak_live", peak.live},
                  {"live", std::move(live)}});
  }
  return pj;
}

json tensorsJson(const GraphPlan& gp, const Model* model) {
  // Tensors, column-wise. Role codes index Data.roles.
  const exportutil::ProducerOps producers = exportutil::producerOps(model, gp.graph);
  json pool = json::array(), first = json::array(), last = json::array(), offset = json::array(),
       size = json::array(), role = json::array(), name = json::array(), op = json::array(),
       shape = json::array(), dtype = json::array(), aka = json::array();
  for (const Allocation& a : gp.allocations) {
    const Spec* s = exportutil::allocSpec(gp, a);
    if (!s) continue;
    const ReportTensor t = exportutil::describe(gp, a, model, producers);
    pool.push_back(a.mem_id);
    first.push_back(s->first);
    last.push_back(s->last);
    offset.push_back(a.offset);
    size.push_back(a.size);
    role.push_back(static_cast<int>(exportutil::specRole(*s)));
    name.push_back(sanitizeUtf8(t.name));
    op.push_back(sanitizeUtf8(t.op));
    shape.push_back(t.shape);
    dtype.push_back(t.dtype);
    // The other tensors sharing this storage (views, in-place results):
    // search finds a storage by any of their names.
    std::string also;
    if (model)
      for (TensorId m : s->members)
        if (m != s->tensor && m >= 0 && static_cast<std::size_t>(m) < model->tensors.size())
          also += (also.empty() ? "" : ", ") + model->tensors[static_cast<std::size_t>(m)].name;
    aka.push_back(sanitizeUtf8(also));
  }
  return {{"pool", std::move(pool)},     {"first", std::move(first)},
          {"last", std::move(last)},     {"offset", std::move(offset)},
          {"size", std::move(size)},     {"role", std::move(role)},
          {"name", std::move(name)},     {"op", std::move(op)},
          {"shape", std::move(shape)},   {"dtype", std::move(dtype)},
          {"aka", std::move(aka)}};
}

json graphJson(const GraphPlan& gp, GraphId id, const Model* model) {
  json g = json::object();
  g["id"] = id;
  g["name"] = sanitizeUtf8(exportutil::graphLabel(model, gp.graph));
  const Graph* mg = exportutil::modelGraph(model, gp.graph);
  g["parent"] = mg ? mg->parent : (id == 0 ? kNone : 0);
  TimeValue steps = std::max<TimeValue>(gp.specs.steps, 1);
  for (const Allocation& a : gp.allocations)
    if (const Spec* s = exportutil::allocSpec(gp, a)) steps = std::max(steps, s->last + 1);
  g["steps"] = steps;
  addSteps(g, gp, mg, steps, model);
  g["pools"] = poolsJson(gp);
  g["tensors"] = tensorsJson(gp, model);
  return g;
}

json planJson(const Plan& plan, const Model* model, bool timing) {
  json p = json::object();
  p["algorithm"] = sanitizeUtf8(plan.algorithm);
  if (timing) p["planning_seconds"] = plan.planning_seconds;
  json graphs = json::array();
  for (std::size_t g = 0; g < plan.graphs.size(); ++g)
    graphs.push_back(graphJson(plan.graphs[g], static_cast<GraphId>(g), model));
  p["graphs"] = std::move(graphs);
  return p;
}

// JSON safe inside <script>: every '<' (only ever inside strings) becomes
// \u003c, so neither "</script>" nor "<!--" can end or confuse the block.
std::string scriptSafe(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 64);
  for (char c : text) {
    if (c == '<') out += "\\u003c";
    else out.push_back(c);
  }
  return out;
}

}  // namespace

std::string renderHtml(const Plan& plan, const Model* model, const HtmlOptions& options) {
  std::string title = options.title;
  if (title.empty()) title = model && !model->name.empty() ? model->name : "memplan plan";
  json data = json::object();
  data["title"] = sanitizeUtf8(title);
  data["roles"] = {"input", "output", "constant", "mutable", "intermediate"};
  json labels = {sanitizeUtf8(options.label.empty() ? plan.algorithm : options.label)};
  json plans = json::array({planJson(plan, model, options.include_timing)});
  if (options.compare) {
    labels.push_back(sanitizeUtf8(options.compare_label.empty() ? options.compare->algorithm
                                                                : options.compare_label));
    plans.push_back(planJson(*options.compare, model, options.include_timing));
  }
  data["labels"] = std::move(labels);
  data["plans"] = std::move(plans);

  std::string page;
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<title>" + exportutil::xmlEscape(title) + " - memplan</title>\n";
  page += "<style>\n";
  page += kViewerCss;
  page += "</style>\n</head>\n<body>\n";
  page += kViewerBody;
  page += "<script type=\"application/json\" id=\"memplan-data\">";
  page += scriptSafe(data.dump(-1, ' ', false, json::error_handler_t::replace));
  page += "</script>\n<script>\n";
  page += kViewerJs;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace memplan

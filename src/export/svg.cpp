// Static SVG picture of a plan: one panel per pool, x = execution step,
// y = offset (0 at the bottom), one rectangle per planned storage coloured
// by role, with a <title> tooltip; axes with ticks, a legend.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "export/export_util.h"
#include "memplan/report.h"

namespace memplan {

namespace {

using exportutil::Role;
using exportutil::xmlEscape;

std::string_view roleColour(Role role) {
  switch (role) {
    case Role::Input: return "#4e79a7";
    case Role::Output: return "#f28e2b";
    case Role::Constant: return "#9c755f";
    case Role::Mutable: return "#e15759";
    case Role::Intermediate: return "#59a14f";
  }
  return "#59a14f";
}

// 1-2-5 step giving about `target` ticks over `range`.
double niceStep(double range, int target) {
  if (range <= 0) return 1;
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

std::string num(double v) { return fmt::format("{:.2f}", v); }

// Byte ticks in binary units: pick the unit first, then a 1-2-5 step in it.
struct ByteTicks {
  double step = 1;                   // bytes
  double unit = 1;
  const char* name = "B";
};
ByteTicks byteTicks(double range) {
  ByteTicks t;
  static constexpr const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  for (std::size_t k = 0; k + 1 < std::size(kNames) && range / t.unit >= 1024 * 2; ++k) {
    t.unit *= 1024;
    t.name = kNames[k + 1];
  }
  t.step = std::max(1.0, niceStep(range / t.unit, 5) * t.unit);
  if (t.unit == 1) t.step = std::max(1.0, std::round(t.step));
  return t;
}
std::string byteLabel(double v, const ByteTicks& t) {
  if (v == 0) return "0 B";
  const double x = v / t.unit;
  if (t.unit == 1 || std::fabs(x - std::round(x)) < 1e-9)
    return fmt::format("{} {}", static_cast<long long>(std::llround(x)), t.name);
  return fmt::format("{:.1f} {}", x, t.name);
}

// Page geometry (pixels), fixed but for the width and the pool height.
struct Page {
  double width = 0, pool_h = 0;
  static constexpr double left = 78, right = 16, top_pad = 34, bottom = 34;
  static constexpr double header = 40, legend_h = 28;
  double plotWidth() const { return width - left - right; }
  double panelHeight() const { return top_pad + pool_h + bottom; }
};

struct Panel {
  const GraphPlan* gp;
  PoolInfo info;
};

// One panel per pool, in graph then mem_id order (the main graph's alone
// unless include_subgraphs).
std::vector<Panel> panelsOf(const Plan& plan, const SvgOptions& options) {
  std::vector<Panel> panels;
  for (std::size_t g = 0; g < plan.graphs.size(); ++g) {
    if (g > 0 && !options.include_subgraphs) break;
    std::vector<PoolInfo> pools = plan.graphs[g].pools;
    std::stable_sort(pools.begin(), pools.end(),
                     [](const PoolInfo& a, const PoolInfo& b) { return a.mem_id < b.mem_id; });
    for (const PoolInfo& p : pools) panels.push_back({&plan.graphs[g], p});
  }
  return panels;
}

// The XML prologue, the title line and the legend.
void renderHeading(std::string& s, const Plan& plan, const Model* model, const SvgOptions& options,
                   const Page& page, double height) {
  const double width = page.width, left = Page::left, right = Page::right, header = Page::header;
  std::string title = options.title;
  if (title.empty()) title = model && !model->name.empty() ? model->name : "memplan plan";
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"11\">\n",
      num(width), num(height));
  s += fmt::format("<rect class=\"bg\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
                   num(width), num(height));
  s += fmt::format("<text x=\"{}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
                   num(left), xmlEscape(title));
  s += fmt::format("<text x=\"{}\" y=\"24\" text-anchor=\"end\" fill=\"#555\">algorithm {}</text>\n",
                   num(width - right), xmlEscape(plan.algorithm.empty() ? "-" : plan.algorithm));

  // Legend.
  double lx = left;
  const double ly = header + 6;
  for (Role r : {Role::Input, Role::Output, Role::Intermediate, Role::Mutable, Role::Constant}) {
    s += fmt::format("<rect class=\"legend\" x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>",
                     num(lx), num(ly), roleColour(r));
    s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", num(lx + 16), num(ly + 10),
                     exportutil::roleName(r));
    lx += 110;
  }
}

// Where a panel's steps and bytes go.
struct PanelScale {
  TimeValue steps = 1;
  Bytes extent = 1;
  double px = 1, py = 1;  // pixels per step, per byte
  double top = 0, base = 0;
  double X(double step) const { return Page::left + step * px; }
  double Y(double bytes) const { return base - bytes * py; }
};

// One rectangle per tensor of the panel's pool, with its tooltip.
void renderTensors(std::string& s, const Panel& panel, const Model* model, const PanelScale& scale) {
  const GraphPlan& gp = *panel.gp;
  const PoolInfo& info = panel.info;
  const double px = scale.px, py = scale.py;
  const auto X = [&](double step) { return scale.X(step); };
  const auto Y = [&](double bytes) { return scale.Y(bytes); };
  const exportutil::ProducerOps producers = exportutil::producerOps(model, gp.graph);
  // Tensors.
  for (const Allocation& a : gp.allocations) {
    if (a.mem_id != info.mem_id) continue;
    const Spec* sp = exportutil::allocSpec(gp, a);
    if (!sp) continue;
    const ReportTensor t = exportutil::describe(gp, a, model, producers);
    const double x = X(static_cast<double>(sp->first));
    const double w = std::max(0.5, static_cast<double>(sp->last - sp->first + 1) * px);
    const double h = std::max(0.5, static_cast<double>(a.size) * py);
    const double y = Y(static_cast<double>(a.offset + a.size));
    std::string tip = t.name;
    if (t.op != "-") tip += " (" + t.op + ")";
    if (!t.shape.empty()) tip += fmt::format(", {} {}", t.shape, t.dtype);
    tip += fmt::format(", {} at offset {}, steps {}..{}", formatBytes(a.size, true), a.offset,
                       sp->first, sp->last);
    s += fmt::format(
        "<rect class=\"t\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
        "stroke=\"#fff\" stroke-width=\"0.5\"><title>{}</title></rect>\n",
        num(x), num(y), num(w), num(h), roleColour(exportutil::specRole(*sp)), xmlEscape(tip));
  }

}

// Ticks of steps below, of bytes on the left.
void renderAxes(std::string& s, const Page& page, const PanelScale& scale) {
  const double left = Page::left, plot_w = page.plotWidth(), pool_h = page.pool_h;
  const double top = scale.top, base = scale.base;
  const TimeValue steps = scale.steps;
  const Bytes extent = scale.extent;
  const auto X = [&](double step) { return scale.X(step); };
  const auto Y = [&](double bytes) { return scale.Y(bytes); };
  // Axes: steps below, bytes on the left.
  const double xs = std::max(1.0, std::round(niceStep(static_cast<double>(steps), 10)));
  for (double v = 0; v <= static_cast<double>(steps) + 1e-9; v += xs)
    s += fmt::format(
        "<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#999\"/><text x=\"{0}\" "
        "y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        num(X(v)), num(base), num(base + 4), num(base + 15), static_cast<long long>(v));
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">step</text>\n",
                   num(left + plot_w / 2), num(base + 29));
  const ByteTicks bt = byteTicks(static_cast<double>(extent));
  for (double v = 0; v <= static_cast<double>(extent) + 1e-9; v += bt.step)
    s += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#999\"/><text x=\"{3}\" "
        "y=\"{4}\" text-anchor=\"end\">{5}</text>\n",
        num(left - 4), num(left), num(Y(v)), num(left - 6), num(Y(v) + 4), byteLabel(v, bt));
  s += fmt::format(
      "<text x=\"14\" y=\"{0}\" text-anchor=\"middle\" fill=\"#555\" "
      "transform=\"rotate(-90 14 {0})\">offset</text>\n",
      num(top + pool_h / 2));
}

void renderPanel(std::string& s, const Panel& panel, const Model* model, const Page& page, double y0) {
  const GraphPlan& gp = *panel.gp;
  const PoolInfo& info = panel.info;
  const double left = Page::left, plot_w = page.plotWidth(), pool_h = page.pool_h;
  // Extent: steps and bytes (at least 1 to keep the scales finite).
  PanelScale scale;
  scale.steps = std::max<TimeValue>(gp.specs.steps, 1);
  scale.extent = std::max<Bytes>(info.size, 1);
  for (const Allocation& a : gp.allocations) {
    if (a.mem_id != info.mem_id) continue;
    if (const Spec* sp = exportutil::allocSpec(gp, a)) scale.steps = std::max(scale.steps, sp->last + 1);
    scale.extent = std::max(scale.extent, a.offset + a.size);
  }
  const Bytes extent = scale.extent;
  scale.px = plot_w / static_cast<double>(scale.steps);
  scale.py = pool_h / static_cast<double>(extent);
  const double py = scale.py;
  scale.top = y0 + Page::top_pad;
  scale.base = scale.top + pool_h;
  const double top = scale.top;
  const auto Y = [&](double bytes) { return scale.Y(bytes); };

  s += fmt::format("<g class=\"pool\" data-graph=\"{}\" data-mem-id=\"{}\">\n", gp.graph, info.mem_id);
  s += fmt::format(
      "<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{} pool {} ({}): {}, lower bound {}{}, "
      "{}</text>\n",
      num(left), num(y0 + 18), xmlEscape(exportutil::graphLabel(model, gp.graph)), info.mem_id,
      xmlEscape(info.device.str()), formatBytes(info.size), formatBytes(info.lower_bound),
      exportutil::isOptimal(info) ? " (optimal)" : "",
      xmlEscape(formatSaving(info.size, info.naive_size)));
  s += fmt::format(
      "<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f7f7f7\" "
      "stroke=\"#999\"/>\n",
      num(left), num(top), num(plot_w), num(pool_h));
  if (info.reserved > 0)
    s += fmt::format(
        "<rect class=\"reserved\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#ccc\">"
        "<title>reserved for control-flow bodies: {}</title></rect>\n",
        num(left), num(Y(static_cast<double>(info.reserved))), num(plot_w),
        num(static_cast<double>(info.reserved) * py), formatBytes(info.reserved, true));
  renderTensors(s, panel, model, scale);
  // Lower bound as a dashed line.
  if (info.lower_bound > 0 && info.lower_bound <= extent)
    s += fmt::format(
        "<line class=\"bound\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#d62728\" "
        "stroke-dasharray=\"4 3\"/>\n",
        num(left), num(left + plot_w), num(Y(static_cast<double>(info.lower_bound))));
  renderAxes(s, page, scale);
  s += "</g>\n";
}

}  // namespace

std::string renderSvg(const Plan& plan, const Model* model, const SvgOptions& options) {
  Page page;
  page.width = std::clamp(options.width, 200.0, 20000.0);
  page.pool_h = std::clamp(options.pool_height, 60.0, 20000.0);
  const std::vector<Panel> panels = panelsOf(plan, options);
  const double height =
      Page::header + Page::legend_h + std::max<double>(1, panels.size()) * page.panelHeight();
  std::string s;
  renderHeading(s, plan, model, options, page, height);
  if (panels.empty())
    s += fmt::format("<text x=\"{}\" y=\"{}\">no planned tensors</text>\n", num(Page::left),
                     num(Page::header + Page::legend_h + 30));
  double y0 = Page::header + Page::legend_h;
  for (const Panel& panel : panels) {
    renderPanel(s, panel, model, page, y0);
    y0 += page.panelHeight();
  }
  s += "</svg>\n";
  return s;
}

}  // namespace memplan

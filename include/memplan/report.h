// Human-readable views of a plan: a short text report, the same facts as
// JSON, a self-contained HTML viewer and a static SVG picture.
//
// Every function takes an optional Model: with it, tensors are shown with
// the op that produced them, their shape and dtype; without it (spec lists,
// CSV buffer lists) the spec names and sizes are all there is.
// Output is deterministic: the same plan gives the same bytes (the planning
// time is the only exception, and only where the options ask for it).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "memplan/plan.h"

namespace memplan {

// formatBytes (memplan/types.h) writes the byte counts.

// "x MiB instead of y MiB, -z%": a plan's size against the naive sum.
std::string formatSaving(Bytes size, Bytes naive, bool exact = false);

struct ReportOptions {
  bool exact_bytes = false;          // exact byte counts beside the units
  std::size_t top_tensors = 10;      // largest tensors listed at each peak
  bool include_timing = true;        // planning time (text and JSON)
  bool include_subgraphs = true;     // control-flow bodies after main
  // The input named in the header ("memplan: model.tflite, ..."); "" = the
  // plan's source file, else the model's name.
  std::string input_name;
};

// The facts the report is made of, computed once (also used by the viewer).
struct ReportTensor {
  SpecId spec = kNone;
  std::string name;
  std::string op;                    // producing op ("input", "-" if unknown)
  std::string shape;                 // "1x3x224x224", "" if unknown
  std::vector<std::int64_t> dims;    // the shape itself (when has_shape)
  bool has_shape = false;
  std::string dtype;                 // "float32", "" if unknown
  Bytes bytes = 0;                   // reserved (aligned) size
  Offset offset = 0;
  TimeValue first = 0, last = 0;     // closed lifetime
};

struct ReportPool {
  GraphId graph = 0;
  PoolInfo info;
  TimeValue peak_step = 0;           // first step where live bytes peak
  Bytes peak_live = 0;               // live bytes there (reserved excluded)
  std::string peak_node;             // node name at the peak step
  std::string peak_op;               // its op ("input", "output" at the ends)
  std::vector<ReportTensor> top;     // largest tensors live at the peak
};

// Pools of the main graph first, then of each control-flow body (when
// options.include_subgraphs), each in mem_id order.
std::vector<ReportPool> analyzePlan(const Plan& plan, const Model* model,
                                    const ReportOptions& options);

// Text report: a summary line, one table row per pool, the peak and its
// largest tensors. Aligned columns, ends with a newline.
std::string formatReport(const Plan& plan, const Model* model,
                         const ReportOptions& options);

// The same facts as a JSON document (pretty-printed, 2 spaces).
std::string formatReportJson(const Plan& plan, const Model* model,
                             const ReportOptions& options);

struct HtmlOptions {
  std::string title;                 // page title; default: model name
  const Plan* compare = nullptr;     // a second plan shown side by side
  std::string label = "plan";        // names of the two plans
  std::string compare_label = "compare";
  bool include_timing = false;       // planning time on the page
};

// One self-contained HTML file (inline script and style, no network):
// per graph and pool the layout (x = step, y = offset), tooltips, zoom and
// pan, the live-bytes curve over the lower bound, pool and graph tabs.
std::string renderHtml(const Plan& plan, const Model* model,
                       const HtmlOptions& options);

struct SvgOptions {
  double width = 960;                // picture width in px
  double pool_height = 320;          // height of each pool's layout
  bool include_subgraphs = false;    // also draw control-flow bodies
  std::string title;                 // default: model name
};

// A static SVG picture of the layout: one panel per pool of the main graph
// (and of the bodies when asked), axes, labels and a legend. Valid XML.
std::string renderSvg(const Plan& plan, const Model* model,
                      const SvgOptions& options);

}  // namespace memplan

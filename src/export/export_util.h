// Helpers shared by the report, the HTML viewer and the SVG picture.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memplan/report.h"

namespace memplan::exportutil {

// What a planned storage is, for colouring and tooltips.
enum class Role : std::uint8_t { Input, Output, Constant, Mutable, Intermediate };
std::string_view roleName(Role role);
// Mutable state first (it lives across calls), then input, output, weight.
Role specRole(const Spec& spec);

// Valid UTF-8 without control characters (names come from model files):
// bad bytes become U+FFFD, controls become '?'.
std::string sanitizeUtf8(std::string_view text);
// sanitizeUtf8 plus XML escaping of & < > " ', and U+FFFE/U+FFFF (not XML
// characters) as U+FFFD.
std::string xmlEscape(std::string_view text);

// "main" for graph 0; a body's name (cut at 40 bytes), or "graph 3".
std::string graphLabel(const Model* model, GraphId graph);

// What runs at `step` of a graph: a placeholder ("input"), a node, or the
// output node ("output"). Empty strings when the model is absent.
struct StepInfo {
  std::string name;
  std::string op;
};
StepInfo stepInfo(const Model* model, GraphId graph, TimeValue step);

// Per-graph lookup: TensorId -> op that produced it in that graph ("input"
// for its inputs). Holds the graph's own tensors only: reports of every
// body of a model would otherwise cost graphs x tensors.
using ProducerOps = std::unordered_map<TensorId, std::string>;
ProducerOps producerOps(const Model* model, GraphId graph);

// Facts of one allocation (name, op, shape, dtype, bytes, lifetime).
ReportTensor describe(const GraphPlan& plan, const Allocation& alloc,
                      const Model* model, const ProducerOps& producers);

// Live bytes of pool `mem_id` as change points (step, bytes from that step
// on), sorted by step; the reserved prefix is not included.
std::vector<std::pair<TimeValue, Bytes>> liveCurve(const GraphPlan& plan, MemId mem_id);

// Whether a pool's arena is the minimum: a search proved it, or it meets
// the lower bound (no plan beats that). One rule for every kind of plan
// (planned, a .pte's, a .tflite's offline plan) in every view.
inline bool isOptimal(const PoolInfo& info) {
  return info.proven_optimal || info.size == info.lower_bound;
}

// The first step where a live curve peaks, and the bytes live there (the
// report's and the viewer's peak: one definition).
struct Peak {
  TimeValue step = 0;
  Bytes live = 0;
};
Peak peakOf(const std::vector<std::pair<TimeValue, Bytes>>& curve);

// Steps of a graph whose node only produces constants (ONNX Constant nodes:
// PP-OCRv4 det has 342 among its 674 steps). Nothing planned starts there;
// the viewer can fold them away. Sorted; empty without a model.
std::vector<TimeValue> constantSteps(const Model* model, GraphId graph);

// The model's graph for a plan graph, or null (no model / out of range).
const Graph* modelGraph(const Model* model, GraphId graph);
// The spec of an allocation, or null when the plan is inconsistent.
const Spec* allocSpec(const GraphPlan& plan, const Allocation& alloc);

}  // namespace memplan::exportutil

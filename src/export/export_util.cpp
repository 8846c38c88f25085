#include "export/export_util.h"

#include <fmt/format.h>

#include <algorithm>

#include "verify/pieces.h"

namespace memplan::exportutil {

std::string_view roleName(Role role) {
  switch (role) {
    case Role::Input: return "input";
    case Role::Output: return "output";
    case Role::Constant: return "constant";
    case Role::Mutable: return "mutable";
    case Role::Intermediate: return "intermediate";
  }
  return "intermediate";
}

Role specRole(const Spec& spec) {
  if (spec.is_mutable) return Role::Mutable;
  if (spec.is_input) return Role::Input;
  if (spec.is_output) return Role::Output;
  if (spec.is_constant) return Role::Constant;
  return Role::Intermediate;
}

std::string sanitizeUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      out.push_back((c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c));
      ++i;
      continue;
    }
    // Length and minimum code point of the sequence (rejects overlongs,
    // surrogates and values above U+10FFFF).
    std::size_t len = 0;
    char32_t cp = 0, min = 0;
    if ((c & 0xe0) == 0xc0) { len = 2; cp = c & 0x1f; min = 0x80; }
    else if ((c & 0xf0) == 0xe0) { len = 3; cp = c & 0x0f; min = 0x800; }
    else if ((c & 0xf8) == 0xf0) { len = 4; cp = c & 0x07; min = 0x10000; }
    bool ok = len != 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) {
      if ((s[i + k] & 0xc0) != 0x80) ok = false;
      else cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if (ok && (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))) ok = false;
    if (!ok) {
      out += "\xef\xbf\xbd";
      ++i;
      continue;
    }
    out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

std::string xmlEscape(std::string_view text) {
  const std::string clean = sanitizeUtf8(text);
  std::string out;
  out.reserve(clean.size());
  for (std::size_t i = 0; i < clean.size(); ++i) {
    const char c = clean[i];
    // U+FFFE and U+FFFF are valid UTF-8 but no XML character (XML 1.0,
    // production Char): a parser stops at them.
    if (clean.compare(i, 2, "\xef\xbf") == 0 && i + 2 < clean.size() &&
        (clean[i + 2] == '\xbe' || clean[i + 2] == '\xbf')) {
      out += "\xef\xbf\xbd";
      i += 2;
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

const Graph* modelGraph(const Model* model, GraphId graph) {
  if (!model || graph < 0 || static_cast<std::size_t>(graph) >= model->graphs.size())
    return nullptr;
  return &model->graphs[static_cast<std::size_t>(graph)];
}

const Spec* allocSpec(const GraphPlan& plan, const Allocation& alloc) {
  if (alloc.spec < 0 || static_cast<std::size_t>(alloc.spec) >= plan.specs.specs.size())
    return nullptr;
  return &plan.specs.specs[static_cast<std::size_t>(alloc.spec)];
}

std::string graphLabel(const Model* model, GraphId graph) {
  // The main graph is "main" whatever the file calls it (converters name it
  // after themselves); bodies keep their names, cut to fit a table column.
  if (graph == 0) return "main";
  const Graph* g = modelGraph(model, graph);
  if (!g || g->name.empty()) return fmt::format("graph {}", graph);
  constexpr std::size_t kMax = 40;
  if (g->name.size() <= kMax) return g->name;
  std::size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(g->name[cut]) & 0xc0) == 0x80) --cut;
  return g->name.substr(0, cut) + "...";
}

StepInfo stepInfo(const Model* model, GraphId graph, TimeValue step) {
  const Graph* g = modelGraph(model, graph);
  if (!g || step < 0) return {};
  const auto inputs = static_cast<TimeValue>(g->inputs.size());
  if (step < inputs) {
    const TensorId t = g->inputs[static_cast<std::size_t>(step)];
    std::string name;
    if (t >= 0 && static_cast<std::size_t>(t) < model->tensors.size())
      name = model->tensors[static_cast<std::size_t>(t)].name;
    return {name, "input"};
  }
  const TimeValue n = step - inputs;
  if (n < static_cast<TimeValue>(g->nodes.size())) {
    const Node& node = g->nodes[static_cast<std::size_t>(n)];
    return {node.name, node.op};
  }
  return {"output", "output"};
}

ProducerOps producerOps(const Model* model, GraphId graph) {
  ProducerOps ops;
  const Graph* g = modelGraph(model, graph);
  if (!g) return ops;
  for (TensorId t : g->inputs) ops.emplace(t, "input");  // the first producer wins
  for (const Node& node : g->nodes)
    for (TensorId t : node.outputs) ops.emplace(t, node.op);
  return ops;
}

namespace {
std::string shapeText(const std::vector<std::int64_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s.push_back('x');
    s += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  return s;
}
}  // namespace

ReportTensor describe(const GraphPlan& plan, const Allocation& alloc, const Model* model,
                      const ProducerOps& producers) {
  ReportTensor r;
  r.spec = alloc.spec;
  r.bytes = alloc.size;
  r.offset = alloc.offset;
  r.op = "-";
  const Spec* spec = allocSpec(plan, alloc);
  if (!spec) {
    r.name = fmt::format("spec {}", alloc.spec);
    return r;
  }
  r.name = spec->name;
  r.first = spec->first;
  r.last = spec->last;
  const TensorId t = spec->tensor;
  if (model && t >= 0 && static_cast<std::size_t>(t) < model->tensors.size()) {
    const Tensor& tensor = model->tensors[static_cast<std::size_t>(t)];
    if (r.name.empty()) r.name = tensor.name;
    r.shape = shapeText(tensor.shape);
    r.dims = tensor.shape;
    r.has_shape = true;
    r.dtype = std::string(dtypeName(tensor.dtype));
    const auto made = producers.find(t);
    if (made != producers.end() && !made->second.empty())
      r.op = made->second;
    else if (tensor.kind == TensorKind::Constant)
      r.op = "constant";
  }
  if (r.name.empty()) r.name = fmt::format("spec {}", alloc.spec);
  return r;
}

std::vector<std::pair<TimeValue, Bytes>> liveCurve(const GraphPlan& plan, MemId mem_id) {
  // Sweep over +size at `first` and -size after `last` (closed lifetimes).
  // Unsigned wrap-around arithmetic keeps the running sum exact whenever the
  // true value fits, whatever order equal-step events come in.
  // A spec with gaps counts the bytes of each piece (verify/pieces.h).
  std::vector<std::pair<TimeValue, Bytes>> events;
  std::vector<piece::Piece> pieces;
  for (const Allocation& a : plan.allocations) {
    if (a.mem_id != mem_id) continue;
    const Spec* spec = allocSpec(plan, a);
    if (!spec || spec->last < spec->first) continue;
    piece::piecesOf(*spec, a.size, pieces);
    for (const piece::Piece& p : pieces) {
      events.emplace_back(p.first, p.end - p.begin);
      events.emplace_back(p.last + 1, Bytes{0} - (p.end - p.begin));
    }
  }
  std::sort(events.begin(), events.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::pair<TimeValue, Bytes>> curve;
  Bytes live = 0;
  for (std::size_t i = 0; i < events.size();) {
    const TimeValue t = events[i].first;
    for (; i < events.size() && events[i].first == t; ++i) live += events[i].second;
    if (curve.empty() || curve.back().second != live) curve.emplace_back(t, live);
  }
  return curve;
}

Peak peakOf(const std::vector<std::pair<TimeValue, Bytes>>& curve) {
  Peak peak;
  for (const auto& [step, live] : curve)
    if (live > peak.live) peak = {step, live};
  return peak;
}

std::vector<TimeValue> constantSteps(const Model* model, GraphId graph) {
  std::vector<TimeValue> steps;
  const Graph* g = modelGraph(model, graph);
  if (!g) return steps;
  for (std::size_t n = 0; n < g->nodes.size(); ++n) {
    const Node& node = g->nodes[n];
    if (node.outputs.empty() || !node.subgraphs.empty()) continue;
    const bool constants = std::all_of(node.outputs.begin(), node.outputs.end(), [&](TensorId t) {
      return t >= 0 && static_cast<std::size_t>(t) < model->tensors.size() &&
             model->tensors[static_cast<std::size_t>(t)].kind == TensorKind::Constant;
    });
    if (constants) steps.push_back(nodeTime(*g, static_cast<NodeId>(n)));
  }
  return steps;
}

}  // namespace memplan::exportutil

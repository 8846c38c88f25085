#include "import/onnx/opset_compat.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <limits>
#include <set>
#include <string_view>

namespace memplan::onnx_import {

namespace {

// Reduce* and Split take their new signatures from this opset on.
constexpr int kNewerRuleOpset = 18;

bool isReduceWithAxesInput(const std::string& op) {
  static const std::set<std::string> kOps = {
      "ReduceL1",  "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
      "ReduceMean", "ReduceMin", "ReduceProd",  "ReduceSumSquare"};
  return kOps.count(op) > 0;
}

// Ops added after opset 17 whose output has the shape and type of input 0.
struct SameShapeOp {
  const char* op;
  int since;          // opset that added the op
  int min_inputs, max_inputs;
  const char* attrs;  // "name:TYPE,..." allowed attributes
  const char* form;   // for the error text
};
constexpr SameShapeOp kSameShapeOps[] = {
    {"Mish", 18, 1, 1, "", "must have one input, one output and no attributes"},
    {"BitwiseNot", 18, 1, 1, "", "must have one input, one output and no attributes"},
    {"GroupNormalization", 18, 3, 3, "epsilon:FLOAT,num_groups:INT,stash_type:INT",
     "must have inputs (X, scale, bias), one output and attributes epsilon, num_groups, "
     "stash_type"},
    {"Gelu", 20, 1, 1, "approximate:STRING",
     "must have one input, one output and a STRING attribute approximate"},
};

const SameShapeOp* sameShapeOp(const ox::NodeProto& n, int opset) {
  for (const auto& op : kSameShapeOps)
    if (n.op_type() == op.op && opset >= op.since) return &op;
  return nullptr;
}

// Every attribute of `n` is one of `allowed` ("name:TYPE,..."), with that type.
bool attrsAllowed(const ox::NodeProto& n, std::string_view allowed) {
  for (const auto& a : n.attribute()) {
    const std::string entry =
        a.name() + ":" + ox::AttributeProto::AttributeType_Name(a.type());
    bool ok = false;
    for (std::size_t pos = 0; pos <= allowed.size() && !ok;) {
      const auto end = std::min(allowed.find(',', pos), allowed.size());
      ok = allowed.substr(pos, end - pos) == entry;
      pos = end + 1;
    }
    if (!ok) return false;
  }
  return true;
}

// Why a default-domain node of an opset newer than the library cannot be
// taken; nullptr when it can (as far as this check goes).
const char* newerOpProblem(const ox::NodeProto& n, int opset) {
  if (opset >= 20 && n.op_type() == "DFT")
    return "takes 'axis' as an input with a new default; memplan's ONNX library knows this op "
           "only up to opset 17, whose shape rule differs";
  if (!newerOpRule(n, opset)) return nullptr;
  if (const SameShapeOp* op = sameShapeOp(n, opset)) {
    if (n.input_size() < op->min_inputs || n.input_size() > op->max_inputs ||
        n.output_size() != 1 || !attrsAllowed(n, op->attrs))
      return op->form;
    return nullptr;
  }
  if (n.op_type() == "Split") {
    if (n.input_size() < 1 || n.input_size() > 2 || n.output_size() < 1 ||
        !attrsAllowed(n, "axis:INT,num_outputs:INT"))
      return "must have inputs (input, split?), outputs and INT attributes axis, num_outputs";
    if (n.input_size() == 2 && !n.input(1).empty() && attrOf(n, "num_outputs"))
      return "sets both the 'split' input and 'num_outputs'";
    return nullptr;
  }
  if (n.input_size() < 1 || n.input_size() > 2 || n.output_size() != 1 ||
      !attrsAllowed(n, "keepdims:INT,noop_with_empty_axes:INT"))
    return "takes 'axes' as an input: it must have inputs (data, axes?), one output and INT "
           "attributes keepdims, noop_with_empty_axes";
  return nullptr;
}

// Attributes added after opset 17 that leave the output shape as the older
// version computes it: a node using them is checked without them.
bool shapeNeutralNewAttr(const ox::NodeProto& n, const ox::AttributeProto& a, int opset) {
  const std::string& op = n.op_type();
  if (op == "Resize" && opset >= 18) {
    if (a.name() == "antialias") return a.type() == ox::AttributeProto::INT;
    if (a.name() == "keep_aspect_ratio_policy")  // the default keeps the old rule
      return a.type() == ox::AttributeProto::STRING && a.s() == "stretch";
  }
  if ((op == "Cast" || op == "CastLike" || op == "QuantizeLinear") && opset >= 19)
    return a.name() == "saturate" && a.type() == ox::AttributeProto::INT;
  return false;
}

// What changed in an op after the library's version, for the error text
// ("" when memplan does not know).
std::string changeHint(const std::string& op) {
  if (op == "Pad") return "takes 'axes' as an input";
  if (op == "Resize") return "takes new attributes (antialias, axes, keep_aspect_ratio_policy)";
  if (op == "Cast" || op == "CastLike" || op == "QuantizeLinear")
    return "takes new attributes (saturate, output_dtype, block_size)";
  if (op == "DequantizeLinear") return "takes a new attribute (block_size)";
  if (op == "AveragePool" || op == "LpPool") return "takes new attributes (ceil_mode, dilations)";
  return "";
}

}  // namespace

std::string readOpsets(const ox::ModelProto& model, Opsets& out) {
  const auto& known = ox::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const auto& imp : model.opset_import()) {
    const std::string domain = isDefaultDomain(imp.domain()) ? "" : imp.domain();
    if (imp.version() < 1 || imp.version() > std::numeric_limits<int>::max())
      return "opset_import '" + imp.domain() + "': invalid version " +
             std::to_string(imp.version());
    out.model[domain] = static_cast<int>(imp.version());
    // A newer opset runs with the newest schemas the library has (the
    // registry resolves the latest version <= the opset); checkNode() then
    // refuses the nodes whose signature changed since.
    auto it = known.find(domain);
    if (it != known.end() && imp.version() > it->second.second)
      out.library_max[domain] = it->second.second;
  }
  return "";
}

std::string checkNode(const ox::NodeProto& n, const std::string& label, const std::string& domain,
                      int opset, const Opsets& opsets) {
  const std::string where = "node '" + label + "' (" + opName(n) + ")";
  const auto newer = opsets.library_max.find(domain);
  const bool beyond = newer != opsets.library_max.end();
  const std::string at = "op " + n.op_type() + " at opset " + std::to_string(opset);
  if (beyond && domain.empty()) {
    if (const char* why = newerOpProblem(n, opset)) return where + ": " + at + " " + why;
    if (newerOpRule(n, opset)) return "";  // checked above, sized by ShapeFolder
  }
  const auto* schema = ox::OpSchemaRegistry::Schema(n.op_type(), opset, domain);
  if (!schema) {
    if (beyond)
      return where + ": " + at + " is newer than memplan's ONNX library, which knows " +
             (domain.empty() ? "ai.onnx" : domain) + " only up to opset " +
             std::to_string(newer->second);
    if (domain.empty())
      return "node '" + label + "': unknown operator " + n.op_type() + " in opset " +
             std::to_string(opset);
    return "";  // a custom domain: the runtime's business
  }
  try {
    if (beyond && domain.empty() &&
        std::any_of(n.attribute().begin(), n.attribute().end(),
                    [&](const auto& a) { return shapeNeutralNewAttr(n, a, opset); })) {
      ox::NodeProto older = n;
      older.clear_attribute();
      for (const auto& a : n.attribute())
        if (!shapeNeutralNewAttr(n, a, opset)) *older.add_attribute() = a;
      schema->Verify(older);
    } else {
      schema->Verify(n);
    }
  } catch (const std::exception& e) {
    if (!beyond) return where + ": " + firstLine(e.what());
    // The op may have changed after the version the library knows.
    const std::string known = std::to_string(schema->since_version());
    const std::string hint = domain.empty() ? changeHint(n.op_type()) : "";
    return where + ": " + at + " " +
           (hint.empty() ? "does not match opset " + known +
                               ", the newest version of this op memplan's ONNX library knows"
                         : hint + "; memplan's ONNX library knows this op only up to opset " +
                               known) +
           ": " + firstLine(e.what());
  }
  return "";
}

bool newerOpRule(const ox::NodeProto& n, int opset) {
  return (opset >= kNewerRuleOpset &&
          (isReduceWithAxesInput(n.op_type()) || n.op_type() == "Split")) ||
         sameShapeOp(n, opset) != nullptr;
}

void markNewerRules(ox::GraphProto* g, int opset, int depth) {
  if (depth > kMaxGraphDepth) return;
  for (auto& n : *g->mutable_node()) {
    if (isDefaultDomain(n.domain()) && newerOpRule(n, opset)) n.set_domain(kNewerRuleDomain);
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) markNewerRules(a.mutable_g(), opset, depth + 1);
      for (auto& sub : *a.mutable_graphs()) markNewerRules(&sub, opset, depth + 1);
    }
  }
}

bool newerOpReadsInput1(const ox::NodeProto& n) {
  return n.op_type() == "Split" || isReduceWithAxesInput(n.op_type());
}

std::optional<std::vector<std::vector<std::int64_t>>> newerOpShapes(
    const ox::NodeProto& n, const std::vector<std::int64_t>& x, const IntTensor* arg) {
  const std::size_t r = x.size();
  std::vector<std::vector<std::int64_t>> outs;
  if (!newerOpReadsInput1(n)) {
    outs.push_back(x);  // kSameShapeOps
    return outs;
  }
  if (n.op_type() == "Split") {
    const auto axis = axisOf(attrInt(n, "axis", 0), r);
    if (!axis) return std::nullopt;
    const std::int64_t d = x[*axis];
    const auto k = static_cast<std::int64_t>(n.output_size());
    if (k < 1) return std::nullopt;  // only a model using kNewerRuleDomain itself
    std::vector<std::int64_t> sizes;
    if (arg) {
      __int128 sum = 0;
      for (auto v : arg->v) {
        if (v < 0) return std::nullopt;
        sum += v;
      }
      if (arg->dims.size() != 1 || static_cast<std::int64_t>(arg->v.size()) != k || sum != d)
        return std::nullopt;
      sizes = arg->v;
    } else if (const auto* a = attrOf(n, "num_outputs")) {
      // Chunks of ceil(d / k); the last one is smaller when k does not divide d.
      if (a->i() != k) return std::nullopt;
      const std::int64_t chunk = d / k + (d % k != 0);
      const __int128 last = static_cast<__int128>(d) - static_cast<__int128>(chunk) * (k - 1);
      if (last < 0) return std::nullopt;
      sizes.assign(static_cast<std::size_t>(k - 1), chunk);
      sizes.push_back(static_cast<std::int64_t>(last));
    } else {
      if (d % k) return std::nullopt;
      sizes.assign(static_cast<std::size_t>(k), d / k);
    }
    for (auto size : sizes) {
      outs.push_back(x);
      outs.back()[*axis] = size;
    }
    return outs;
  }
  // Reduce*: empty or absent axes mean all axes, or none with
  // noop_with_empty_axes.
  std::vector<bool> reduce(r, attrInt(n, "noop_with_empty_axes", 0) == 0);
  if (arg && !arg->v.empty()) {
    if (arg->dims.size() > 1) return std::nullopt;
    reduce.assign(r, false);
    for (auto a : arg->v) {
      const auto ax = axisOf(a, r);
      if (!ax || reduce[*ax]) return std::nullopt;
      reduce[*ax] = true;
    }
  }
  const bool keep = attrInt(n, "keepdims", 1) != 0;
  std::vector<std::int64_t> out;
  for (std::size_t k = 0; k < r; ++k)
    if (!reduce[k]) out.push_back(x[k]);
    else if (keep) out.push_back(1);
  outs.push_back(std::move(out));
  return outs;
}

}  // namespace memplan::onnx_import

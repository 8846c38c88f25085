#include "import/onnx/shape_folder.h"

#include "import/onnx/opset_compat.h"

namespace memplan::onnx_import {

namespace {

// Gives `name` (an output of a node in `g`) the type `t` as value_info,
// unless a type with a complete shape is already known. Returns 1 when it did.
std::size_t giveType(ox::GraphProto* g, FoldScope& scope, const std::string& name,
                     const ox::TypeProto& t) {
  const auto* have = scope.type(name);
  if (have && have->has_tensor_type() && shapeOf(have->tensor_type()).complete()) return 0;
  ox::ValueInfoProto* vi = nullptr;
  for (auto& cand : *g->mutable_value_info())
    if (cand.name() == name) vi = &cand;
  if (!vi) {
    vi = g->add_value_info();
    vi->set_name(name);
  }
  *vi->mutable_type() = t;
  scope.types[name] = &vi->type();
  return 1;
}

// Replaces `n` (in the scratch copy) by a Constant node holding `value`.
void makeConstant(ox::NodeProto& n, const IntTensor& value) {
  const std::string out = n.output(0);
  const std::string name = n.name();
  n.Clear();
  n.set_name(name);
  n.set_op_type("Constant");
  n.add_output(out);
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(ox::AttributeProto::TENSOR);
  *a->mutable_t() = toProto(value);
}

}  // namespace

std::size_t ShapeFolder::fold(ox::GraphProto* g, const FoldScope* outer, int depth) {
  if (depth > kMaxGraphDepth) return 0;
  FoldScope scope;
  scope.outer = outer;
  for (const auto* list : {&g->input(), &g->value_info(), &g->output()})
    for (const auto& vi : *list)
      if (vi.has_type()) scope.types.emplace(vi.name(), &vi.type());
  for (const auto& init : g->initializer()) {
    scope.types.emplace(init.name(), nullptr);
    if (auto t = fromProto(init)) remember(scope, init.name(), std::move(*t));
  }
  std::size_t changed = 0;
  for (auto& n : *g->mutable_node()) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) changed += fold(a.mutable_g(), &scope, depth + 1);
      for (auto& sub : *a.mutable_graphs()) changed += fold(&sub, &scope, depth + 1);
    }
    if (isDefaultDomain(n.domain()) && n.op_type() == "If") changed += selectBranch(g, n, scope);
    for (const auto& o : n.output()) scope.types.emplace(o, nullptr);
    if (n.domain() == kNewerRuleDomain) {
      changed += newerOpTypes(g, n, scope);
      continue;
    }
    if (!isDefaultDomain(n.domain()) || n.output_size() != 1 || n.output(0).empty()) continue;
    if (n.op_type() == "Constant") {
      std::optional<IntTensor> t;
      if (const auto* a = attrOf(n, "value"); a && a->has_t()) t = fromProto(a->t());
      if (const auto* a = attrOf(n, "value_int")) t = IntTensor{7, {}, {a->i()}};
      if (const auto* a = attrOf(n, "value_ints"); a && a->ints_size() <= int(kMaxFoldElements))
        t = IntTensor{7, {a->ints_size()}, {a->ints().begin(), a->ints().end()}};
      if (t) remember(scope, n.output(0), std::move(*t));
      continue;
    }
    const FoldRule rule = foldRule(n.op_type());
    if (!rule) continue;
    std::optional<IntTensor> r;
    try {
      r = foldNode(rule, n, scope);
    } catch (...) {
      r.reset();  // a malformed node is simply not folded
    }
    if (!r || !remember(scope, n.output(0), *r)) continue;
    makeConstant(n, *r);  // the scratch copy gets a Constant node in its place
    ++changed;
  }
  return changed;
}

bool ShapeFolder::remember(FoldScope& scope, const std::string& name, IntTensor t) {
  if (budget_ < t.v.size()) return false;
  budget_ -= t.v.size();
  scope.values[name] = std::move(t);
  return true;
}

// An If whose condition is known yields its live branch's outputs. ONNX
// merges both branches and loses the shape when they differ (PyTorch's
// "squeeze if the dim is 1" pattern), so the live branch's output types are
// given to the parent as value_info for the next round.
std::size_t ShapeFolder::selectBranch(ox::GraphProto* g, const ox::NodeProto& n,
                                      FoldScope& scope) {
  if (n.input_size() < 1) return 0;
  const IntTensor* cond = scope.value(n.input(0));
  if (!cond || cond->v.size() != 1) return 0;
  const auto* live = attrOf(n, cond->v[0] ? "then_branch" : "else_branch");
  if (const auto* other = attrOf(n, cond->v[0] ? "else_branch" : "then_branch");
      other && other->has_g())
    dead.insert(&other->g());
  if (!live || !live->has_g() || live->g().output_size() != n.output_size()) return 0;
  std::size_t added = 0;
  const ox::GraphProto& body = live->g();
  for (int k = 0; k < n.output_size(); ++k) {
    // The body's declared output, else what inference recorded for that
    // name inside the body, else an outer value the body passes through.
    const std::string& inner = body.output(k).name();
    const ox::TypeProto* bt = &body.output(k).type();
    for (const auto& vi : body.value_info())
      if (!completeTensorType(bt) && vi.name() == inner) bt = &vi.type();
    if (!completeTensorType(bt)) bt = scope.type(inner);
    if (n.output(k).empty() || !completeTensorType(bt)) continue;
    added += giveType(g, scope, n.output(k), *bt);
  }
  return added;
}

// Output types of a node sized by memplan's own opset rule. Nothing when any
// input that decides the shape is unknown, or the node is invalid: the
// outputs stay unsized.
std::size_t ShapeFolder::newerOpTypes(ox::GraphProto* g, const ox::NodeProto& n,
                                      FoldScope& scope) {
  if (n.input_size() < 1) return 0;
  const auto* xt = scope.type(n.input(0));
  if (!xt || !xt->has_tensor_type() || xt->tensor_type().elem_type() == 0) return 0;
  const auto xs = scope.knownShape(n.input(0));
  if (!xs) return 0;
  const IntTensor* arg = nullptr;  // axes (Reduce) or split sizes (Split)
  if (newerOpReadsInput1(n) && n.input_size() > 1 && !n.input(1).empty()) {
    arg = scope.value(n.input(1));
    if (!arg) return 0;  // computed at run time
  }
  const auto outs = newerOpShapes(n, *xs, arg);
  if (!outs || outs->size() != static_cast<std::size_t>(n.output_size())) return 0;
  std::size_t added = 0;
  for (int k = 0; k < n.output_size(); ++k) {
    if (n.output(k).empty()) continue;
    ox::TypeProto t;
    auto* tt = t.mutable_tensor_type();
    tt->set_elem_type(xt->tensor_type().elem_type());
    auto* shape = tt->mutable_shape();
    for (auto d : (*outs)[static_cast<std::size_t>(k)]) shape->add_dim()->set_dim_value(d);
    added += giveType(g, scope, n.output(k), t);
  }
  return added;
}

}  // namespace memplan::onnx_import

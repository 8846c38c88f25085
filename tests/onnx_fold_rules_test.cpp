// ONNX shape folding, rule by rule: each op's rule on hand-made integer
// tensors with exact expected values, the refusals (unknown inputs, bad
// indices, division by zero), the op table itself, the integer tensors'
// protobuf encodings and the opset-18 shape rules.
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "import/onnx/fold_rules.h"
#include "import/onnx/int_tensor.h"
#include "import/onnx/opset_compat.h"
#include "memplan/import.h"

namespace memplan::onnx_import {
namespace {

using Ints = std::vector<std::int64_t>;

IntTensor i64(Ints dims, Ints v) { return IntTensor{7, std::move(dims), std::move(v)}; }

// A node and the values in scope; fold() runs the node's rule.
struct Case {
  ox::NodeProto node;
  FoldScope scope;
  std::vector<ox::TypeProto> types;  // owned here; scope.types points into it

  explicit Case(const std::string& op, const std::vector<std::string>& inputs = {}) {
    node.set_op_type(op);
    for (const auto& name : inputs) node.add_input(name);
    node.add_output("out");
    types.reserve(8);
  }
  Case& value(const std::string& name, IntTensor t) {
    scope.values[name] = std::move(t);
    scope.types[name] = nullptr;
    return *this;
  }
  Case& shape(const std::string& name, const Ints& dims) {
    ox::TypeProto t;
    t.mutable_tensor_type()->set_elem_type(1);
    for (auto d : dims) t.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    types.push_back(std::move(t));
    scope.types[name] = &types.back();
    return *this;
  }
  Case& attr(const std::string& name, std::int64_t v) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(ox::AttributeProto::INT);
    a->set_i(v);
    return *this;
  }
  Case& ints(const std::string& name, const Ints& v) {
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(ox::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
    return *this;
  }
  std::optional<IntTensor> fold() const {
    const FoldRule rule = foldRule(node.op_type());
    if (!rule) throw std::runtime_error("no rule for " + node.op_type());
    return foldNode(rule, node, scope);
  }
};

void expectTensor(const std::optional<IntTensor>& t, int elem, const Ints& dims, const Ints& v) {
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->elem, elem);
  EXPECT_EQ(t->dims, dims);
  EXPECT_EQ(t->v, v);
}

TEST(OnnxFoldRules, TableFindsEachFoldedOpAndNothingElse) {
  for (const char* op :
       {"Abs", "Add", "And", "Cast", "Concat", "ConstantOfShape", "Div", "Equal", "Flatten",
        "Gather", "Greater", "GreaterOrEqual", "Identity", "Less", "LessOrEqual", "Max", "Min",
        "Mul", "Neg", "Not", "Or", "Range", "Reshape", "Shape", "Size", "Slice", "Squeeze", "Sub",
        "Transpose", "Unsqueeze", "Where"})
    EXPECT_NE(foldRule(op), nullptr) << op;
  for (const char* op : {"", "Conv", "Constant", "If", "add", "Abs ", "Wher", "Zzz", "A"})
    EXPECT_EQ(foldRule(op), nullptr) << op;
}

TEST(OnnxFoldRules, ShapeAndSizeReadInferredShapes) {
  expectTensor(Case("Shape", {"x"}).shape("x", {2, 3, 5}).fold(), 7, {3}, {2, 3, 5});
  expectTensor(Case("Shape", {"x"}).shape("x", {2, 3, 5}).attr("start", -2).fold(), 7, {2},
               {3, 5});
  expectTensor(Case("Shape", {"x"}).shape("x", {2, 3, 5}).attr("start", 1).attr("end", 1).fold(),
               7, {0}, {});
  expectTensor(Case("Size", {"x"}).shape("x", {2, 3, 5}).fold(), 7, {}, {30});
  EXPECT_FALSE(Case("Shape", {"x"}).fold());  // shape not inferred
  Case partial("Shape", {"x"});
  partial.shape("x", {2, 3});
  partial.types.back().mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_param("N");
  EXPECT_FALSE(partial.fold());
}

TEST(OnnxFoldRules, ConstantOfShapeAndRange) {
  Case c("ConstantOfShape", {"dims"});
  c.value("dims", i64({2}, {2, 2}));
  auto* v = c.node.add_attribute();
  v->set_name("value");
  v->set_type(ox::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(6);  // int32
  v->mutable_t()->add_dims(1);
  v->mutable_t()->add_int32_data(7);
  expectTensor(c.fold(), 6, {2, 2}, {7, 7, 7, 7});
  // The default fill is float 0: not an integer tensor.
  EXPECT_FALSE(Case("ConstantOfShape", {"dims"}).value("dims", i64({1}, {3})).fold());

  auto range = [](std::int64_t start, std::int64_t limit, std::int64_t delta) {
    return Case("Range", {"a", "b", "c"})
        .value("a", i64({}, {start}))
        .value("b", i64({}, {limit}))
        .value("c", i64({}, {delta}))
        .fold();
  };
  expectTensor(range(1, 10, 3), 7, {3}, {1, 4, 7});
  expectTensor(range(5, 0, -2), 7, {3}, {5, 3, 1});
  expectTensor(range(0, 5, -1), 7, {0}, {});
  EXPECT_FALSE(range(0, 5, 0));
  EXPECT_FALSE(range(0, 1'000'000, 1));  // more than kMaxFoldElements
}

TEST(OnnxFoldRules, UnaryOpsWrapToTheirType) {
  IntTensor i32{6, {3}, {std::numeric_limits<std::int32_t>::min(), -5, 4}};
  expectTensor(Case("Neg", {"x"}).value("x", i32).fold(), 6, {3},
               {std::numeric_limits<std::int32_t>::min(), 5, -4});
  expectTensor(Case("Abs", {"x"}).value("x", i32).fold(), 6, {3},
               {std::numeric_limits<std::int32_t>::min(), 5, 4});
  expectTensor(Case("Not", {"x"}).value("x", IntTensor{9, {2}, {0, 1}}).fold(), 9, {2}, {1, 0});
  expectTensor(Case("Cast", {"x"}).value("x", i64({2}, {200, -1})).attr("to", 3).fold(), 3, {2},
               {-56, -1});  // int8
  expectTensor(Case("Cast", {"x"}).value("x", i64({1}, {-1})).attr("to", 2).fold(), 2, {1},
               {255});  // uint8
  EXPECT_FALSE(Case("Cast", {"x"}).value("x", i64({1}, {1})).attr("to", 1).fold());  // float
  expectTensor(Case("Identity", {"x"}).value("x", i64({2}, {8, 9})).fold(), 7, {2}, {8, 9});
  EXPECT_FALSE(Case("Identity", {"x"}).fold());  // input unknown
}

TEST(OnnxFoldRules, ElementwiseOpsBroadcast) {
  auto binary = [](const std::string& op, IntTensor a, IntTensor b) {
    return Case(op, {"a", "b"}).value("a", std::move(a)).value("b", std::move(b)).fold();
  };
  expectTensor(binary("Add", i64({2, 1}, {10, 20}), i64({3}, {1, 2, 3})), 7, {2, 3},
               {11, 12, 13, 21, 22, 23});
  expectTensor(binary("Sub", i64({}, {5}), i64({2}, {1, 7})), 7, {2}, {4, -2});
  expectTensor(binary("Mul", i64({2}, {3, -4}), i64({1}, {6})), 7, {2}, {18, -24});
  expectTensor(binary("Div", i64({3}, {7, -7, 6}), i64({}, {2})), 7, {3}, {3, -3, 3});
  EXPECT_FALSE(binary("Div", i64({2}, {1, 2}), i64({2}, {1, 0})));
  EXPECT_FALSE(binary("Div", i64({}, {std::numeric_limits<std::int64_t>::min()}), i64({}, {-1})));
  expectTensor(binary("Max", i64({2}, {1, 9}), i64({2}, {5, 5})), 7, {2}, {5, 9});
  expectTensor(binary("Min", i64({2}, {1, 9}), i64({2}, {5, 5})), 7, {2}, {1, 5});
  // Comparisons and logic give bool.
  expectTensor(binary("Equal", i64({3}, {1, 2, 3}), i64({}, {2})), 9, {3}, {0, 1, 0});
  expectTensor(binary("Less", i64({2}, {1, 3}), i64({}, {2})), 9, {2}, {1, 0});
  expectTensor(binary("GreaterOrEqual", i64({2}, {1, 2}), i64({}, {2})), 9, {2}, {0, 1});
  expectTensor(binary("Or", IntTensor{9, {2}, {0, 1}}, IntTensor{9, {}, {0}}), 9, {2}, {0, 1});
  // int32 arithmetic wraps at 32 bits.
  expectTensor(binary("Add", IntTensor{6, {}, {std::numeric_limits<std::int32_t>::max()}},
                      IntTensor{6, {}, {1}}),
               6, {}, {std::numeric_limits<std::int32_t>::min()});
  EXPECT_FALSE(binary("Add", i64({2}, {1, 2}), i64({3}, {1, 2, 3})));  // not broadcastable
  EXPECT_FALSE(Case("Add", {"a", "b"}).value("a", i64({}, {1})).fold());  // b unknown

  Case where("Where", {"c", "a", "b"});
  where.value("c", IntTensor{9, {3}, {1, 0, 1}})
      .value("a", IntTensor{6, {3}, {1, 2, 3}})
      .value("b", IntTensor{6, {}, {-1}});
  expectTensor(where.fold(), 6, {3}, {1, -1, 3});  // the type of the values
  Case max3("Max", {"a", "b", "c"});
  max3.value("a", i64({}, {1})).value("b", i64({}, {2})).value("c", i64({}, {3}));
  EXPECT_FALSE(max3.fold());  // Max folds two inputs only
}

TEST(OnnxFoldRules, ReshapeFlattenSqueezeUnsqueeze) {
  const IntTensor x = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  expectTensor(Case("Reshape", {"x", "s"}).value("x", x).value("s", i64({2}, {0, -1})).fold(), 7,
               {2, 3}, {1, 2, 3, 4, 5, 6});
  expectTensor(Case("Reshape", {"x", "s"}).value("x", x).value("s", i64({2}, {-1, 2})).fold(), 7,
               {3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_FALSE(Case("Reshape", {"x", "s"}).value("x", x).value("s", i64({2}, {-1, -1})).fold());
  EXPECT_FALSE(Case("Reshape", {"x", "s"}).value("x", x).value("s", i64({1}, {4})).fold());
  // allowzero: a 0 is a real zero-sized dim, which 6 elements cannot fill.
  EXPECT_FALSE(Case("Reshape", {"x", "s"})
                   .value("x", x)
                   .value("s", i64({2}, {0, -1}))
                   .attr("allowzero", 1)
                   .fold());

  expectTensor(Case("Flatten", {"x"}).value("x", i64({2, 1, 3}, {1, 2, 3, 4, 5, 6})).fold(), 7,
               {2, 3}, {1, 2, 3, 4, 5, 6});
  expectTensor(
      Case("Flatten", {"x"}).value("x", i64({2, 1, 3}, {1, 2, 3, 4, 5, 6})).attr("axis", 0).fold(),
      7, {1, 6}, {1, 2, 3, 4, 5, 6});

  expectTensor(Case("Unsqueeze", {"x", "axes"})
                   .value("x", i64({2}, {4, 5}))
                   .value("axes", i64({2}, {0, -1}))
                   .fold(),
               7, {1, 2, 1}, {4, 5});
  expectTensor(Case("Unsqueeze", {"x"}).value("x", i64({}, {4})).ints("axes", {0}).fold(), 7,
               {1}, {4});  // opset < 13: axes as an attribute
  EXPECT_FALSE(Case("Unsqueeze", {"x", "axes"}).value("x", i64({}, {4})).fold());  // axes unknown
  EXPECT_FALSE(Case("Unsqueeze", {"x", "axes"})
                   .value("x", i64({}, {4}))
                   .value("axes", i64({2}, {0, 0}))
                   .fold());
  expectTensor(Case("Squeeze", {"x"}).value("x", i64({1, 2, 1}, {4, 5})).fold(), 7, {2}, {4, 5});
  expectTensor(Case("Squeeze", {"x", "axes"})
                   .value("x", i64({1, 2, 1}, {4, 5}))
                   .value("axes", i64({1}, {-1}))
                   .fold(),
               7, {1, 2}, {4, 5});
  EXPECT_FALSE(Case("Squeeze", {"x", "axes"})
                   .value("x", i64({1, 2, 1}, {4, 5}))
                   .value("axes", i64({1}, {1}))
                   .fold());  // dim 1 is not 1
}

TEST(OnnxFoldRules, ConcatGatherSliceTranspose) {
  expectTensor(Case("Concat", {"a", "b"})
                   .value("a", i64({2, 1}, {1, 2}))
                   .value("b", i64({2, 2}, {10, 11, 20, 21}))
                   .attr("axis", 1)
                   .fold(),
               7, {2, 3}, {1, 10, 11, 2, 20, 21});
  expectTensor(Case("Concat", {"a", "b"})
                   .value("a", i64({1}, {1}))
                   .value("b", i64({2}, {2, 3}))
                   .fold(),
               7, {3}, {1, 2, 3});
  EXPECT_FALSE(Case("Concat", {"a", "b"})
                   .value("a", i64({1}, {1}))
                   .value("b", IntTensor{6, {1}, {2}})
                   .fold());  // element types differ

  const IntTensor m = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  expectTensor(Case("Gather", {"x", "i"}).value("x", m).value("i", i64({}, {-1})).fold(), 7, {3},
               {4, 5, 6});
  expectTensor(Case("Gather", {"x", "i"})
                   .value("x", m)
                   .value("i", i64({2, 2}, {0, 2, 2, 1}))
                   .attr("axis", 1)
                   .fold(),
               7, {2, 2, 2}, {1, 3, 3, 2, 4, 6, 6, 5});
  EXPECT_FALSE(Case("Gather", {"x", "i"}).value("x", m).value("i", i64({}, {2})).fold());

  auto slice = [&](Ints starts, Ints ends, Ints axes, Ints steps) {
    return Case("Slice", {"x", "s", "e", "a", "p"})
        .value("x", m)
        .value("s", i64({static_cast<std::int64_t>(starts.size())}, starts))
        .value("e", i64({static_cast<std::int64_t>(ends.size())}, ends))
        .value("a", i64({static_cast<std::int64_t>(axes.size())}, axes))
        .value("p", i64({static_cast<std::int64_t>(steps.size())}, steps))
        .fold();
  };
  expectTensor(slice({-1}, {std::numeric_limits<std::int64_t>::min()}, {1}, {-1}), 7, {2, 3},
               {3, 2, 1, 6, 5, 4});
  expectTensor(slice({0, 1}, {1, 100}, {0, 1}, {1, 1}), 7, {1, 2}, {2, 3});
  expectTensor(slice({0}, {3}, {1}, {2}), 7, {2, 2}, {1, 3, 4, 6});
  EXPECT_FALSE(slice({0}, {3}, {1}, {0}));  // step 0
  EXPECT_FALSE(slice({0}, {3}, {2}, {1}));  // axis out of range
  expectTensor(Case("Slice", {"x"})
                   .value("x", m)
                   .ints("starts", {1})
                   .ints("ends", {2})
                   .ints("axes", {0})
                   .fold(),
               7, {1, 3}, {4, 5, 6});  // opset < 10: attributes

  expectTensor(Case("Transpose", {"x"}).value("x", m).fold(), 7, {3, 2}, {1, 4, 2, 5, 3, 6});
  expectTensor(Case("Transpose", {"x"}).value("x", m).ints("perm", {0, 1}).fold(), 7, {2, 3},
               {1, 2, 3, 4, 5, 6});
  EXPECT_FALSE(Case("Transpose", {"x"}).value("x", m).ints("perm", {0, 0}).fold());
}

TEST(OnnxFoldRules, IntTensorsFromProto) {
  ox::TensorProto raw;
  raw.set_data_type(5);  // int16, little-endian raw bytes
  raw.add_dims(2);
  raw.set_raw_data(std::string("\xff\xff\x02\x01", 4));
  expectTensor(fromProto(raw), 5, {2}, {-1, 0x0102});
  raw.set_raw_data(std::string("\xff\xff\x02", 3));
  EXPECT_FALSE(fromProto(raw));  // size does not match the shape

  ox::TensorProto u64;
  u64.set_data_type(13);
  u64.add_uint64_data(std::numeric_limits<std::uint64_t>::max());
  const auto t = fromProto(u64);
  expectTensor(t, 13, {}, {-1});
  const ox::TensorProto back = toProto(*t);
  ASSERT_EQ(back.uint64_data_size(), 1);
  EXPECT_EQ(back.uint64_data(0), std::numeric_limits<std::uint64_t>::max());

  ox::TensorProto f;
  f.set_data_type(1);
  f.add_float_data(1.0f);
  EXPECT_FALSE(fromProto(f));  // not an integer type
  ox::TensorProto big;
  big.set_data_type(7);
  big.add_dims(static_cast<std::int64_t>(kMaxFoldElements) + 1);
  EXPECT_FALSE(fromProto(big));
}

TEST(OnnxFoldRules, Opset18ShapeRules) {
  ox::NodeProto split;
  split.set_op_type("Split");
  split.add_input("x");
  split.add_output("a");
  split.add_output("b");
  auto* axis = split.add_attribute();
  axis->set_name("axis");
  axis->set_type(ox::AttributeProto::INT);
  axis->set_i(1);
  auto* num = split.add_attribute();
  num->set_name("num_outputs");
  num->set_type(ox::AttributeProto::INT);
  num->set_i(2);
  auto outs = newerOpShapes(split, {4, 7}, nullptr);
  ASSERT_TRUE(outs);
  EXPECT_EQ(*outs, (std::vector<Ints>{{4, 4}, {4, 3}}));  // ceil(7 / 2), then the rest
  const IntTensor sizes = i64({2}, {5, 2});
  outs = newerOpShapes(split, {4, 7}, &sizes);
  ASSERT_TRUE(outs);
  EXPECT_EQ(*outs, (std::vector<Ints>{{4, 5}, {4, 2}}));
  // A Split without outputs (only a hand-made model has one) sizes nothing.
  split.clear_output();
  EXPECT_FALSE(newerOpShapes(split, {4, 7}, nullptr));
  split.clear_attribute();
  EXPECT_FALSE(newerOpShapes(split, {4, 7}, nullptr));

  ox::NodeProto reduce;
  reduce.set_op_type("ReduceMax");
  reduce.add_input("x");
  reduce.add_input("axes");
  reduce.add_output("y");
  const IntTensor axes = i64({1}, {-1});
  outs = newerOpShapes(reduce, {2, 3, 4}, &axes);
  ASSERT_TRUE(outs);
  EXPECT_EQ(*outs, (std::vector<Ints>{{2, 3, 1}}));
  outs = newerOpShapes(reduce, {2, 3, 4}, nullptr);  // all axes
  ASSERT_TRUE(outs);
  EXPECT_EQ(*outs, (std::vector<Ints>{{1, 1, 1}}));
  const IntTensor twice = i64({2}, {0, 0});
  EXPECT_FALSE(newerOpShapes(reduce, {2, 3, 4}, &twice));
}

// A model may itself use the domain memplan marks opset-18 nodes with; a
// Split there without outputs once divided by zero while folding.
TEST(OnnxFoldRules, ModelUsingTheMarkerDomainIsSafe) {
  ox::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* marker = m.add_opset_import();
  marker->set_domain(kNewerRuleDomain);
  marker->set_version(1);
  auto* g = m.mutable_graph();
  auto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  auto* shape = x->mutable_type()->mutable_tensor_type()->mutable_shape();
  for (int d : {4, 6}) shape->add_dim()->set_dim_value(d);
  auto* n = g->add_node();
  n->set_op_type("Split");
  n->set_domain(kNewerRuleDomain);
  n->add_input("x");
  auto* y = g->add_node();
  y->set_op_type("Relu");
  y->add_input("x");
  y->add_output("y");
  g->add_output()->set_name("y");
  const Model model = importOnnx(m.SerializeAsString(), "marker.onnx", {});
  ASSERT_EQ(model.tensors.size(), 2u);
  EXPECT_EQ(model.tensors[1].name, "y");
  EXPECT_EQ(model.tensors[1].nbytes, 96u);
}

}  // namespace
}  // namespace memplan::onnx_import

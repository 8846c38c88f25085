// Graph-level planning tests, mirroring ExecuTorch's own memory planning
// tests, plus the verifier on hand-made bad plans.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "memplan/plan.h"
#include "memplan/verify.h"

namespace memplan {
namespace {

// Builds small models tensor by tensor.
struct Builder {
  Model m;
  Builder() {
    m.name = "test";
    m.graphs.push_back({});
    m.graphs[0].name = "main";
  }
  TensorId tensor(const std::string& name, Bytes nbytes, GraphId g = 0) {
    Tensor t;
    t.name = name;
    t.nbytes = nbytes;
    t.dtype = DType::Float32;
    t.shape = {static_cast<std::int64_t>(nbytes / 4)};
    t.graph = g;
    m.tensors.push_back(t);
    return static_cast<TensorId>(m.tensors.size() - 1);
  }
  Tensor& at(TensorId t) { return m.tensors[t]; }
  void op(const std::string& name, std::vector<TensorId> in, std::vector<TensorId> out, GraphId g = 0) {
    Node n;
    n.name = name;
    n.op = name;
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    m.graphs[g].nodes.push_back(std::move(n));
  }
  GraphId body(GraphId parent, NodeId parent_node) {
    Graph g;
    g.name = "body" + std::to_string(m.graphs.size());
    g.parent = parent;
    g.parent_node = parent_node;
    m.graphs.push_back(g);
    return static_cast<GraphId>(m.graphs.size() - 1);
  }
};

PlanRequest request(const std::string& algorithm, Bytes alignment = 16) {
  PlanRequest r;
  r.algorithm = algorithm;
  r.options.alignment = alignment;
  return r;
}

// (mem_id, offset) of tensor t in the main graph plan.
std::pair<MemId, Offset> placeOf(const Plan& plan, TensorId t) {
  const GraphPlan& g = plan.main();
  const SpecId s = g.specs.tensor_spec.at(t);
  const Allocation* a = g.find(s);
  if (!a) return {-1, 0};
  return {a->mem_id, a->offset};
}

// b = a + a; c = a * b; d = c + b; e = c * d; return e — float[1] tensors,
// input and mul results in pool 1, add results in pool 3, alignment 1.
struct MultiplePools {
  Builder b;
  TensorId a, bb, c, d, e;
  MultiplePools() {
    a = b.tensor("a", 4);
    bb = b.tensor("b", 4);
    c = b.tensor("c", 4);
    d = b.tensor("d", 4);
    e = b.tensor("e", 4);
    for (TensorId t : {a, c, e}) b.at(t).mem_id = 1;
    for (TensorId t : {bb, d}) b.at(t).mem_id = 3;
    b.m.graphs[0].inputs = {a};
    b.op("add", {a, a}, {bb});
    b.op("mul", {a, bb}, {c});
    b.op("add", {c, bb}, {d});
    b.op("mul", {c, d}, {e});
    b.m.graphs[0].outputs = {e};
  }
};

TEST(Planner, MultiplePoolsNaive) {
  MultiplePools t;
  const Plan plan = planModel(t.b.m, request("naive", 1));
  EXPECT_EQ(plan.main().bufsizes, (std::vector<Bytes>{0, 12, 0, 8}));
  EXPECT_EQ(placeOf(plan, t.a), std::make_pair(1, Offset{0}));
  EXPECT_EQ(placeOf(plan, t.bb), std::make_pair(3, Offset{0}));
  EXPECT_EQ(placeOf(plan, t.c), std::make_pair(1, Offset{4}));
  EXPECT_EQ(placeOf(plan, t.d), std::make_pair(3, Offset{4}));
  EXPECT_EQ(placeOf(plan, t.e), std::make_pair(1, Offset{8}));
  EXPECT_TRUE(verifyPlan(plan).ok());
}

TEST(Planner, MultiplePoolsGreedy) {
  MultiplePools t;
  const Plan plan = planModel(t.b.m, request("greedy", 1));
  EXPECT_EQ(plan.main().bufsizes, (std::vector<Bytes>{0, 8, 0, 8}));
  // ExecuTorch's test compares the multiset of placements.
  std::map<std::pair<MemId, Offset>, int> placements;
  for (TensorId x : {t.a, t.bb, t.c, t.d, t.e}) ++placements[placeOf(plan, x)];
  const std::map<std::pair<MemId, Offset>, int> expected = {
      {{1, 0}, 2}, {{3, 0}, 1}, {{1, 4}, 1}, {{3, 4}, 1}};
  EXPECT_EQ(placements, expected);
  EXPECT_EQ(placeOf(plan, t.e), std::make_pair(1, Offset{0}));
  EXPECT_EQ(placeOf(plan, t.a), std::make_pair(1, Offset{0}));
  EXPECT_EQ(placeOf(plan, t.c), std::make_pair(1, Offset{4}));
  EXPECT_TRUE(verifyPlan(plan).ok());
}

TEST(Planner, LifetimesAreClosedNodeIndexIntervals) {
  MultiplePools t;
  const GraphSpecs specs = collectSpecs(t.b.m, 0, PlanOptions{});
  // Node list: placeholder a (0), add (1), mul (2), add (3), mul (4), output (5).
  const auto life = [&](TensorId x) {
    const Spec& s = specs.specs[specs.tensor_spec[x]];
    return std::make_pair(s.first, s.last);
  };
  EXPECT_EQ(life(t.a), std::make_pair(TimeValue{0}, TimeValue{2}));
  EXPECT_EQ(life(t.bb), std::make_pair(TimeValue{1}, TimeValue{3}));
  EXPECT_EQ(life(t.c), std::make_pair(TimeValue{2}, TimeValue{4}));
  EXPECT_EQ(life(t.d), std::make_pair(TimeValue{3}, TimeValue{4}));
  EXPECT_EQ(life(t.e), std::make_pair(TimeValue{4}, TimeValue{5}));
  // First-appearance order.
  ASSERT_EQ(specs.specs.size(), 5u);
  EXPECT_EQ(specs.specs[0].name, "a");
  EXPECT_EQ(specs.specs[4].name, "e");
}

TEST(Planner, ViewsShareTheirBaseStorageAndLifetime) {
  Builder b;
  const TensorId x = b.tensor("x", 64), y = b.tensor("y", 64), v = b.tensor("v", 64),
                 z = b.tensor("z", 64), w = b.tensor("w", 64);
  b.at(v).alias = AliasKind::View;
  b.at(v).alias_of = y;
  b.m.graphs[0].inputs = {x};
  b.op("relu", {x}, {y});
  b.op("reshape", {y}, {v});
  b.op("relu", {x}, {z});
  b.op("add", {v, z}, {w});
  b.m.graphs[0].outputs = {w};
  for (const char* algo : {"naive", "greedy", "auto"}) {
    const Plan plan = planModel(b.m, request(algo));
    const GraphSpecs& specs = plan.main().specs;
    EXPECT_EQ(specs.tensor_spec[v], specs.tensor_spec[y]) << algo;
    const Spec& s = specs.specs[specs.tensor_spec[y]];
    EXPECT_EQ(s.first, 1);  // x is the placeholder at step 0; relu makes y at 1
    EXPECT_EQ(s.last, 4);   // read through the view by `add` at step 4
    EXPECT_EQ(placeOf(plan, v), placeOf(plan, y)) << algo;
    EXPECT_TRUE(verifyPlan(plan).ok()) << algo;
  }
}

TEST(Planner, InputsNeverShareAnOffset) {
  Builder b;
  const TensorId x = b.tensor("x", 32), y = b.tensor("y", 32), o1 = b.tensor("o1", 32),
                 o2 = b.tensor("o2", 32);
  b.m.graphs[0].inputs = {x, y};
  b.op("relu", {x}, {o1});         // x is dead after this step ...
  b.op("relu", {y}, {o2});         // ... but y, an input, was alive from step 0
  b.m.graphs[0].outputs = {o1, o2};
  for (const char* algo : {"naive", "greedy", "greedy_no_overlap", "auto"}) {
    const Plan plan = planModel(b.m, request(algo));
    EXPECT_NE(placeOf(plan, x), placeOf(plan, y)) << algo;
    EXPECT_TRUE(verifyPlan(plan).ok()) << algo;
  }
}

TEST(Planner, ConstantsAreNotPlannedTrainableOnesAre) {
  Builder b;
  const TensorId x = b.tensor("x", 16), w = b.tensor("w", 1024), g = b.tensor("g", 512),
                 y = b.tensor("y", 16);
  b.at(w).kind = TensorKind::Constant;
  b.at(g).kind = TensorKind::TrainableConstant;
  b.m.graphs[0].inputs = {x};
  b.op("linear", {x, w, g}, {y});
  b.m.graphs[0].outputs = {y};
  const Plan plan = planModel(b.m, request("greedy"));
  EXPECT_EQ(placeOf(plan, w).first, -1);
  EXPECT_NE(placeOf(plan, g).first, -1);
  EXPECT_EQ(plan.main().bufsizes, (std::vector<Bytes>{0, 16 + 512 + 16}));
}

TEST(Planner, AllocOptionsAllEightCombinations) {
  Builder b;
  const TensorId x = b.tensor("x", 16), kv = b.tensor("kv", 64), h = b.tensor("h", 16),
                 y = b.tensor("y", 16);
  b.at(kv).kind = TensorKind::MutableBuffer;
  b.m.graphs[0].inputs = {x, kv};
  b.op("attn", {x, kv}, {h});
  b.op("proj", {h}, {y});
  b.m.graphs[0].outputs = {y};
  for (int mask = 0; mask < 8; ++mask) {
    PlanRequest r = request("greedy");
    r.options.alloc_graph_input = mask & 1;
    r.options.alloc_graph_output = mask & 2;
    r.options.alloc_mutable_buffers = mask & 4;
    const Plan plan = planModel(b.m, r);
    EXPECT_EQ(placeOf(plan, x).first != -1, bool(mask & 1)) << mask;
    EXPECT_EQ(placeOf(plan, y).first != -1, bool(mask & 2)) << mask;
    EXPECT_EQ(placeOf(plan, kv).first != -1, bool(mask & 4)) << mask;
    EXPECT_NE(placeOf(plan, h).first, -1) << mask;  // intermediates always
    EXPECT_TRUE(verifyPlan(plan).ok()) << mask;
    if (mask & 4) {  // the KV cache lives from the first to the last step
      const Spec& s = plan.main().specs.specs[plan.main().specs.tensor_spec[kv]];
      EXPECT_EQ(s.first, 0);
      EXPECT_EQ(s.last, plan.main().specs.steps - 1);
    }
  }
}

TEST(Planner, MapBodyIsReservedAsPrefixOfParent) {
  Builder b;
  const TensorId xs = b.tensor("xs", 256), ys = b.tensor("ys", 256), out = b.tensor("out", 256);
  b.m.graphs[0].inputs = {xs};
  b.op("map", {xs}, {ys});
  b.m.graphs[0].nodes[0].kind = NodeKind::Map;
  b.op("relu", {ys}, {out});
  b.m.graphs[0].outputs = {out};
  const GraphId body = b.body(0, 0);
  b.m.graphs[0].nodes[0].subgraphs = {body};
  const TensorId bx = b.tensor("bx", 32, body), bt = b.tensor("bt", 48, body),
                 by = b.tensor("by", 32, body);
  b.m.graphs[body].inputs = {bx};
  b.op("sin", {bx}, {bt}, body);
  b.op("cos", {bt}, {by}, body);
  b.m.graphs[body].outputs = {by};
  const Plan plan = planModel(b.m, request("naive"));
  // Map bodies plan their inputs: bx, bt, by back to back.
  EXPECT_EQ(plan.graphs[body].bufsizes, (std::vector<Bytes>{0, 32 + 48 + 32}));
  // The parent's pool starts with the body's bytes.
  EXPECT_EQ(plan.main().bufsizes, (std::vector<Bytes>{0, 112 + 3 * 256}));
  EXPECT_EQ(placeOf(plan, xs), std::make_pair(1, Offset{112}));
  EXPECT_TRUE(verifyPlan(plan).ok());
  // A cond body does not plan its inputs (they are the parent's tensors).
  b.m.graphs[0].nodes[0].kind = NodeKind::Cond;
  const Plan cond = planModel(b.m, request("naive"));
  EXPECT_EQ(cond.graphs[body].bufsizes, (std::vector<Bytes>{0, 48 + 32}));
}

TEST(Planner, OuterScopeReadsStayAliveAcrossControlFlow) {
  Builder b;
  const TensorId x = b.tensor("x", 64), k = b.tensor("k", 64), y = b.tensor("y", 64),
                 z = b.tensor("z", 64);
  b.m.graphs[0].inputs = {x};
  b.op("relu", {x}, {k});   // step 1
  b.op("if", {x}, {y});     // step 2: the body reads k from outside
  b.m.graphs[0].nodes[1].kind = NodeKind::Cond;
  b.op("relu", {y}, {z});   // step 3
  b.m.graphs[0].outputs = {z};
  const GraphId then_body = b.body(0, 1);
  b.m.graphs[0].nodes[1].subgraphs = {then_body};
  const TensorId t = b.tensor("t", 64, then_body);
  b.op("neg", {k}, {t}, then_body);
  b.m.graphs[then_body].outputs = {t};
  const GraphSpecs specs = collectSpecs(b.m, 0, PlanOptions{});
  const Spec& ks = specs.specs[specs.tensor_spec[k]];
  EXPECT_EQ(ks.first, 1);
  EXPECT_EQ(ks.last, 2);  // kept alive by the If node, not only by its producer
}

TEST(Planner, CpuAndCudaPartitions) {
  Builder b;
  const TensorId x = b.tensor("x", 64), g1 = b.tensor("g1", 128), g2 = b.tensor("g2", 128),
                 y = b.tensor("y", 64);
  b.at(g1).device = {"cuda", 0};
  b.at(g2).device = {"cuda", 0};
  b.m.graphs[0].inputs = {x};
  b.op("to_cuda", {x}, {g1});
  b.op("mm", {g1}, {g2});
  b.op("to_cpu", {g2}, {y});
  b.m.graphs[0].outputs = {y};
  PlanRequest r = request("greedy");
  r.options.per_device = true;
  const Plan plan = planModel(b.m, r);
  ASSERT_EQ(plan.main().bufsizes.size(), 3u);  // [0, cpu, cuda]
  EXPECT_EQ(plan.main().bufsizes[1], 64u);     // x [0,1] and y [3,4] share bytes
  EXPECT_EQ(plan.main().bufsizes[2], 256u);    // g1 and g2 overlap at step 2
  EXPECT_EQ(placeOf(plan, g1).first, 2);
  EXPECT_EQ(placeOf(plan, x).first, 1);
  EXPECT_EQ(plan.main().pool_devices.at(2), (Device{"cuda", 0}));
  EXPECT_TRUE(verifyPlan(plan).ok());
  // Without per-device planning everything goes to CPU:0, as ExecuTorch does.
  const Plan flat = planModel(b.m, request("greedy"));
  EXPECT_EQ(flat.main().bufsizes.size(), 2u);
  EXPECT_EQ(flat.main().pool_devices.at(1), Device{});
  // All on CUDA: [0, X], no CPU pool (ExecuTorch's test_all_cuda_no_wasted_slots).
  for (TensorId t : {x, y}) b.at(t).device = {"cuda", 0};
  const Plan cuda = planModel(b.m, r);
  EXPECT_EQ(cuda.main().bufsizes, (std::vector<Bytes>{0, 256}));  // x, y reuse g1, g2
  EXPECT_EQ(nonConstBufferDevice(cuda.main()), (std::vector<BufferDevice>{{1, {"cuda", 0}}}));
  EXPECT_TRUE(verifyPlan(cuda).ok());
  // A preset pool anywhere with a tensor off the CPU is refused, naming both.
  for (TensorId t : {x, y}) b.at(t).device = {};
  b.at(y).mem_id = 1;
  try {
    planModel(b.m, r);
    ADD_FAILURE() << "planned";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "PlanRequest.options.per_device: 'y' has a preset pool (mem_id 1) and 'g1' is on "
                 "cuda:0; preset pools cannot be combined with per-device planning (ExecuTorch raises "
                 "NotImplementedError)");
  }
}

TEST(Planner, DevicesSortAsExecutorchPartitionsThem) {
  std::vector<Device> d = {{"npu", 0}, {"cuda", 1}, {"apu", 0}, {"cpu", 1}, {"cuda", 0}, {"cpu", 0}};
  std::sort(d.begin(), d.end());
  EXPECT_EQ(d, (std::vector<Device>{{"cpu", 0}, {"cpu", 1}, {"cuda", 0}, {"cuda", 1}, {"apu", 0}, {"npu", 0}}));
  EXPECT_EQ(parseDevice("cuda"), (Device{"cuda", 0}));
  EXPECT_EQ(parseDevice("npu:12"), (Device{"npu", 12}));
  EXPECT_FALSE(parseDevice("CUDA:0"));
  EXPECT_FALSE(parseDevice("cuda:"));
  EXPECT_FALSE(parseDevice("cuda:1234567890"));
}

TEST(Planner, AlgorithmsAgreeOnValidity) {
  MultiplePools t;
  const std::vector<std::string> names = algorithmNames();
  // At least memplan's default and ExecuTorch's greedy, whatever else.
  ASSERT_NE(std::find(names.begin(), names.end(), "auto"), names.end());
  ASSERT_NE(std::find(names.begin(), names.end(), "greedy"), names.end());
  for (const std::string& algo : names) {
    const Plan plan = planModel(t.b.m, request(algo, 1));
    const VerifyResult v = verifyPlan(plan);
    EXPECT_TRUE(v.ok()) << algo << ": " << (v.ok() ? "" : v.violations[0].message);
  }
}

// ---- verifier on hand-made bad plans ----

GraphPlan twoTensorPlan(Offset off_a, Offset off_b, Bytes pool, TimeValue b_first = 1) {
  GraphPlan p;
  p.bufsizes = {0, pool};
  Spec a, b;
  a.id = 0, a.name = "alpha", a.nbytes = 64, a.alignment = 16, a.first = 0, a.last = 2, a.planned = true;
  b.id = 1, b.name = "beta", b.nbytes = 64, b.alignment = 16, b.first = b_first, b.last = 3, b.planned = true;
  p.specs.specs = {a, b};
  p.allocations = {{0, 1, 0, off_a, 64}, {1, 1, 0, off_b, 64}};
  p.pools.push_back(PoolInfo{.mem_id = 1, .size = pool});
  return p;
}

TEST(Verifier, AcceptsDisjointPlans) {
  EXPECT_TRUE(verifyGraphPlan(twoTensorPlan(0, 64, 128), PlanOptions{}).ok());
  // Same bytes, disjoint lifetimes.
  EXPECT_TRUE(verifyGraphPlan(twoTensorPlan(0, 0, 64, 3), PlanOptions{}).ok());
}

TEST(Verifier, CatchesOverlapNamingBothTensors) {
  const VerifyResult r = verifyGraphPlan(twoTensorPlan(0, 32, 128), PlanOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.violations[0].message.find("alpha"), std::string::npos);
  EXPECT_NE(r.violations[0].message.find("beta"), std::string::npos);
}

TEST(Verifier, CatchesOutOfBounds) {
  const VerifyResult r = verifyGraphPlan(twoTensorPlan(0, 64, 100), PlanOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.violations[0].message.find("beta"), std::string::npos);
  EXPECT_NE(r.violations[0].message.find("outside pool 1"), std::string::npos);
}

TEST(Verifier, CatchesMisalignment) {
  const VerifyResult r = verifyGraphPlan(twoTensorPlan(0, 72, 160), PlanOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.violations[0].message.find("not aligned to 16"), std::string::npos);
}

TEST(Verifier, CatchesMissingAndExtraAllocations) {
  GraphPlan p = twoTensorPlan(0, 64, 128);
  p.allocations.pop_back();
  EXPECT_FALSE(verifyGraphPlan(p, PlanOptions{}).ok());
  p = twoTensorPlan(0, 64, 128);
  p.specs.specs[1].planned = false;
  p.specs.specs[1].is_input = true;
  const VerifyResult r = verifyGraphPlan(p, PlanOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.violations[0].message.find("graph input"), std::string::npos);
}

TEST(Verifier, SweepFindsOverlapAmongManyTensors) {
  // 2,000 tensors stacked without overlap, then one moved onto a neighbour.
  GraphPlan p;
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    Spec s;
    s.id = i, s.name = "t" + std::to_string(i), s.nbytes = 16, s.alignment = 16;
    s.first = i, s.last = i + 10, s.planned = true;
    p.specs.specs.push_back(s);
    p.allocations.push_back({i, 1, 0, Offset(16) * (i % 11), 16});
  }
  p.bufsizes = {0, 16 * 11};
  EXPECT_TRUE(verifyGraphPlan(p, PlanOptions{}).ok());
  // t1500 [1500, 1510] moved to the bytes of t1492 [1492, 1502] (1492 % 11
  // == 1503 % 11): the first collision the sweep meets is with t1492.
  p.allocations[1500].offset = p.allocations[1503].offset;
  const VerifyResult r = verifyGraphPlan(p, PlanOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.violations[0].message.find("'t1500'"), std::string::npos);
  EXPECT_NE(r.violations[0].message.find("'t1492'"), std::string::npos);
}

TEST(Verifier, InPlaceResultsExtraLifetimeIsProtected) {
  // base [0,2], in-place result [2,6] at the same offset; a third tensor
  // alive at [4,5] placed there too must be caught (ExecuTorch defect 3).
  GraphPlan p;
  p.bufsizes = {0, 64};
  Spec base, res, third;
  base.id = 0, base.name = "base", base.nbytes = 64, base.first = 0, base.last = 2, base.planned = true;
  res.id = 1, res.name = "result", res.nbytes = 64, res.first = 2, res.last = 6, res.planned = true;
  res.inplace_base = 0;
  third.id = 2, third.name = "third", third.nbytes = 64, third.first = 4, third.last = 5;
  third.planned = true;
  p.specs.specs = {base, res, third};
  p.allocations = {{0, 1, 0, 0, 64}, {1, 1, 0, 0, 64}, {2, 1, 0, 0, 64}};
  const VerifyResult r = verifyGraphPlan(p, PlanOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.violations[0].message.find("third"), std::string::npos);
  p.specs.specs.pop_back();
  p.allocations.pop_back();
  EXPECT_TRUE(verifyGraphPlan(p, PlanOptions{}).ok());  // the pair itself is fine
}

}  // namespace
}  // namespace memplan

// The order search stage (memplan/order.h): hand-built graphs whose best
// order is known to the byte, brute force over every topological order of
// small random graphs, and properties of every returned order.
#include <algorithm>
#include <numeric>

#include <gtest/gtest.h>

#include "memplan/memplan.h"
#include "memplan/order.h"
#include "support/random_graph.h"
#include "support/test_support.h"

namespace memplan {
namespace {

using test::ModelBuilder;

// x -> a1 (big) -> a2; x -> b1 (big) -> b2; c = a2 + b2. Given order runs
// both big tensors together: a1, b1, a2, b2, c.
Model twoBranches() {
  ModelBuilder b("two_branches");
  const TensorId x = b.tensor("x", 16), a1 = b.tensor("a1", 1600), a2 = b.tensor("a2", 16);
  const TensorId b1 = b.tensor("b1", 1600), b2 = b.tensor("b2", 16), c = b.tensor("c", 16);
  b.input(0, x);
  b.node(0, "a1", {x}, {a1});
  b.node(0, "b1", {x}, {b1});
  b.node(0, "a2", {a1}, {a2});
  b.node(0, "b2", {b1}, {b2});
  b.node(0, "c", {a2, b2}, {c});
  b.output(0, c);
  return b.model();
}

TEST(Order, TwoBranchesRunOneBranchAtATime) {
  const Model m = twoBranches();
  // Given: at b1, x + a1 + b1 = 3216; at a2, a1 + b1 + a2 = 3216.
  EXPECT_EQ(orderBound(m, 0, {}), 3216u);
  const OrderResult r = searchOrder(m, {});
  ASSERT_EQ(r.graphs.size(), 1u);
  const GraphOrder& g = r.graphs[0];
  // Best: a1, a2, b1, b2, c: at b1, x + a2 + b1 = 1632 (no order does
  // better: the second big tensor is made while x and the other branch's
  // small result are live).
  EXPECT_EQ(g.bound_given, 3216u);
  EXPECT_EQ(g.bound_found, 1632u);
  EXPECT_TRUE(g.proven_optimal);
  EXPECT_EQ(g.order, (std::vector<NodeId>{0, 2, 1, 3, 4}));
  const Model re = applyOrder(m, {g.order});
  EXPECT_EQ(orderBound(re, 0, {}), 1632u);
  EXPECT_EQ(re.graphs[0].nodes[1].name, "a2");
}

TEST(Order, EveryTechniqueAloneFindsTheTwoBranchOrder) {
  const Model m = twoBranches();
  for (int which = 0; which < 3; ++which) {
    OrderParams p;
    p.greedy = which == 0;
    p.local_search = which == 1;
    p.exact = which == 2;
    const GraphOrder g = searchOrder(m, {}, p).graphs[0];
    EXPECT_EQ(g.bound_found, 1632u) << which;
    EXPECT_EQ(g.method, which == 0 ? "greedy" : which == 1 ? "local search" : "exact");
  }
  OrderParams none;
  none.greedy = none.local_search = none.exact = false;
  const GraphOrder g = searchOrder(m, {}, none).graphs[0];
  EXPECT_EQ(g.bound_found, 3216u);
  EXPECT_FALSE(g.changed());
}

// A node that writes its input in place keeps its place after the readers
// of the old value, though running it first would need less memory.
TEST(Order, InPlaceWritesStayAfterTheReadersOfTheOldValue) {
  ModelBuilder b("inplace");
  const TensorId x = b.tensor("x", 16), big = b.tensor("big", 1600), r = b.tensor("r", 16);
  const TensorId w = b.alias("w", AliasKind::InPlace, x), y = b.tensor("y", 16);
  b.input(0, x);
  b.node(0, "reader", {x}, {big});     // reads x before it is overwritten
  b.node(0, "reduce", {big}, {r});
  b.node(0, "mutate", {x}, {w});       // x written in place
  b.node(0, "join", {r, w}, {y});
  b.output(0, y);
  const Model m = b.model();
  const GraphOrder g = searchOrder(m, {}).graphs[0];
  EXPECT_FALSE(g.changed());
  EXPECT_FALSE(isValidOrder(m, 0, {2, 0, 1, 3}));
  EXPECT_TRUE(isValidOrder(m, 0, {0, 1, 2, 3}));
  EXPECT_THROW(applyOrder(m, {{2, 0, 1, 3}}), InputError);
}

TEST(Order, PinnedTensorsKeepTheGivenOrder) {
  Model m = twoBranches();
  m.tensors[1].mem_id = 1;
  m.tensors[1].offset = 0;  // a1 pinned: the pins were made for this order
  const GraphOrder g = searchOrder(m, {}).graphs[0];
  EXPECT_FALSE(g.changed());
  EXPECT_EQ(g.fixed, "tensor 'a1' is pinned");
  EXPECT_EQ(g.bound_found, g.bound_given);
}

TEST(Order, ApplyOrderRefusesWhatIsNotAnOrder) {
  const Model m = twoBranches();
  EXPECT_THROW(applyOrder(m, {{0, 1, 2}}), InputError);           // too short
  EXPECT_THROW(applyOrder(m, {{0, 0, 2, 3, 4}}), InputError);     // repeated
  EXPECT_THROW(applyOrder(m, {{2, 0, 1, 3, 4}}), InputError);     // a2 before a1
  EXPECT_NO_THROW(applyOrder(m, {{1, 0, 3, 2, 4}}));
}

// Every topological order of a small graph, by brute force.
Bytes bruteForceBound(const Model& m, GraphId g, const PlanOptions& options) {
  std::vector<NodeId> order(m.graphs[g].nodes.size());
  std::iota(order.begin(), order.end(), 0);
  Bytes best = orderBound(m, g, options);
  Model work = m;
  do {
    if (!isValidOrder(m, g, order)) continue;
    for (std::size_t i = 0; i < order.size(); ++i) work.graphs[g].nodes[i] = m.graphs[g].nodes[order[i]];
    best = std::min(best, orderBound(work, g, options));
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

test::RandomGraphParams smallGraphs() {
  test::RandomGraphParams p;
  p.max_nodes = 7;
  p.max_body_nodes = 4;
  p.huge_sizes = false;
  return p;
}

TEST(Order, ExactSearchMatchesBruteForceOnSmallRandomGraphs) {
  int improved = 0, proven = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    const test::RandomCase c = test::randomCase(seed, smallGraphs());
    const OrderResult r = searchOrder(c.model, c.options);
    const auto opts = graphsPlanOptions(c.model, c.options);
    for (const GraphOrder& g : r.graphs) {
      if (!g.fixed.empty() || c.model.graphs[g.graph].nodes.size() > 7) continue;
      const Bytes best = bruteForceBound(c.model, g.graph, opts[g.graph]);
      EXPECT_GE(g.bound_found, best) << c.summary;
      if (g.proven_optimal) {
        EXPECT_EQ(g.bound_found, best) << c.summary << " graph " << g.graph;
        ++proven;
      }
      improved += g.bound_found < g.bound_given;
    }
  }
  EXPECT_GT(improved, 5);   // the random graphs do leave room
  EXPECT_GT(proven, 100);
}

// Every returned order is topological, measured as reported, never above
// the given one; the model in that order plans, verifies and replays.
TEST(Order, PropertiesOfEveryReturnedOrder) {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const test::RandomCase c = test::randomCase(seed, test::paramsForIndex(seed));
    OrderResult r;
    try {
      r = searchOrder(c.model, c.options);
    } catch (const InputError&) {
      continue;  // the planner refuses this model too
    }
    std::vector<std::vector<NodeId>> orders;
    const auto opts = graphsPlanOptions(c.model, c.options);
    for (const GraphOrder& g : r.graphs) {
      ASSERT_TRUE(isValidOrder(c.model, g.graph, g.order)) << c.summary;
      EXPECT_LE(g.bound_found, g.bound_given) << c.summary;
      orders.push_back(g.order);
    }
    const Model re = applyOrder(c.model, orders);
    for (const GraphOrder& g : r.graphs)
      EXPECT_EQ(orderBound(re, g.graph, opts[g.graph]), g.bound_found) << c.summary;
    EXPECT_EQ(searchOrder(c.model, c.options).graphs.size(), r.graphs.size());
    PlanRequest req;
    req.options = c.options;
    Plan plan;
    try {
      plan = planModel(re, req);
    } catch (const PlanError&) {
      continue;  // sizes past the limits: refused in either order
    }
    const Input in = Input::fromModel(re);
    EXPECT_TRUE(verify(in, plan).ok()) << c.summary;
    EXPECT_EQ(replay(in, plan).issue, ReplayIssue::None) << c.summary;
  }
}

// plan() with reorder: the plan is of the order found, its file records
// the order, and reading the file back checks it in that order.
TEST(Order, PlanRequestReorderRoundTrip) {
  const Input in = Input::fromModel(twoBranches());
  PlanRequest r;
  r.reorder = ReorderMode::Apply;
  const Plan p = plan(in, r);
  ASSERT_TRUE(p.order_applied);
  EXPECT_EQ(p.main().pools.at(0).size, 1632u);   // 3216 in the given order
  EXPECT_TRUE(verify(in, p).ok());
  EXPECT_EQ(replay(in, p).issue, ReplayIssue::None);
  const std::string text = writePlan(p, in);
  EXPECT_NE(text.find("\"nodes\":[0,2,1,3,4]"), std::string::npos) << text;
  const Plan back = readPlan(text, "two.plan.json", in);
  EXPECT_TRUE(back.order_applied);
  EXPECT_TRUE(verify(in, back).ok());
  EXPECT_EQ(replay(in, back).issue, ReplayIssue::None);
  EXPECT_EQ(writePlan(back, in), text);
  // A C header has no node order to carry: refused, not silently wrong.
  EXPECT_THROW(writeCHeader(test::tempDir("order_c_header") / "plan.h", p, in), InputError);
  // An order that breaks a dependency is refused, naming the graph.
  std::string bad = text;
  bad.replace(bad.find("[0,2,1,3,4]"), 11, "[2,0,1,3,4]");
  try {
    readPlan(bad, "two.plan.json", in);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("runs a node before one it depends on"), std::string::npos)
        << e.what();
  }
  // Report: the bounds, the plan of the given order.
  r.reorder = ReorderMode::Report;
  const Plan reported = plan(in, r);
  EXPECT_FALSE(reported.order_applied);
  EXPECT_EQ(reported.main().pools.at(0).size, 3216u);
  EXPECT_EQ(reported.order.graphs.at(0).bound_found, 1632u);
  EXPECT_TRUE(verify(in, reported).ok());
  // Off: no search, nothing recorded (plan files as before).
  EXPECT_TRUE(plan(in, {}).order.graphs.empty());
  EXPECT_EQ(writePlan(plan(in, {}), in).find("\"order\""), std::string::npos);
}

// The CLI: plan --reorder writes the plan of the new order, verify and
// replay of the plan file take it; import --reorder writes the graph so.
TEST(Order, CliReorder) {
  const std::string graph = (test::sourceDir() / "examples/graphs/two_branches.json").string();
  const std::string plan_file = (test::tempDir("order_cli") / "two.plan.json").string();
  test::CliResult r = test::runCli("plan '" + graph + "' --reorder -q -o '" + plan_file + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::runCli("verify '" + graph + "' '" + plan_file + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = test::runCli("replay '" + graph + "' '" + plan_file + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = test::runCli("plan '" + graph + "' --reorder-report --bytes");
  EXPECT_NE(r.out.find("order of main: bound 8.2 KiB (8448 B) in the given order, 4.5 KiB (4608 B) "
                       "in the order found (-45.5%, greedy, optimal)\n"
                       "order: --reorder plans in the order found\n"),
            std::string::npos)
      << r.out;
  r = test::runCli("import '" + graph + "' --reorder");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto a2 = r.out.find("{\"name\":\"a2\",\"op\""), b1 = r.out.find("{\"name\":\"b1\",\"op\"");
  ASSERT_NE(a2, std::string::npos) << r.out;
  EXPECT_LT(a2, b1) << r.out;  // a2 now runs before b1
}

TEST(Order, Deterministic) {
  const test::RandomCase c = test::randomCase(7, smallGraphs());
  const OrderResult a = searchOrder(c.model, c.options), b = searchOrder(c.model, c.options);
  for (std::size_t g = 0; g < a.graphs.size(); ++g) {
    EXPECT_EQ(a.graphs[g].order, b.graphs[g].order);
    EXPECT_EQ(a.graphs[g].work, b.graphs[g].work);
  }
}

}  // namespace
}  // namespace memplan

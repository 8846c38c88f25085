// ExecuTorch programs in another instruction order (memplan/pte.h:
// pteOrderConstraints, reorderPte; plan() with PlanRequest::reorder): the
// order found, what keeps an instruction in place, the file written and
// read back, and the real programs of tests/data.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "memplan/memplan.h"
#include "memplan/order.h"
#include "memplan/pte.h"
#include "pte_builder.h"
#include "support/test_support.h"

namespace memplan {
namespace {

using test::PteMethodSpec;
using test::PteProgramSpec;

bool hasEdge(const OrderConstraints& c, GraphId g, NodeId a, NodeId b) {
  const auto& e = c.edges[static_cast<std::size_t>(g)];
  return std::find(e.begin(), e.end(), std::make_pair(a, b)) != e.end();
}

// x -> a1 (1600 B) -> a2; x -> b1 (1600 B) -> b2; c = a2 + b2, written
// with both wide results first (a1, b1, a2, b2, c); no reuse in the file.
PteProgramSpec twoBranches() {
  PteMethodSpec m;
  const std::int32_t x = m.tensor({4}, 1, 0);
  const std::int32_t a1 = m.tensor({400}, 1, 16), b1 = m.tensor({400}, 1, 1616);
  const std::int32_t a2 = m.tensor({4}, 1, 3216), b2 = m.tensor({4}, 1, 3232);
  const std::int32_t c = m.tensor({4}, 1, 3248);
  m.inputs = {x};
  m.kernel("aten::linear", {x}, {a1});
  m.kernel("aten::linear", {x}, {b1});
  m.kernel("aten::linear", {a1}, {a2});
  m.kernel("aten::linear", {b1}, {b2});
  m.kernel("aten::add", {a2, b2}, {c});
  m.outputs = {c};
  m.buffer_sizes = std::vector<std::int64_t>{0, 3264};
  PteProgramSpec spec;
  spec.methods.push_back(std::move(m));
  return spec;
}

PlanRequest reorder() {
  PlanRequest r;
  r.reorder = ReorderMode::Apply;
  return r;
}

// Each instruction's first output (tensor ids), in run order.
std::vector<TensorId> firstOutputs(const PteProgram& p) {
  std::vector<TensorId> out;
  for (const Node& n : p.model.graphs[0].nodes) out.push_back(n.outputs.empty() ? kNone : n.outputs[0]);
  return out;
}

TEST(PteReorder, TwoBranchesRunOneAtATimeAndWriteBack) {
  const std::string bytes = test::buildPte(twoBranches());
  const Input in = readInput(bytes, "two.pte");
  const Plan plan = memplan::plan(in, reorder());
  ASSERT_TRUE(plan.order_applied);
  const GraphOrder& g = plan.order.graphs[0];
  // Given: x + a1 + b1 at b1 = 3216. Found: one wide result at a time,
  // beside x and a2 = 1632.
  EXPECT_EQ(g.bound_given, 3216u);
  EXPECT_EQ(g.bound_found, 1632u);
  EXPECT_EQ(g.order, (std::vector<NodeId>{0, 2, 1, 3, 4}));
  EXPECT_EQ(plan.graphs[0].bufsizes, (std::vector<Bytes>{0, 1632}));
  ASSERT_TRUE(verify(in, plan).ok());
  ASSERT_TRUE(replay(in, plan).ok());

  const auto dir = test::tempDir("pte-reorder");
  const auto out = dir / "two.reordered.pte";
  writePte(out, plan, in);
  const PteProgram back = readPte(test::readText(out), "two.reordered.pte");
  const PteProgram given = readPte(bytes, "two.pte");
  const std::vector<TensorId> before = firstOutputs(given), after = firstOutputs(back);
  EXPECT_EQ(after, (std::vector<TensorId>{before[0], before[2], before[1], before[3], before[4]}));
  EXPECT_EQ(back.methods[0].buffer_sizes, (std::vector<Bytes>{0, 1632}));
  // The file's own plan passes memplan's checks, read as a new file.
  const Plan carried = embeddedPlan(back);
  EXPECT_TRUE(verifyPte(back, carried, true).ok());
  EXPECT_TRUE(replayPte(back, carried).ok());
  // Nothing but the order and the plan: without the plan, the listing is
  // the original's with instructions 1 and 2 swapped.
  std::string want = describePte(bytes, "a", false);
  const auto swap = [&](const std::string& a, const std::string& b) {
    for (std::size_t at = 0; (at = want.find(a, at)) != std::string::npos; at += b.size()) want.replace(at, a.size(), b);
  };
  swap("instructions[1].", "instructions[#].");
  swap("instructions[2].", "instructions[1].");
  swap("instructions[#].", "instructions[2].");
  const auto sorted = [](std::string s) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    for (std::size_t end; (end = s.find('\n', start)) != std::string::npos; start = end + 1)
      lines.push_back(s.substr(start, end - start));
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  EXPECT_EQ(sorted(describePte(test::readText(out), "b", false)), sorted(want));
  EXPECT_NE(describePte(test::readText(out), "b", false), describePte(bytes, "a", false));

  // The plan file records the order; read back onto the original program,
  // it verifies and replays in that order.
  const std::string text = writePlan(plan, in, {});
  const Plan again = readPlan(text, "two.plan.json", in);
  EXPECT_TRUE(again.order_applied);
  EXPECT_TRUE(verify(in, again).ok());
  EXPECT_TRUE(replay(in, again).ok());
}

TEST(PteReorder, ReportModeChangesNothing) {
  const Input in = readInput(test::buildPte(twoBranches()), "two.pte");
  PlanRequest r;
  r.reorder = ReorderMode::Report;
  const Plan plan = memplan::plan(in, r);
  EXPECT_FALSE(plan.order_applied);
  EXPECT_EQ(plan.order.graphs[0].bound_found, 1632u);
  EXPECT_EQ(plan.graphs[0].bufsizes, (std::vector<Bytes>{0, 3216}));
}

// An Int a kernel writes (sym_size) and a later kernel reads: the graph
// names no tensor between them, the constraints keep them in order.
TEST(PteReorder, ValuesThatAreNotTensorsKeepTheirOrder) {
  PteMethodSpec m;
  const std::int32_t x = m.tensor({4}, 1, 0), y = m.tensor({4}, 1, 16), z = m.tensor({4}, 1, 32);
  const std::int32_t dim = m.integer(0), size = m.integer(0);
  m.inputs = {x};
  m.rawKernel("executorch_prim::sym_size", {x, dim, size});  // 0 writes `size`
  m.kernel("aten::relu", {x}, {y});                           // 1
  m.rawKernel("aten::view_copy", {y, size, z, z});            // 2 reads `size`
  m.outputs = {z};
  m.buffer_sizes = std::vector<std::int64_t>{0, 48};
  PteProgramSpec spec;
  spec.methods.push_back(std::move(m));
  const PteProgram p = readPte(test::buildPte(spec), "int.pte");
  const OrderConstraints c = pteOrderConstraints(p);
  EXPECT_TRUE(hasEdge(c, 0, 0, 2));
  EXPECT_FALSE(hasEdge(c, 0, 0, 1));  // independent: free to move
  EXPECT_TRUE(isValidOrder(p.model, 0, {1, 2, 0}));  // the graph alone allows it
  EXPECT_FALSE(isValidOrder(p.model, 0, {1, 2, 0}, &c));
  EXPECT_TRUE(isValidOrder(p.model, 0, {1, 0, 2}, &c));
  EXPECT_THROW(reorderPte(p, {{1, 2, 0}}), InputError);
  const PteProgram r = reorderPte(p, {{1, 0, 2}});
  EXPECT_EQ(firstOutputs(r)[0], p.model.graphs[0].nodes[1].outputs[0]);
}

// A plan file recording an order the graph allows but the instructions do
// not (the Int read before it is written) is refused, naming the method.
TEST(PteReorder, RecordedOrderThatBreaksAValueIsRefused) {
  PteMethodSpec m;
  const std::int32_t x = m.tensor({4}, 1, 0), y = m.tensor({4}, 1, 16), z = m.tensor({4}, 1, 32);
  const std::int32_t dim = m.integer(0), size = m.integer(0);
  m.inputs = {x};
  m.rawKernel("executorch_prim::sym_size", {x, dim, size});
  m.kernel("aten::relu", {x}, {y});
  m.rawKernel("aten::view_copy", {y, size, z, z});
  m.outputs = {z};
  m.buffer_sizes = std::vector<std::int64_t>{0, 48};
  PteProgramSpec spec;
  spec.methods.push_back(std::move(m));
  const Input in = readInput(test::buildPte(spec), "int.pte");
  PlanRequest r;
  r.reorder = ReorderMode::Report;
  nlohmann::json j = nlohmann::json::parse(writePlan(memplan::plan(in, r), in, {}));
  j["order"]["applied"] = true;
  j["order"]["graphs"][0]["nodes"] = {1, 2, 0};
  const Plan recorded = readPlan(j.dump(), "int.plan.json", in);
  try {
    (void)verify(in, recorded);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("int.pte: method 'forward': the order is not one its instructions can run in", 0), 0u)
        << e.what();
  }
}

// A delegate's first output is not its last argument: it is written where
// it is first named, and its readers come after.
TEST(PteReorder, DelegateOutputsAreWrittenWhereFirstNamed) {
  PteMethodSpec m;
  const std::int32_t x = m.tensor({4}, 1, 0), o1 = m.tensor({4}, 1, 16), o2 = m.tensor({4}, 1, 32);
  const std::int32_t y = m.tensor({4}, 1, 48);
  m.inputs = {x};
  m.delegates.push_back({"XnnpackBackend", 0, 0});
  m.delegate(0, {x, o1, o2});                // 0
  m.kernel("aten::relu", {o1}, {y});         // 1
  m.outputs = {y, o2};
  m.buffer_sizes = std::vector<std::int64_t>{0, 64};
  PteProgramSpec spec;
  spec.delegate_data.push_back("blob");
  spec.methods.push_back(std::move(m));
  const PteProgram p = readPte(test::buildPte(spec), "delegate.pte");
  const OrderConstraints c = pteOrderConstraints(p);
  EXPECT_TRUE(hasEdge(c, 0, 0, 1));
  EXPECT_FALSE(isValidOrder(p.model, 0, {1, 0}, &c));
}

// Jumps and their destinations are barriers: instructions move only within
// the straight-line segments between them.
TEST(PteReorder, InstructionsStayBetweenJumps) {
  PteMethodSpec m;
  const std::int32_t x = m.tensor({4}, 1, 0);
  std::vector<std::int32_t> t;
  for (int i = 0; i < 4; ++i) t.push_back(m.tensor({4}, 1, static_cast<std::uint64_t>(16 * (i + 1))));
  const std::int32_t cond = m.boolean(true);
  m.inputs = {x};
  m.kernel("aten::relu", {x}, {t[0]});  // 0
  m.kernel("aten::relu", {x}, {t[1]});  // 1
  m.jump(cond, 4);                       // 2: never jumps (a constant true)
  m.kernel("aten::relu", {x}, {t[2]});  // 3
  m.kernel("aten::relu", {x}, {t[3]});  // 4: a destination
  m.outputs = {t[0], t[1], t[2], t[3]};
  m.buffer_sizes = std::vector<std::int64_t>{0, 80};
  PteProgramSpec spec;
  spec.methods.push_back(std::move(m));
  const PteProgram p = readPte(test::buildPte(spec), "jump.pte");
  const OrderConstraints c = pteOrderConstraints(p);
  EXPECT_TRUE(isValidOrder(p.model, 0, {0, 1, 2, 3, 4}, &c));
  EXPECT_TRUE(isValidOrder(p.model, 0, {1, 0, 2, 3, 4}, &c));   // within the first segment
  EXPECT_FALSE(isValidOrder(p.model, 0, {0, 2, 1, 3, 4}, &c));  // across the jump
  EXPECT_FALSE(isValidOrder(p.model, 0, {0, 1, 2, 4, 3}, &c));  // before the destination
  const PteProgram r = reorderPte(p, {{1, 0, 2, 3, 4}});
  const std::string listing = describePte(r.bytes, "r", false);
  EXPECT_NE(listing.find("instructions[2].jump_false_call.destination_instruction=4"), std::string::npos);
}

// The real programs: each planned with --reorder, written, read back and
// checked; where a method keeps its order, the result says why.
TEST(PteReorder, RealProgramsWriteBackAndVerify) {
  const auto dir = test::tempDir("pte-reorder-real");
  for (const char* name : {"add", "module_linear_no_constant_segment", "keyword_spotting", "cond",
                           "llm_prefill_decode_xnnpack"}) {
    SCOPED_TRACE(name);
    const Input in = readInput(test::dataDir() / "executorch-programs" / (std::string(name) + ".pte"));
    const Plan plan = memplan::plan(in, reorder());
    for (const GraphOrder& g : plan.order.graphs) EXPECT_LE(g.bound_found, g.bound_given);
    ASSERT_TRUE(verify(in, plan).ok());
    const auto out = dir / (std::string(name) + ".pte");
    writePte(out, plan, in);
    const PteProgram back = readPte(test::readText(out), name);
    EXPECT_TRUE(verifyPte(back, embeddedPlan(back), true).ok());
    EXPECT_TRUE(replayPte(back, embeddedPlan(back)).ok());
    if (std::string(name) == "cond") {
      EXPECT_NE(plan.order.graphs[0].fixed.find("has gaps"), std::string::npos);
      EXPECT_FALSE(plan.order_applied);
    }
    if (std::string(name) == "keyword_spotting") {
      EXPECT_FALSE(plan.order_applied);  // a chain: no other order
    }
    if (std::string(name) == "llm_prefill_decode_xnnpack") {
      // Shared KV caches are pinned state (alive at every step): the
      // methods are reordered, the caches keep their offsets.
      ASSERT_TRUE(plan.order_applied);
      EXPECT_EQ(plan.order.graphs[0].bound_given, 7296u);
      EXPECT_EQ(plan.order.graphs[0].bound_found, 5312u);
      EXPECT_EQ(plan.order.graphs[1].bound_given, 7680u);
      EXPECT_EQ(plan.order.graphs[1].bound_found, 5888u);
      EXPECT_EQ(back.methods[0].buffer_sizes, (std::vector<Bytes>{0, 3328, 2048}));
      EXPECT_EQ(back.methods[1].buffer_sizes, (std::vector<Bytes>{0, 3904, 2048}));
      const PteProgram given = readPte(test::readText(test::dataDir() / "executorch-programs" / (std::string(name) + ".pte")), name);
      for (std::size_t t = 0; t < given.tensors.size(); ++t)
        if (given.tensors[t].shared) {
          EXPECT_EQ(back.tensors[t].allocation, given.tensors[t].allocation) << given.model.tensors[t].name;
        }
    }
  }
}

}  // namespace
}  // namespace memplan

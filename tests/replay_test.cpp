// Replay on hand-made plans: each test places tensors by hand so that the
// expected verdict (and the clobber it names) is known exactly.
#include "verify/replay.h"

#include <gtest/gtest.h>

#include <map>

#include "memplan/import.h"
#include "memplan/memplan.h"
#include "memplan/plan.h"
#include "memplan/verify.h"
#include "support/random_graph.h"
#include "verify/pieces.h"
#include "support/test_support.h"

namespace memplan {
namespace {

using test::ModelBuilder;

// A plan with the given placements: tensor -> (mem_id, offset). Specs come
// from collectSpecs (the replay uses only their tensor -> spec mapping).
Plan placeByHand(const Model& model, const std::map<TensorId, std::pair<MemId, Offset>>& at,
                 PlanOptions options = {}) {
  options.alignment = 1;
  Plan plan;
  plan.options = options;
  for (GraphId g = 0; g < static_cast<GraphId>(model.graphs.size()); ++g) {
    GraphPlan gp;
    gp.graph = g;
    gp.specs = collectSpecs(model, g, options);
    gp.bufsizes = {0};
    for (const Spec& s : gp.specs.specs) {
      if (!s.planned) continue;
      auto it = at.find(s.tensor);
      if (it == at.end()) continue;
      Allocation a;
      a.spec = s.id;
      a.mem_id = it->second.first;
      a.offset = it->second.second;
      a.size = s.nbytes;
      gp.allocations.push_back(a);
      if (gp.bufsizes.size() <= static_cast<std::size_t>(a.mem_id)) gp.bufsizes.resize(a.mem_id + 1);
      gp.bufsizes[a.mem_id] = std::max(gp.bufsizes[a.mem_id], a.offset + a.size);
    }
    plan.graphs.push_back(std::move(gp));
  }
  // Bodies run inside the main graph's arenas: make them big enough.
  for (const GraphPlan& gp : plan.graphs)
    for (std::size_t m = 0; m < gp.bufsizes.size(); ++m) {
      auto& main = plan.graphs[0].bufsizes;
      if (main.size() <= m) main.resize(m + 1);
      main[m] = std::max(main[m], gp.bufsizes[m]);
    }
  return plan;
}

class Replay : public ::testing::TestWithParam<bool> {
 protected:
  ReplayResult replay(const Model& m, const Plan& p) {
    ReplayOptions o;
    o.force_sparse = GetParam();
    return replayPlan(m, p, o);
  }
};
INSTANTIATE_TEST_SUITE_P(DenseAndSparse, Replay, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "sparse" : "dense"; });

// x -> n1 -> y -> n2 -> z, output z.
struct Chain {
  ModelBuilder b{"chain"};
  TensorId x = b.tensor("x", 64), y = b.tensor("y", 64), z = b.tensor("z", 32);
  Chain() {
    b.input(0, x);
    b.node(0, "n1", {x}, {y});
    b.node(0, "n2", {y}, {z});
    b.output(0, z);
  }
};

TEST_P(Replay, DisjointChainIsClean) {
  Chain c;
  const auto r = replay(c.b.model(), placeByHand(c.b.model(), {{c.x, {1, 0}}, {c.y, {1, 64}}, {c.z, {1, 128}}}));
  EXPECT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.steps, 2u);
  EXPECT_EQ(r.writes, 3u);  // x copied in, y, z
  EXPECT_EQ(r.dense_pools + r.sparse_pools, 1u);
  EXPECT_EQ(r.sparse_pools, GetParam() ? 1u : 0u);
}

TEST_P(Replay, ReuseOfDeadInputIsClean) {
  Chain c;  // x is dead once n1 ran: z may take its bytes
  const auto r = replay(c.b.model(), placeByHand(c.b.model(), {{c.x, {1, 0}}, {c.y, {1, 64}}, {c.z, {1, 16}}}));
  EXPECT_TRUE(r.ok()) << r.message;
}

TEST_P(Replay, OutputOverInputOfSameNodeIsCaught) {
  Chain c;  // z written by n2 over y, which n2 is still reading
  const auto r = replay(c.b.model(), placeByHand(c.b.model(), {{c.x, {1, 0}}, {c.y, {1, 64}}, {c.z, {1, 96}}}));
  ASSERT_EQ(r.issue, ReplayIssue::Clobber);
  EXPECT_EQ(r.victim, "y");
  EXPECT_EQ(r.writer, "z");
  EXPECT_EQ(r.writer_node, "n2");
  EXPECT_EQ(r.write_step, 2);
  EXPECT_EQ(r.reader_node, "n2");
  EXPECT_EQ(r.mem_id, 1);
  EXPECT_EQ(r.offset, 96u);
  EXPECT_NE(r.message.find("'y'"), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find('\n'), std::string::npos);
}

TEST_P(Replay, OutputClobberedBeforeEndIsCaught) {
  ModelBuilder b;
  const TensorId x = b.tensor("x", 16), y = b.tensor("y", 16), z = b.tensor("z", 16);
  b.input(0, x);
  b.node(0, "a", {x}, {y});
  b.node(0, "b", {x}, {z});
  b.output(0, y);
  b.output(0, z);
  // y and z share bytes; y is not read after b, only at the end.
  const auto r = replay(b.model(), placeByHand(b.model(), {{x, {1, 0}}, {y, {1, 16}}, {z, {1, 16}}}));
  ASSERT_EQ(r.issue, ReplayIssue::Clobber);
  EXPECT_EQ(r.victim, "y");
  EXPECT_EQ(r.writer, "z");
  EXPECT_EQ(r.writer_node, "b");
  EXPECT_EQ(r.reader_node, "");  // graph end
  EXPECT_EQ(r.read_step, 3);
}

TEST_P(Replay, InputClobberedBeforeFirstReadIsCaught) {
  ModelBuilder b;
  const TensorId x = b.tensor("x", 8), u = b.tensor("u", 8), y = b.tensor("y", 8);
  b.input(0, u);
  b.input(0, x);
  b.node(0, "a", {u}, {y});
  b.node(0, "b", {x, y}, {});
  b.output(0, y);
  // y overwrites x before b reads x.
  const auto r = replay(b.model(), placeByHand(b.model(), {{u, {1, 0}}, {x, {1, 8}}, {y, {1, 8}}}));
  ASSERT_EQ(r.issue, ReplayIssue::Clobber);
  EXPECT_EQ(r.victim, "x");
  EXPECT_EQ(r.writer, "y");
  EXPECT_EQ(r.reader_node, "b");
}

TEST_P(Replay, ViewsFollowTheirBase) {
  ModelBuilder b;
  const TensorId x = b.tensor("x", 32), y = b.tensor("y", 32);
  const TensorId v = b.alias("v", AliasKind::View, y, 16);
  const TensorId w = b.tensor("w", 32), z = b.tensor("z", 8);
  b.input(0, x);
  b.node(0, "mk", {x}, {y});
  b.node(0, "view", {y}, {v});
  b.node(0, "other", {x}, {w});
  b.node(0, "use", {v}, {z});
  b.output(0, z);
  // w takes y's bytes while the view v is still to be read.
  auto bad = replay(b.model(), placeByHand(b.model(), {{x, {1, 0}}, {y, {1, 32}}, {w, {1, 32}}, {z, {1, 64}}}));
  ASSERT_EQ(bad.issue, ReplayIssue::Clobber);
  EXPECT_EQ(bad.victim, "v");
  EXPECT_EQ(bad.writer, "w");
  EXPECT_EQ(bad.reader_node, "use");
  auto good = replay(b.model(), placeByHand(b.model(), {{x, {1, 0}}, {y, {1, 32}}, {w, {1, 64}}, {z, {1, 0}}}));
  EXPECT_TRUE(good.ok()) << good.message;
}

TEST_P(Replay, InPlaceRestampsAndShareWithKillsItsBase) {
  ModelBuilder b;
  const TensorId x = b.tensor("x", 16), y = b.tensor("y", 16);
  const TensorId y2 = b.alias("y2", AliasKind::InPlace, y);
  const TensorId s = b.alias("s", AliasKind::ShareWith, y2, 16);
  b.input(0, x);
  b.node(0, "mk", {x}, {y});
  b.node(0, "relu_", {y}, {y2});
  b.node(0, "add.out", {y2, x}, {s});
  b.output(0, s);
  const Model& m = b.model();
  auto ok = replay(m, placeByHand(m, {{x, {1, 0}}, {y, {1, 16}}, {s, {1, 16}}}));
  EXPECT_TRUE(ok.ok()) << ok.message;

  // Reading the base after the out-variant wrote into it is a clobber.
  b.node(0, "late", {y2}, {});
  auto bad = replay(m, placeByHand(m, {{x, {1, 0}}, {y, {1, 16}}, {s, {1, 16}}}));
  ASSERT_EQ(bad.issue, ReplayIssue::Clobber);
  EXPECT_EQ(bad.victim, "y2");
  EXPECT_EQ(bad.writer, "s");
  EXPECT_EQ(bad.writer_node, "add.out");
  EXPECT_EQ(bad.reader_node, "late");
}

TEST_P(Replay, MutableBufferMustSurvive) {
  ModelBuilder b;
  const TensorId x = b.tensor("x", 16), kv = b.tensor("kv", 16), y = b.tensor("y", 16);
  b.at(kv).kind = TensorKind::MutableBuffer;
  b.input(0, x);
  b.node(0, "read_state", {kv, x}, {});
  b.node(0, "f", {x}, {y});
  b.output(0, y);
  const Model& m = b.model();
  auto bad = replay(m, placeByHand(m, {{x, {1, 0}}, {kv, {1, 16}}, {y, {1, 16}}}));
  ASSERT_EQ(bad.issue, ReplayIssue::Clobber);
  EXPECT_EQ(bad.victim, "kv");
  EXPECT_EQ(bad.writer, "y");
  EXPECT_EQ(bad.reader_node, "");
  EXPECT_TRUE(replay(m, placeByHand(m, {{x, {1, 0}}, {kv, {1, 16}}, {y, {1, 32}}})).ok());
}

// main: x -> cond(then: p = f(x_outer) ; else: q = g(x_outer)) -> out
struct CondModel {
  ModelBuilder b{"cond"};
  TensorId x, keep, out, p, q;
  GraphId then_g, else_g;
  CondModel() {
    x = b.tensor("x", 16);
    keep = b.tensor("keep", 16);
    out = b.tensor("out", 16);
    b.input(0, x);
    b.node(0, "mk", {x}, {keep});
    then_g = b.subgraph(0, "then");
    else_g = b.subgraph(0, "else");
    p = b.tensor("p", 16, then_g);
    q = b.tensor("q", 16, else_g);
    b.node(then_g, "f", {x}, {p});
    b.output(then_g, p);
    b.node(else_g, "g", {x}, {q});
    b.output(else_g, q);
    b.node(0, "if", {x}, {out}, NodeKind::Cond, {then_g, else_g});
    b.node(0, "use", {keep, out}, {});
    b.output(0, out);
  }
};

TEST_P(Replay, BodiesRunInTheReservedPrefix) {
  CondModel c;
  const Model& m = c.b.model();
  // Bodies use [0, 16); the main graph keeps clear of it.
  auto ok = replay(m, placeByHand(m, {{c.p, {1, 0}}, {c.q, {1, 0}}, {c.x, {1, 16}},
                                      {c.keep, {1, 32}}, {c.out, {1, 48}}}));
  EXPECT_TRUE(ok.ok()) << ok.message;
  EXPECT_EQ(ok.steps, 5u);  // mk, if, use + one node per body

  // `keep` is alive across the cond but sits in the bodies' prefix.
  auto bad = replay(m, placeByHand(m, {{c.p, {1, 0}}, {c.q, {1, 0}}, {c.x, {1, 16}},
                                       {c.keep, {1, 0}}, {c.out, {1, 48}}}));
  ASSERT_EQ(bad.issue, ReplayIssue::Clobber);
  EXPECT_EQ(bad.victim, "keep");
  EXPECT_EQ(bad.writer, "q");  // the else branch replays last
  EXPECT_EQ(bad.writer_node, "g");
  EXPECT_EQ(bad.reader_node, "use");

  // A body output over the captured x it reads.
  auto bad2 = replay(m, placeByHand(m, {{c.p, {1, 16}}, {c.q, {1, 0}}, {c.x, {1, 16}},
                                        {c.keep, {1, 32}}, {c.out, {1, 48}}}));
  ASSERT_EQ(bad2.issue, ReplayIssue::Clobber);
  EXPECT_EQ(bad2.victim, "x");
  EXPECT_EQ(bad2.writer, "p");
  EXPECT_EQ(bad2.reader_node, "f");
}

// The replay's pieces helper and memplan::verify meet in one file (its
// namespace once had the function's name): a spec with a gap holding a
// window is three pieces, and the library verifies a plan here.
TEST(ReplayPieces, MeetTheLibraryEntryPoint) {
  Spec s;
  s.first = 0;
  s.last = 9;
  s.gaps.push_back({3, 6, std::pair<Bytes, Bytes>{8, 16}});
  std::vector<piece::Piece> out;
  piece::piecesOf(s, 32, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].first, 3);
  EXPECT_EQ(out[1].last, 5);
  EXPECT_EQ(out[1].begin, 8u);
  EXPECT_EQ(out[1].end, 16u);
  Chain c;
  const Input in = Input::fromModel(c.b.model());
  EXPECT_TRUE(verify(in, plan(in)).ok());
}

// A body run by two nodes reads `t` from outside; between the two calls `u`
// is written over `t`. Only the second call's read can find it: the
// replay steps through the body once and replays its trace the second
// time, which checks the same bytes and names the same node.
TEST_P(Replay, ABodyRunAgainChecksWhatItReads) {
  ModelBuilder b{"twice"};
  const TensorId x = b.tensor("x", 16), t = b.tensor("t", 16), u = b.tensor("u", 16);
  const TensorId o1 = b.tensor("o1", 16), o2 = b.tensor("o2", 16);
  b.input(0, x);
  const GraphId body = b.subgraph(0, "body");
  const TensorId y = b.tensor("y", 16, body);
  b.node(body, "read_t", {t}, {y});
  b.output(body, y);
  b.node(0, "mk", {x}, {t});
  b.node(0, "call1", {}, {o1}, NodeKind::Call, {body});
  b.node(0, "mk_u", {x}, {u});
  b.node(0, "call2", {}, {o2}, NodeKind::Call, {body});
  b.node(0, "use", {u, o1, o2}, {});
  b.output(0, o2);
  const Model& m = b.model();
  // The body's arena is [0, 16); the main graph's tensors after it.
  const std::map<TensorId, std::pair<MemId, Offset>> safe = {
      {y, {1, 0}}, {x, {1, 16}}, {t, {1, 32}}, {u, {1, 48}}, {o1, {1, 64}}, {o2, {1, 80}}};
  const ReplayResult ok = replay(m, placeByHand(m, safe));
  EXPECT_TRUE(ok.ok()) << ok.message;
  // Counted as a runtime runs it: mk, call1, read_t, mk_u, call2, read_t, use.
  EXPECT_EQ(ok.steps, 7u);

  auto clobbered = safe;
  clobbered[u] = {1, 32};  // over t, which call2's body still reads
  const ReplayResult bad = replay(m, placeByHand(m, clobbered));
  ASSERT_EQ(bad.issue, ReplayIssue::Clobber);
  EXPECT_EQ(bad.message,
            "replay: tensor 't' (graph 1) was clobbered at mem_id 1 offset 32: overwritten by 'u' at "
            "node 'mk_u' (graph 0, step 3), found at node 'read_t' (step 0)");
  EXPECT_EQ(bad.reader_node, "read_t");
}

// Graph i runs graph i+1 from two nodes, 40 deep: a runtime runs the last
// body 2^40 times. The replay steps through each body once and counts the
// run as a runtime would: steps(d) = 2 + 2 steps(d + 1), 2^42 - 2 in all.
TEST_P(Replay, BodiesSharedByManyNodesReplayOnce) {
  const int depth = 40;
  ModelBuilder b{"dag"};
  std::vector<GraphId> graphs = {0};
  for (int i = 1; i <= depth; ++i) graphs.push_back(b.subgraph(graphs.back(), "g" + std::to_string(i)));
  for (int i = depth; i >= 0; --i) {
    const GraphId g = graphs[static_cast<std::size_t>(i)];
    const std::string n = "g" + std::to_string(i);
    const TensorId x = b.tensor(n + ".x", 64, g), y = b.tensor(n + ".y", 64, g), z = b.tensor(n + ".z", 64, g);
    b.input(g, x);
    const bool leaf = i == depth;
    const std::vector<GraphId> sub = leaf ? std::vector<GraphId>{} : std::vector<GraphId>{graphs[i + 1]};
    const NodeKind kind = leaf ? NodeKind::Op : NodeKind::Call;
    b.node(g, n + ".a", {x}, {y}, kind, sub);
    b.node(g, n + ".b", {y}, {z}, kind, sub);
    b.output(g, z);
  }
  const Model& m = b.model();
  PlanRequest r;
  r.algorithm = "best_fit";
  const Plan plan = planModel(m, r);
  // Each graph holds y and z together at its second node (a body's input
  // is its caller's): 128 bytes, after its body's arena. 128 per level.
  EXPECT_EQ(plan.main().bufsizes, (std::vector<Bytes>{0, 128 * (depth + 1)}));
  EXPECT_TRUE(verifyPlan(plan).ok());
  ReplayOptions o;
  o.force_sparse = GetParam();
  const ReplayResult rr = replayPlan(m, plan, o);
  EXPECT_TRUE(rr.ok()) << rr.message;
  EXPECT_EQ(rr.steps, (std::uint64_t{1} << (depth + 2)) - 2);
}

TEST_P(Replay, UnplannedAndConstantTensorsAreSkipped) {
  Chain c;
  c.b.at(c.x).kind = TensorKind::Constant;
  PlanOptions o;
  o.alloc_graph_output = false;
  // Only y is planned; x and z have no allocation at all.
  const auto r = replay(c.b.model(), placeByHand(c.b.model(), {{c.y, {1, 0}}}, o));
  EXPECT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.writes, 1u);
}

TEST_P(Replay, StructuralProblems) {
  Chain c;
  const Model& m = c.b.model();
  Plan p = placeByHand(m, {{c.x, {1, 0}}, {c.y, {1, 64}}, {c.z, {1, 128}}});
  Plan out = p;
  out.graphs[0].bufsizes[1] = 150;
  EXPECT_EQ(replay(m, out).issue, ReplayIssue::OutOfArena);
  Plan shrt = p;
  shrt.graphs[0].allocations[1].size = 63;
  const auto r = replay(m, shrt);
  EXPECT_EQ(r.issue, ReplayIssue::ShortAllocation);
  EXPECT_NE(r.message.find("'y' needs 64 bytes"), std::string::npos) << r.message;
  Plan missing = p;
  missing.graphs.clear();
  EXPECT_EQ(replay(m, missing).issue, ReplayIssue::BadPlan);
  Plan nospec = p;
  nospec.graphs[0].allocations[0].spec = 99;
  EXPECT_EQ(replay(m, nospec).issue, ReplayIssue::BadPlan);
}

TEST_P(Replay, HugeArenaUsesIntervalMap) {
  ModelBuilder b;
  const Bytes big = Bytes{1} << 50;
  const TensorId x = b.tensor("x", big), y = b.tensor("y", big), z = b.tensor("z", 3);
  b.input(0, x);
  b.node(0, "a", {x}, {y});
  b.node(0, "b", {y}, {z});
  b.output(0, z);
  const Model& m = b.model();
  const auto ok = replay(m, placeByHand(m, {{x, {1, 0}}, {y, {1, big}}, {z, {1, 7}}}));
  EXPECT_TRUE(ok.ok()) << ok.message;
  EXPECT_EQ(ok.sparse_pools, 1u);
  const auto bad = replay(m, placeByHand(m, {{x, {1, 0}}, {y, {1, big}}, {z, {1, big + 5}}}));
  ASSERT_EQ(bad.issue, ReplayIssue::Clobber);
  EXPECT_EQ(bad.victim, "y");
  EXPECT_EQ(bad.offset, big + 5);
}

// ---- example models ----
TEST(ReplayModels, ExampleTfliteModelsReplayCleanAndCatchAStackedPlan) {
  const auto dir = test::modelsDir() / "selfie_segmentation";
  const auto path = dir / "selfie_segmentation.tflite";
  if (!std::filesystem::exists(path)) MEMPLAN_MISSING_DATA() << "no example models (scripts/fetch-models.sh)";
  const Model model = importTflite(test::readText(path), path.filename().string(), {});
  PlanRequest request;
  request.algorithm = "best_fit";
  Plan plan = planModel(model, request);
  const ReplayResult ok = replayPlan(model, plan);
  ASSERT_TRUE(ok.ok()) << ok.message;
  EXPECT_GT(ok.reads, 500u);
  EXPECT_EQ(ok.steps, model.main().nodes.size());
  // Every tensor at offset 0 of a big enough pool: the first read of a
  // tensor written over is caught, by both checks.
  for (Allocation& a : plan.graphs[0].allocations) a.offset = 0;
  const ReplayResult bad = replayPlan(model, plan);
  ASSERT_EQ(bad.issue, ReplayIssue::Clobber);
  EXPECT_FALSE(bad.victim.empty());
  EXPECT_NE(bad.writer, bad.victim);
  EXPECT_FALSE(bad.writer_node.empty());
  EXPECT_FALSE(bad.reader_node.empty());
  EXPECT_EQ(bad.offset, 0u);
  EXPECT_FALSE(verifyPlan(plan).ok());
}

// ---- spec lists ----
GraphPlan specPlan(const std::vector<std::tuple<Bytes, TimeValue, TimeValue, Offset>>& specs,
                   Bytes reserved = 0) {
  GraphPlan gp;
  gp.bufsizes = {0, 0};
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& [n, first, last, off] = specs[i];
    Spec s;
    s.id = static_cast<SpecId>(i);
    s.name = "s" + std::to_string(i);
    s.nbytes = n;
    s.first = first;
    s.last = last;
    s.alignment = 1;
    s.planned = true;
    gp.specs.specs.push_back(s);
    gp.allocations.push_back({s.id, 1, 0, off, n});
    gp.bufsizes[1] = std::max(gp.bufsizes[1], off + n);
  }
  PoolInfo pool;
  pool.mem_id = 1;
  pool.reserved = reserved;
  gp.pools.push_back(pool);
  return gp;
}

TEST(ReplaySpecs, ExecutorchDefectExampleOptimumIsClean) {
  // A96[0,1] B32[2,3] C32[2,10] D32[5,10] E32[5,10] packed into 96 bytes.
  auto gp = specPlan({{96, 0, 1, 0}, {32, 2, 3, 0}, {32, 2, 10, 32}, {32, 5, 10, 0}, {32, 5, 10, 64}});
  for (bool sparse : {false, true}) {
    ReplayOptions o;
    o.force_sparse = sparse;
    const auto r = replaySpecs(gp, o);
    EXPECT_TRUE(r.ok()) << r.message;
    EXPECT_EQ(r.writes, 5u);
    EXPECT_EQ(r.reads, 5u);
  }
}

TEST(ReplaySpecs, TouchingClosedLifetimesConflict) {
  // [0,3] and [3,5] overlap at step 3: same bytes is a clobber.
  const auto r = replaySpecs(specPlan({{16, 0, 3, 0}, {16, 3, 5, 8}}));
  ASSERT_EQ(r.issue, ReplayIssue::Clobber);
  EXPECT_EQ(r.victim, "s0");
  EXPECT_EQ(r.writer, "s1");
  EXPECT_EQ(r.offset, 8u);
  EXPECT_EQ(r.read_step, 3);
  EXPECT_TRUE(replaySpecs(specPlan({{16, 0, 2, 0}, {16, 3, 5, 8}})).ok());
}

TEST(ReplaySpecs, ShareWithPairMayOverlap) {
  auto gp = specPlan({{16, 0, 4, 0}, {16, 2, 6, 0}});
  EXPECT_EQ(replaySpecs(gp).issue, ReplayIssue::Clobber);
  gp.specs.specs[1].inplace_base = 0;
  EXPECT_TRUE(replaySpecs(gp).ok());
}

TEST(ReplaySpecs, ReservedPrefixMustSurvive) {
  EXPECT_TRUE(replaySpecs(specPlan({{16, 0, 4, 32}}, 32)).ok());
  const auto r = replaySpecs(specPlan({{16, 0, 4, 24}}, 32));
  ASSERT_EQ(r.issue, ReplayIssue::Clobber);
  EXPECT_EQ(r.writer, "s0");
  EXPECT_EQ(r.offset, 24u);
  EXPECT_NE(r.message.find("reserved prefix of mem_id 1"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace memplan

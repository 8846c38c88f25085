// Gaps: windows of a tensor's lifetime in which it holds no bytes, or only
// some (MiniMalloc's gaps). Read from graph JSON and CSV, carried to the
// specs in steps, checked by the verifier and the replay piece by piece —
// and the two must agree on every plan.
#include <gtest/gtest.h>

#include <cstdlib>

#include "memplan/memplan.h"
#include "support/random_graph.h"
#include "support/test_support.h"

namespace memplan {
namespace {

Gap gap(TimeValue start, TimeValue end) { return Gap{start, end, std::nullopt}; }
Gap gap(TimeValue start, TimeValue end, Bytes lo, Bytes hi) {
  return Gap{start, end, std::pair<Bytes, Bytes>{lo, hi}};
}

// x is produced by n0, read by n1 and again by n4; y and z live in between.
//   n0: in -> x      n1: x -> y      n2: y -> z      n3: z -> w      n4: x, w -> out
std::string graphWithGaps(const std::string& x_gaps) {
  return R"({"format": "memplan-graph", "version": 1, "name": "g", "tensors": [
    {"name": "in", "nbytes": 64},
    {"name": "x", "nbytes": 64)" + (x_gaps.empty() ? "" : ", \"gaps\": " + x_gaps) + R"(},
    {"name": "y", "nbytes": 64}, {"name": "z", "nbytes": 64}, {"name": "w", "nbytes": 64},
    {"name": "out", "nbytes": 64}],
  "graphs": [{"name": "main", "inputs": ["in"], "outputs": ["out"], "nodes": [
    {"name": "n0", "op": "f", "inputs": ["in"], "outputs": ["x"]},
    {"name": "n1", "op": "f", "inputs": ["x"], "outputs": ["y"]},
    {"name": "n2", "op": "f", "inputs": ["y"], "outputs": ["z"]},
    {"name": "n3", "op": "f", "inputs": ["z"], "outputs": ["w"]},
    {"name": "n4", "op": "f", "inputs": ["x", "w"], "outputs": ["out"]}]}]})";
}

std::string readError(const std::string& text) {
  try {
    readInput(text, "g.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Gaps, GraphJsonReadsWritesAndCarriesThemToSpecs) {
  const Input in = readInput(graphWithGaps(R"([{"nodes": [2, 3]}, {"nodes": [3, 4], "bytes": [0, 16]}])"),
                             "g.json");
  const Model& m = *in.model();
  EXPECT_EQ(m.tensors[1].gaps, (std::vector<Gap>{gap(2, 3), gap(3, 4, 0, 16)}));
  // The writer writes them; reading the output gives the same model.
  const std::string written = writeGraphJson(m);
  EXPECT_NE(written.find(R"("gaps":[{"nodes":[2,3]},{"nodes":[3,4],"bytes":[0,16]}])"), std::string::npos)
      << written;
  EXPECT_EQ(readGraphJson(written, "w.json").tensors[1].gaps, m.tensors[1].gaps);
  // Specs: node n is step 1 + n (one graph input comes first).
  const GraphSpecs specs = collectSpecs(m, 0, PlanOptions{});
  const Spec& x = specs.specs[specs.tensor_spec[1]];
  EXPECT_EQ(x.first, 1);
  EXPECT_EQ(x.last, 5);
  EXPECT_EQ(x.gaps, (std::vector<Gap>{gap(3, 4), gap(4, 5, 0, 16)}));
}

TEST(Gaps, GraphJsonErrorsNameTheTensorAndTheGap) {
  EXPECT_EQ(readError(graphWithGaps(R"([{"nodes": [1, 3]}])")),
            "g.json: g: graph 0 'main': node 1 'n1' uses tensor 1 'x' inside its gap 0 (nodes [1, 3))");
  EXPECT_EQ(readError(graphWithGaps(R"([{"nodes": [2, 4]}, {"nodes": [3, 4]}])")),
            "g.json: g: tensor 1 'x': gap 1 (nodes [3, 4)) overlaps or precedes the gap before it "
            "(gaps are sorted and disjoint)");
  EXPECT_EQ(readError(graphWithGaps(R"([{"nodes": [2, 9]}])")),
            "g.json: g: tensor 1 'x': gap 0 (nodes [2, 9)) is not a window of its graph's 5 nodes");
  EXPECT_EQ(readError(graphWithGaps(R"([{"nodes": [2, 3], "bytes": [8, 72]}])")),
            "g.json: g: tensor 1 'x': gap 0 (nodes [2, 3)): bytes [8, 72) are not inside its 64 bytes");
  EXPECT_EQ(readError(graphWithGaps(R"([{"nodes": [3, 3]}])")),
            "g.json: tensors[1].gaps[0].nodes: expected [from, to) with from < to, got [3,3]");
  EXPECT_EQ(readError(graphWithGaps(R"([{"nodes": [2, 3], "size": 4}])")),
            "g.json: tensors[1].gaps[0]: unknown field 'size'");
  // Its views and in-place results share its storage and its gaps: none is
  // used inside them; no other tensor may share its allocation.
  const auto aliasing = [](const std::string& gaps, const std::string& kind) {
    std::string text = graphWithGaps(gaps);
    text.replace(text.find(R"({"name": "y", "nbytes": 64})"), 27,
                 R"({"name": "y", "nbytes": 64, "alias": {"kind": ")" + kind + R"(", "of": "x"}})");
    return text;
  };
  EXPECT_EQ(readError(aliasing(R"([{"nodes": [3, 4]}])", "view")), "(no error)");
  EXPECT_EQ(readError(aliasing(R"([{"nodes": [2, 3]}])", "view")),
            "g.json: g: graph 0 'main': node 2 'n2' uses tensor 2 'y' inside its gap 0 (nodes [2, 3))");
  EXPECT_EQ(readError(aliasing(R"([{"nodes": [2, 3]}])", "inplace")),
            "g.json: g: graph 0 'main': node 2 'n2' uses tensor 2 'y' inside its gap 0 (nodes [2, 3))");
  EXPECT_EQ(readError(aliasing(R"([{"nodes": [3, 4]}])", "share")),
            "g.json: g: tensor 2 'y': shares the allocation of tensor 1 'x', which has gaps (its "
            "views and in-place results may share its storage, nothing else)");
}

TEST(Gaps, AViewSharesItsBaseGapsInTheSpecs) {
  // y views x; x holds nothing while n3 runs: one spec, steps 2..6, gap at n3.
  std::string text = graphWithGaps(R"([{"nodes": [3, 4]}])");
  text.replace(text.find(R"({"name": "y", "nbytes": 64})"), 27,
               R"({"name": "y", "nbytes": 64, "alias": {"kind": "view", "of": "x"}})");
  const Input in = readInput(text, "g.json");
  const GraphSpecs specs = collectSpecs(*in.model(), 0, PlanOptions{});
  const Spec& x = specs.specs[specs.tensor_spec[1]];
  EXPECT_EQ(specs.tensor_spec[2], specs.tensor_spec[1]);
  EXPECT_EQ(x.members, (std::vector<TensorId>{1, 2}));
  EXPECT_EQ(x.first, 1);
  EXPECT_EQ(x.last, 5);
  EXPECT_EQ(x.gaps, (std::vector<Gap>{gap(4, 5)}));
  Plan p = plan(in, {.algorithm = "best_fit"});
  EXPECT_TRUE(verify(in, p).ok());
  EXPECT_TRUE(replay(in, p).ok());
}

// Places tensor `name` of the main graph at `offset` in pool 1.
void place(Plan& p, const Input& in, const std::string& name, Offset offset) {
  GraphPlan& g = p.graphs[0];
  for (TensorId t = 0; t < static_cast<TensorId>(in.model()->tensors.size()); ++t)
    if (in.model()->tensors[t].name == name)
      for (Allocation& a : g.allocations)
        if (a.spec == g.specs.tensor_spec[t]) a.offset = offset;
}

TEST(Gaps, InAGapAnotherTensorMayUseTheBytesButNotTheWindow) {
  // x holds nothing while n2 runs and only bytes [0, 16) while n3 runs.
  const Input in = readInput(graphWithGaps(R"([{"nodes": [2, 3]}, {"nodes": [3, 4], "bytes": [0, 16]}])"),
                             "g.json");
  Plan p = plan(in, {.algorithm = "best_fit"});  // best_fit keeps all of x's bytes
  ASSERT_TRUE(verify(in, p).ok());
  p.graphs[0].bufsizes[1] = 1024;
  p.graphs[0].pools[0].size = 1024;
  place(p, in, "x", 0);
  place(p, in, "in", 512);
  place(p, in, "y", 256);
  place(p, in, "w", 128);
  place(p, in, "out", 192);
  // z lives at steps 3..4 (n2, n3): over x's bytes [16, 64) it is fine.
  place(p, in, "z", 16);
  EXPECT_TRUE(verify(in, p).ok()) << verify(in, p).violations.front().message;
  EXPECT_TRUE(replay(in, p).ok()) << replay(in, p).message;
  // Over x's window at n3, it is not.
  place(p, in, "z", 0);
  const VerifyResult v = verify(in, p);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.violations[0].message,
            "pool 1: 'z' (bytes [0, 64), steps [3, 4]) and 'x' (bytes [0, 16), steps [4, 4]) are alive "
            "at the same time and share bytes");
  // x's window is written anew when n3 starts, over z, which n3 then reads.
  const ReplayResult r = replay(in, p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.victim, "z");
  EXPECT_EQ(r.writer, "x");
  // Without gaps, z anywhere over x is refused.
  const Input plain = readInput(graphWithGaps(""), "g.json");
  Plan q = plan(plain, {.algorithm = "best_fit"});
  q.graphs[0].bufsizes[1] = 1024;
  q.graphs[0].pools[0].size = 1024;
  for (const auto& [name, offset] : std::vector<std::pair<std::string, Offset>>{
           {"x", 0}, {"in", 512}, {"y", 256}, {"w", 128}, {"out", 192}, {"z", 16}})
    place(q, plain, name, offset);
  EXPECT_FALSE(verify(plain, q).ok());
  EXPECT_FALSE(replay(plain, q).ok());
}

TEST(Gaps, CsvGapsAreCheckedAsMiniMallocsValidatorDoes) {
  const Input in = Input::fromBuffers(
      readMiniMallocCsv("id,lower,upper,size,gaps\na,0,10,2,0-5@0:1\nb,0,10,2,5-10@1:2\n", "t.csv"));
  const auto check = [&](Offset a, Offset b) {
    const std::string sol = "id,lower,upper,size,offset\na,0,10,2," + std::to_string(a) + "\nb,0,10,2," +
                            std::to_string(b) + "\n";
    const Plan p = readPlan(sol, "sol.csv", in);
    const bool ok = verify(in, p).ok();
    EXPECT_EQ(ok, replay(in, p).ok()) << a << "," << b;
    return ok;
  };
  EXPECT_TRUE(check(0, 1));   // MiniMalloc's Tetris
  EXPECT_FALSE(check(0, 0));
  EXPECT_FALSE(check(1, 0));  // a's full bytes [1, 3) meet b's [0, 2) in [0, 5)
}

std::uint64_t rounds(std::uint64_t fallback) {
  if (const char* env = std::getenv("MEMPLAN_PROPERTY_GRAPHS")) return std::strtoull(env, nullptr, 10) / 4 + 1;
  return fallback;
}

// Random chains whose tensors are read again later, with gaps between their
// uses (some with windows); plans disturbed at random. Verify and replay
// must give the same verdict every time.
TEST(Gaps, VerifyAndReplayAgreeOnRandomModelsWithGaps) {
  std::uint64_t checked = 0, rejected = 0, disagree = 0;
  for (std::uint64_t seed = 0; seed < rounds(300); ++seed) {
    test::Rng rng(seed * 7919 + 1);
    test::ModelBuilder b("gaps");
    const int nodes = static_cast<int>(rng.range(4, 16));
    std::vector<TensorId> tensors = {b.tensor("in", 16 * rng.range(1, 8))};
    b.input(0, tensors[0]);
    std::vector<std::vector<int>> uses(1, std::vector<int>{});
    for (int n = 0; n < nodes; ++n) {
      std::vector<TensorId> ins;
      for (int k = 0, m = static_cast<int>(rng.range(1, 2)); k < m; ++k) {
        const auto pick = static_cast<std::size_t>(rng.below(tensors.size()));
        ins.push_back(tensors[pick]);
        uses[pick].push_back(n);
      }
      const TensorId out = b.tensor("t" + std::to_string(n), 16 * rng.range(1, 8));
      b.node(0, "n" + std::to_string(n), ins, {out});
      tensors.push_back(out);
      uses.push_back({n});
    }
    b.output(0, tensors.back());
    // Gaps between consecutive uses (the graph input's first use counts).
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      std::vector<int>& u = uses[i];
      std::sort(u.begin(), u.end());
      Tensor& t = b.at(tensors[i]);
      for (std::size_t k = 1; k < u.size(); ++k) {
        if (u[k] - u[k - 1] < 2 || !rng.chance(0.6)) continue;
        Gap g{u[k - 1] + 1, u[k], std::nullopt};
        if (rng.chance(0.5)) {
          const Bytes lo = rng.below(t.nbytes + 1), hi = lo + rng.below(t.nbytes - lo + 1);
          g.window = std::pair<Bytes, Bytes>{lo, hi};
        }
        t.gaps.push_back(g);
      }
    }
    const Input in = Input::fromModel(b.model());
    PlanRequest request;
    request.algorithm = "best_fit";
    Plan p = plan(in, request);
    for (int round = 0; round < 4; ++round) {
      if (round > 0) {
        GraphPlan& gp = p.graphs[0];
        Allocation& a = gp.allocations[rng.below(gp.allocations.size())];
        const Bytes pool = gp.bufsizes[a.mem_id];
        if (pool <= a.size) continue;
        a.offset = rng.below((pool - a.size) / 16 + 1) * 16;
      }
      const VerifyResult v = verify(in, p);
      const ReplayResult r = replay(in, p);
      if (round == 0) {  // the plan as best_fit made it: both must accept it
        EXPECT_TRUE(v.ok()) << "seed " << seed << ": " << (v.ok() ? "" : v.violations[0].message);
        EXPECT_TRUE(r.ok()) << "seed " << seed << ": " << r.message;
        continue;
      }
      ++checked;
      rejected += !v.ok();
      if (v.ok() != r.ok() && disagree++ < 5)
        ADD_FAILURE() << "seed " << seed << " round " << round << ": verifier "
                      << (v.ok() ? "accepts" : "rejects: " + v.violations[0].message) << "; replay "
                      << (r.ok() ? "accepts" : "rejects: " + r.message);
    }
  }
  EXPECT_EQ(disagree, 0u);
  EXPECT_GT(rejected, checked / 20);
  EXPECT_LT(rejected, checked);
}

// The same for buffer lists (the spec-list replay).
TEST(Gaps, VerifyAndReplayAgreeOnRandomBufferListsWithGaps) {
  std::uint64_t checked = 0, rejected = 0, disagree = 0;
  for (std::uint64_t seed = 0; seed < rounds(300); ++seed) {
    test::Rng rng(seed * 104729 + 3);
    std::string text = "id,lower,upper,size,gaps\n";
    const int n = static_cast<int>(rng.range(2, 12));
    for (int i = 0; i < n; ++i) {
      const TimeValue lo = rng.range(0, 10), hi = lo + rng.range(1, 10);
      const Bytes size = rng.range(1, 64);
      std::string gaps;
      for (TimeValue t = lo + 1; t + 1 < hi; t += rng.range(2, 4)) {
        if (!rng.chance(0.5)) continue;
        const TimeValue end = std::min<TimeValue>(hi, t + rng.range(1, 2));
        gaps += (gaps.empty() ? "" : " ") + std::to_string(t) + "-" + std::to_string(end);
        if (rng.chance(0.5)) {
          const Bytes a = rng.below(size + 1), c = a + rng.below(size - a + 1);
          gaps += "@" + std::to_string(a) + ":" + std::to_string(c);
        }
        t = end;
      }
      text += "b" + std::to_string(i) + "," + std::to_string(lo) + "," + std::to_string(hi) + "," +
              std::to_string(size) + "," + gaps + "\n";
    }
    const Input in = Input::fromBuffers(readMiniMallocCsv(text, "r.csv"));
    Plan p = plan(in, {.algorithm = "best_fit"});
    for (int round = 0; round < 4; ++round) {
      if (round > 0) {
        GraphPlan& gp = p.graphs[0];
        Allocation& a = gp.allocations[rng.below(gp.allocations.size())];
        const Bytes pool = gp.bufsizes[1];
        if (pool <= a.size) continue;
        a.offset = rng.below(pool - a.size + 1);
      }
      const VerifyResult v = verify(in, p);
      const ReplayResult r = replay(in, p);
      if (round == 0) {  // the plan as best_fit made it: both must accept it
        EXPECT_TRUE(v.ok()) << text << (v.ok() ? "" : v.violations[0].message);
        EXPECT_TRUE(r.ok()) << text << r.message;
        continue;
      }
      ++checked;
      rejected += !v.ok();
      if (v.ok() != r.ok() && disagree++ < 5)
        ADD_FAILURE() << text << "round " << round << ": verifier "
                      << (v.ok() ? "accepts" : "rejects: " + v.violations[0].message) << "; replay "
                      << (r.ok() ? "accepts" : "rejects: " + r.message);
    }
  }
  EXPECT_EQ(disagree, 0u);
  EXPECT_GT(rejected, checked / 20);
}

}  // namespace
}  // namespace memplan

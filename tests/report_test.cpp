// Report and progress line on hand-made plans: exact numbers, peak step and
// the tensors live there.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/progress.h"
#include "memplan/report.h"

namespace memplan {
namespace {

// x -> conv -> a -> relu -> b; add(a, b) -> y.  Steps: 0 placeholder x,
// 1 conv, 2 relu, 3 add, 4 output.  Live bytes per step: 256, 1280, 3072,
// 3584, 512: the peak is step 3 ("add"), where a, b and y are live.
struct Tiny {
  Model model;
  Plan plan;
};

Tensor tensor(const std::string& name, std::int64_t n) {
  Tensor t;
  t.name = name;
  t.shape = {1, n};
  t.dtype = DType::Float32;
  t.nbytes = static_cast<Bytes>(n) * 4;
  return t;
}

Tiny makeTiny() {
  Tiny t;
  t.model.name = "tiny.onnx";
  t.model.tensors = {tensor("x", 64), tensor("a", 256), tensor("b", 512), tensor("y", 128)};
  Graph g;
  g.name = "main";
  g.inputs = {0};
  g.outputs = {3};
  g.nodes = {{"conv1", "Conv", NodeKind::Op, {0}, {1}, {}},
             {"relu1", "Relu", NodeKind::Op, {1}, {2}, {}},
             {"add1", "Add", NodeKind::Op, {1, 2}, {3}, {}}};
  t.model.graphs = {g};

  GraphPlan gp;
  gp.specs.graph = 0;
  gp.specs.steps = 5;
  const TimeValue first[] = {0, 1, 2, 3}, last[] = {1, 3, 3, 4};
  const Offset offsets[] = {0, 2048, 0, 3072};
  for (int i = 0; i < 4; ++i) {
    Spec s;
    s.id = i;
    s.tensor = i;
    s.members = {i};
    s.nbytes = t.model.tensors[i].nbytes;
    s.first = first[i];
    s.last = last[i];
    s.is_input = i == 0;
    s.is_output = i == 3;
    s.planned = true;
    s.name = t.model.tensors[i].name;
    gp.specs.specs.push_back(s);
    gp.specs.tensor_spec.set(i, i);
    gp.allocations.push_back({i, 1, 0, offsets[i], s.nbytes});
  }
  gp.bufsizes = {0, 3584};
  PoolInfo pool;
  pool.mem_id = 1;
  pool.size = 3584;
  pool.lower_bound = 3584;
  pool.naive_size = 3840;
  pool.buffers = 4;
  pool.algorithm = "greedy";
  pool.proven_optimal = true;
  gp.pools = {pool};
  gp.pool_devices = {Device{}, Device{}};
  t.plan.graphs = {gp};
  t.plan.algorithm = "auto";
  t.plan.planning_seconds = 0.25;
  return t;
}

TEST(FormatBytes, HumaneUnitsAndExact) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1024), "1.0 KiB");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(1048575), "1.0 MiB");  // rounds into the next unit
  EXPECT_EQ(formatBytes(12896256), "12.3 MiB");
  EXPECT_EQ(formatBytes(Bytes{3} << 30), "3.0 GiB");
  EXPECT_EQ(formatBytes(12896256, true), "12.3 MiB (12896256 B)");
  EXPECT_EQ(formatBytes(100, true), "100 B");
}

TEST(FormatSaving, AgainstNaive) {
  EXPECT_EQ(formatSaving(3584, 3840), "3.5 KiB instead of 3.8 KiB, -6.7%");
  EXPECT_EQ(formatSaving(Bytes{1} << 20, Bytes{4} << 20), "1.0 MiB instead of 4.0 MiB, -75.0%");
  EXPECT_EQ(formatSaving(0, 0), "0 B instead of 0 B, +0.0%");
}

TEST(Report, PeakAndLargestTensors) {
  const Tiny t = makeTiny();
  const auto pools = analyzePlan(t.plan, &t.model, {});
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0].peak_step, 3);
  EXPECT_EQ(pools[0].peak_live, 3584u);
  EXPECT_EQ(pools[0].peak_node, "add1");
  EXPECT_EQ(pools[0].peak_op, "Add");
  ASSERT_EQ(pools[0].top.size(), 3u);
  EXPECT_EQ(pools[0].top[0].name, "b");
  EXPECT_EQ(pools[0].top[0].op, "Relu");
  EXPECT_EQ(pools[0].top[0].shape, "1x512");
  EXPECT_EQ(pools[0].top[0].dtype, "float32");
  EXPECT_EQ(pools[0].top[1].name, "a");
  EXPECT_EQ(pools[0].top[2].name, "y");
  EXPECT_EQ(pools[0].top[2].bytes, 512u);

  ReportOptions two;
  two.top_tensors = 2;
  EXPECT_EQ(analyzePlan(t.plan, &t.model, two)[0].top.size(), 2u);
}

TEST(Report, TextIsExact) {
  const Tiny t = makeTiny();
  ReportOptions opt;
  opt.include_timing = false;
  const std::string expected =
      "memplan: tiny.onnx, algorithm auto\n"
      "graph  pool  device    arena  lower bound  ratio  optimal    naive  saving  algorithm  tensors\n"
      "main      1  cpu:0   3.5 KiB      3.5 KiB  1.000  yes      3.8 KiB   -6.7%  greedy           4\n"
      "\n"
      "main pool 1: 3.5 KiB instead of 3.8 KiB, -6.7%\n"
      "  peak at step 3 (add1 Add): 3.5 KiB live\n"
      "    tensor  op    shape  dtype      bytes  offset  lifetime\n"
      "    b       Relu  1x512  float32  2.0 KiB       0  2..3\n"
      "    a       Conv  1x256  float32  1.0 KiB    2048  1..3\n"
      "    y       Add   1x128  float32    512 B    3072  3..4\n";
  EXPECT_EQ(formatReport(t.plan, &t.model, opt), expected);

  opt.include_timing = true;
  opt.exact_bytes = true;
  const std::string text = formatReport(t.plan, &t.model, opt);
  EXPECT_NE(text.find("planned in 0.25 s"), std::string::npos) << text;
  EXPECT_NE(text.find("3.5 KiB (3584 B) instead of 3.8 KiB (3840 B), -6.7%"), std::string::npos)
      << text;
}

TEST(Report, WithoutModelUsesSpecNames) {
  const Tiny t = makeTiny();
  ReportOptions opt;
  opt.include_timing = false;
  const std::string text = formatReport(t.plan, nullptr, opt);
  EXPECT_NE(text.find("  peak at step 3: 3.5 KiB live\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    tensor    bytes  offset  lifetime\n"
                      "    b       2.0 KiB       0  2..3\n"),
            std::string::npos)
      << text;
}

TEST(Report, JsonCarriesTheSameFacts) {
  const Tiny t = makeTiny();
  ReportOptions opt;
  opt.include_timing = false;
  const auto doc = nlohmann::json::parse(formatReportJson(t.plan, &t.model, opt));
  EXPECT_FALSE(doc.contains("planning_seconds"));
  EXPECT_EQ(doc["model"], "tiny.onnx");
  EXPECT_EQ(doc["main_arena_bytes"], 3584);
  ASSERT_EQ(doc["pools"].size(), 1u);
  const auto& p = doc["pools"][0];
  EXPECT_EQ(p["arena_bytes"], 3584);
  EXPECT_EQ(p["lower_bound_bytes"], 3584);
  EXPECT_EQ(p["naive_bytes"], 3840);
  EXPECT_EQ(p["saving_bytes"], 256);
  EXPECT_DOUBLE_EQ(p["change_percent"].get<double>(), -6.7);
  EXPECT_DOUBLE_EQ(p["ratio"].get<double>(), 1.0);
  EXPECT_EQ(p["proven_optimal"], true);
  EXPECT_EQ(p["peak"]["step"], 3);
  EXPECT_EQ(p["peak"]["node"], "add1");
  ASSERT_EQ(p["peak"]["top_tensors"].size(), 3u);
  EXPECT_EQ(p["peak"]["top_tensors"][0]["name"], "b");
  EXPECT_EQ(p["peak"]["top_tensors"][0]["shape"], nlohmann::json({1, 512}));
  EXPECT_EQ(p["peak"]["top_tensors"][0]["bytes"], 2048);

  opt.include_timing = true;
  EXPECT_TRUE(nlohmann::json::parse(formatReportJson(t.plan, &t.model, opt))
                  .contains("planning_seconds"));
  // No model: shapes are unknown, not invented.
  const auto bare = nlohmann::json::parse(formatReportJson(t.plan, nullptr, opt));
  EXPECT_TRUE(bare["model"].is_null());
  EXPECT_TRUE(bare["pools"][0]["peak"]["top_tensors"][0]["shape"].is_null());
}

// The header names the input whatever its kind: a spec list or a CSV
// buffer list has no model, but it has a file (it used to read "memplan,
// algorithm auto").
TEST(Report, HeaderNamesTheInputWithoutAModel) {
  Tiny t = makeTiny();
  ReportOptions opt;
  opt.include_timing = false;
  EXPECT_EQ(formatReport(t.plan, nullptr, opt).rfind("memplan, algorithm auto\n", 0), 0u);
  t.plan.source.name = "cases/buffers.csv";
  EXPECT_EQ(formatReport(t.plan, nullptr, opt).rfind("memplan: cases/buffers.csv, algorithm auto\n", 0), 0u);
  // The file names the input even when the model has a name of its own.
  EXPECT_EQ(formatReport(t.plan, &t.model, opt).rfind("memplan: cases/buffers.csv, algorithm auto\n", 0), 0u);
  auto doc = nlohmann::json::parse(formatReportJson(t.plan, nullptr, opt));
  EXPECT_EQ(doc["input"], "cases/buffers.csv");
  EXPECT_TRUE(doc["model"].is_null());
  // `memplan report INPUT PLAN` names the input as given this time.
  opt.input_name = "buffers.csv";
  EXPECT_EQ(formatReport(t.plan, nullptr, opt).rfind("memplan: buffers.csv, algorithm auto\n", 0), 0u);
  EXPECT_EQ(nlohmann::json::parse(formatReportJson(t.plan, nullptr, opt))["input"], "buffers.csv");
  t.plan.source.name.clear();
  opt.input_name.clear();
  EXPECT_TRUE(nlohmann::json::parse(formatReportJson(t.plan, nullptr, opt))["input"].is_null());
}

// Optimal means the same in every view: an arena at its lower bound is
// optimal whether or not a search said so (a plan carried by a file has no
// search), and one above it is not.
TEST(Report, OptimalWhenTheArenaMeetsTheBound) {
  Tiny t = makeTiny();
  t.plan.graphs[0].pools[0].proven_optimal = false;  // as a carried plan has it
  ReportOptions opt;
  opt.include_timing = false;
  const std::string row = "main      1  cpu:0   3.5 KiB      3.5 KiB  1.000  yes      3.8 KiB";
  EXPECT_NE(formatReport(t.plan, &t.model, opt).find(row), std::string::npos)
      << formatReport(t.plan, &t.model, opt);
  EXPECT_EQ(nlohmann::json::parse(formatReportJson(t.plan, &t.model, opt))["pools"][0]["proven_optimal"], true);
  EXPECT_NE(renderHtml(t.plan, &t.model, {}).find("\"optimal\":true"), std::string::npos);
  t.plan.graphs[0].pools[0].lower_bound = 3072;
  EXPECT_NE(formatReport(t.plan, &t.model, opt).find("3.5 KiB      3.0 KiB  1.167  no "), std::string::npos)
      << formatReport(t.plan, &t.model, opt);
  EXPECT_EQ(nlohmann::json::parse(formatReportJson(t.plan, &t.model, opt))["pools"][0]["proven_optimal"], false);
}

// The viewer's page carries the peak the report names and the steps that
// only produce constants (which it folds).
TEST(Report, ViewerDataHasThePeakAndTheConstantSteps) {
  Tiny t = makeTiny();
  std::string page = renderHtml(t.plan, &t.model, {});
  EXPECT_NE(page.find("\"peak_live\":3584,\"peak_step\":3"), std::string::npos);
  EXPECT_NE(page.find("\"constant_steps\":[]"), std::string::npos);
  // A weight made by a Constant node just before the add: step 3 only
  // produces a constant; the add moves to step 4.
  Tensor w = tensor("w", 8);
  w.kind = TensorKind::Constant;
  t.model.tensors.push_back(w);
  t.model.graphs[0].nodes.insert(t.model.graphs[0].nodes.begin() + 2,
                                 Node{"w_const", "Constant", NodeKind::Op, {}, {4}, {}});
  t.model.graphs[0].nodes[3].inputs.push_back(4);
  page = renderHtml(t.plan, &t.model, {});
  EXPECT_NE(page.find("\"constant_steps\":[3]"), std::string::npos);
  // Views and in-place results are found by their own names too.
  t.plan.graphs[0].specs.specs[2].members = {2, 4};
  page = renderHtml(t.plan, &t.model, {});
  EXPECT_NE(page.find("\"aka\":[\"\",\"\",\"w\",\"\"]"), std::string::npos);
}

TEST(Report, ReservedPrefixAndBodies) {
  Tiny t = makeTiny();
  t.plan.graphs[0].pools[0].reserved = 1024;
  GraphPlan body;
  body.graph = 1;
  body.specs.graph = 1;
  body.specs.steps = 2;
  Spec s;
  s.name = "tmp";
  s.first = 0;
  s.last = 1;
  s.planned = true;
  body.specs.specs = {s};
  body.allocations = {{0, 1, 0, 0, 1024}};
  PoolInfo p;
  p.mem_id = 1;
  p.size = 1024;
  p.lower_bound = 1024;
  p.naive_size = 1024;
  p.buffers = 1;
  body.pools = {p};
  t.plan.graphs.push_back(body);
  ReportOptions opt;
  opt.include_timing = false;
  const std::string text = formatReport(t.plan, nullptr, opt);
  EXPECT_NE(text.find("  peak at step 3: 3.5 KiB live + 1.0 KiB reserved for control-flow bodies\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("\ngraph 1 pool 1: 1.0 KiB instead of 1.0 KiB, +0.0%\n"), std::string::npos) << text;
  EXPECT_EQ(analyzePlan(t.plan, nullptr, opt).size(), 2u);
  opt.include_subgraphs = false;
  EXPECT_EQ(analyzePlan(t.plan, nullptr, opt).size(), 1u);
  // JSON totals count the main graph only.
  EXPECT_EQ(nlohmann::json::parse(formatReportJson(t.plan, nullptr, opt))["main_arena_bytes"], 3584);
}

TEST(Report, EmptyPlanSaysSo) {
  Plan plan;
  plan.graphs.resize(1);
  ReportOptions opt;
  opt.include_timing = false;
  EXPECT_EQ(formatReport(plan, nullptr, opt), "memplan, algorithm -\nno planned tensors\n");
}

TEST(Report, BadUtf8NamesAreSanitized) {
  Tiny t = makeTiny();
  t.model.tensors[2].name = "b\xff\x01";
  t.plan.graphs[0].specs.specs[2].name = "b\xff\x01";
  ReportOptions opt;
  opt.include_timing = false;
  const std::string json = formatReportJson(t.plan, &t.model, opt);  // must not throw
  EXPECT_NE(json.find("b\xef\xbf\xbd?"), std::string::npos);
}

// ---- progress line ----

struct FakeClock {
  double now = 0;
};

TEST(Progress, ThrottledDelayedAndCleared) {
  FakeClock clock;
  std::string out;
  ProgressOptions opt;
  opt.force = true;
  opt.clock = [&] { return clock.now; };
  opt.write = [&](std::string_view s) { out += s; };
  {
    ProgressLine line(opt);
    auto cb = line.callback();
    clock.now = 0.5;
    cb("best 1.0 MiB");  // too early: search has run under a second
    EXPECT_EQ(out, "");
    clock.now = 1.2;
    cb("best 1.0 MiB");
    EXPECT_EQ(out, "\r[memplan] best 1.0 MiB, 1.2 s\x1b[K");
    clock.now = 1.3;
    cb("best 0.9 MiB");  // within 0.25 s of the last line: dropped
    EXPECT_EQ(out, "\r[memplan] best 1.0 MiB, 1.2 s\x1b[K");
    clock.now = 2.1;
    cb("best 0.9 MiB");
    EXPECT_EQ(out, "\r[memplan] best 1.0 MiB, 1.2 s\x1b[K\r[memplan] best 0.9 MiB, 2.1 s\x1b[K");
    out.clear();
  }
  EXPECT_EQ(out, "\r\x1b[K");  // cleared at the end
}

TEST(Progress, SilentWhenNotATerminal) {
  std::string out;
  ProgressOptions opt;
  opt.force = false;
  opt.fd = -1;  // never a terminal
  opt.clock = [] { return 5.0; };
  opt.write = [&](std::string_view s) { out += s; };
  {
    ProgressLine line(opt);
    line.callback()("best 1.0 MiB");
  }
  EXPECT_EQ(out, "");
}

TEST(Progress, StatusText) {
  EXPECT_EQ(progressStatus(Bytes{1} << 20, 1044381), "best 1.0 MiB, +0.4% over bound");
  EXPECT_EQ(progressStatus(1000, 1000), "best 1000 B, at the bound");
  EXPECT_EQ(progressStatus(1000, 0), "best 1000 B");
}

}  // namespace
}  // namespace memplan

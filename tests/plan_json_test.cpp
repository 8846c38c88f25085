// Plan JSON: writing, reading back onto the input's specs, errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>


#include "memplan/io.h"
#include "memplan/plan.h"
#include "memplan/verify.h"
#include "support/test_support.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

Spec spec(SpecId id, const std::string& name, TimeValue first, TimeValue last, Bytes nbytes) {
  Spec s;
  s.id = id;
  s.name = name;
  s.first = first;
  s.last = last;
  s.nbytes = nbytes;
  s.planned = true;
  return s;
}

// Two graphs; "dup" names two specs, so those are written by spec index.
Plan handPlan() {
  Plan plan;
  plan.algorithm = "greedy";
  plan.options.alignment = 8;
  plan.options.capacities = {std::nullopt, Bytes{4096}};
  plan.options.spill_order = {2};
  plan.planning_seconds = 0.1234567;
  GraphPlan g;
  g.graph = 0;
  g.specs.steps = 5;
  g.specs.specs = {spec(0, "x", 0, 2, 10), spec(1, "y", 1, 3, 16), spec(2, "dup", 3, 4, 8),
                   spec(3, "dup", 0, 0, 8)};
  g.bufsizes = {0, 40};
  g.pool_devices = {Device{}, Device{"cpu", 0}};
  g.allocations = {{0, 1, 0, 0, 16}, {1, 1, 1, 16, 16}, {2, 1, 0, 0, 8}, {3, 1, 2, 32, 8}};
  PoolInfo p;
  p.mem_id = 1;
  p.size = 40;
  p.lower_bound = 32;
  p.naive_size = 48;
  p.buffers = 4;
  p.algorithm = "greedy";
  p.work = 7;
  g.pools = {p};
  plan.graphs.push_back(g);
  GraphPlan body;
  body.graph = 1;
  body.specs.specs = {spec(0, "", 0, 1, 4)};
  body.bufsizes = {0, 16};
  body.pool_devices = {Device{}, Device{"npu", 1}};
  body.allocations = {{0, 1, 0, 0, 16}};
  plan.graphs.push_back(body);
  return plan;
}

// The input's view of the same plan: specs only.
Plan skeletonOf(const Plan& plan) {
  Plan s;
  s.options = plan.options;
  for (const GraphPlan& g : plan.graphs) {
    GraphPlan e;
    e.graph = g.graph;
    e.specs = g.specs;
    s.graphs.push_back(e);
  }
  return s;
}

TEST(PlanJson, WritesFixedLayout) {
  const std::string text = writePlanJson(handPlan(), nullptr);
  EXPECT_EQ(text.rfind("{\n  \"format\": \"memplan-plan\",\n  \"version\": 4,\n"
                       "  \"source\": {\"name\":\"\",\"size\":0,\"sha256\":\"\"},\n"
                       "  \"import_options\": {\"input_shapes\":{},\"dims\":{},\"alias_views\":false,"
                       "\"unknown_size_bytes\":0},\n"
                       "  \"algorithm\": \"greedy\",\n"
                       "  \"options\": {\"alloc_graph_input\":true,\"alloc_graph_output\":true,"
                       "\"alloc_mutable_buffers\":true,\"alignment\":8,\"per_device\":false,"
                       "\"share_mutable_buffers\":false,\"capacities\":[null,4096],\"spill_order\":[2],\"extra_padding\":0},\n"
                       "  \"search\": {\"effort\":1.0,\"time_limit_seconds\":0.0,"
                       "\"seed\":30792293173453166},\n"
                       "  \"planning_seconds\": 0.123457,\n"
                       "  \"bufsizes\": [0,40],\n"
                       "  \"allocations\": [\n"
                       "    {\"id\":\"x\",\"mem_id\":1,\"mem_obj_id\":0,\"mem_offset\":0,\"size\":16,"
                       "\"lifetime\":[0,2]},\n",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("{\"id\":null,\"spec\":3,\"mem_id\":1,\"mem_obj_id\":2,\"mem_offset\":32,"
                      "\"size\":8,\"lifetime\":[0,0]}"),
            std::string::npos);
  EXPECT_NE(text.find("{\"mem_id\":1,\"device\":\"cpu:0\",\"size\":40,\"lower_bound\":32,"
                      "\"ratio\":1.25,\"naive_size\":48,\"reserved\":0,\"buffers\":4,"
                      "\"algorithm\":\"greedy\",\"proven_optimal\":false,\"work\":7}"),
            std::string::npos);
  EXPECT_NE(text.find("\"pool_devices\": [\"cpu:0\",\"npu:1\"]"), std::string::npos);
  const json parsed = json::parse(text);  // valid JSON
  EXPECT_EQ(parsed["graphs"].size(), 2u);
  EXPECT_EQ(parsed["allocations"], parsed["graphs"][0]["allocations"]);
}

TEST(PlanJson, TimingCanBeLeftOut) {
  const Plan plan = handPlan();
  const std::string with = writePlanJson(plan, nullptr);
  const std::string without = writePlanJson(plan, nullptr, PlanJsonOptions{false});
  EXPECT_NE(with.find("planning_seconds"), std::string::npos);
  EXPECT_EQ(without.find("planning_seconds"), std::string::npos);
  Plan slower = plan;
  slower.planning_seconds = 99;
  EXPECT_EQ(writePlanJson(slower, nullptr, PlanJsonOptions{false}), without);
  EXPECT_NE(writePlanJson(slower, nullptr), with);
}

TEST(PlanJson, ReadsBackOntoTheSkeleton) {
  const Plan plan = handPlan();
  const std::string text = writePlanJson(plan, nullptr);
  // The input lists its specs in another order: ids still match them up.
  Plan skeleton = skeletonOf(plan);
  std::swap(skeleton.graphs[0].specs.specs[0], skeleton.graphs[0].specs.specs[1]);
  skeleton.graphs[0].specs.specs[0].id = 0;
  skeleton.graphs[0].specs.specs[1].id = 1;
  const Plan back = readPlanJson(text, "p.json", skeleton);
  EXPECT_EQ(back.algorithm, "greedy");
  EXPECT_DOUBLE_EQ(back.planning_seconds, 0.123457);
  EXPECT_EQ(back.options.alignment, 8u);
  EXPECT_EQ(back.options.capacities, plan.options.capacities);
  EXPECT_EQ(back.options.spill_order, plan.options.spill_order);
  ASSERT_EQ(back.graphs.size(), 2u);
  const GraphPlan& g = back.graphs[0];
  EXPECT_EQ(g.bufsizes, (std::vector<Bytes>{0, 40}));
  ASSERT_EQ(g.allocations.size(), 4u);
  // Sorted by spec: spec 0 is now "y" (offset 16), spec 1 is "x" (offset 0).
  EXPECT_EQ(g.allocations[0].spec, 0);
  EXPECT_EQ(g.allocations[0].offset, 16u);
  EXPECT_EQ(g.allocations[0].mem_obj_id, 1);
  EXPECT_EQ(g.allocations[1].spec, 1);
  EXPECT_EQ(g.allocations[1].offset, 0u);
  EXPECT_EQ(g.allocations[3].spec, 3);
  EXPECT_EQ(g.allocations[3].offset, 32u);
  EXPECT_EQ(g.allocations[3].size, 8u);
  ASSERT_EQ(g.pools.size(), 1u);
  EXPECT_EQ(g.pools[0].lower_bound, 32u);
  EXPECT_EQ(g.pools[0].naive_size, 48u);
  EXPECT_EQ(g.pools[0].work, 7u);
  EXPECT_EQ(back.graphs[1].pool_devices[1], (Device{"npu", 1}));
  EXPECT_EQ(back.graphs[1].allocations.size(), 1u);
  // Same input order: writing the read plan gives the same bytes.
  EXPECT_EQ(writePlanJson(readPlanJson(text, "p.json", skeletonOf(plan)), nullptr), text);
  EXPECT_EQ(readPlanProvenance(text, "p.json").request.options.spill_order, std::vector<MemId>{2});
}

std::string errorOf(const std::string& text, const Plan& skeleton) {
  try {
    readPlanJson(text, "p.json", skeleton);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// Replaces every occurrence (the main graph's allocations appear twice).
std::string replace(std::string s, const std::string& from, const std::string& to) {
  if (s.find(from) == std::string::npos) return "(pattern not found: " + from + ")";
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

TEST(PlanJson, ErrorsNameFileAndField) {
  const Plan plan = handPlan();
  const Plan sk = skeletonOf(plan);
  const std::string t = writePlanJson(plan, nullptr);
  EXPECT_EQ(errorOf(t, sk), "(no error)");
  EXPECT_EQ(errorOf("{\"format\": \"memplan-plan\",\n\"version\": 1,,}", sk),
            "p.json:2:14: JSON syntax error: syntax error while parsing object key - unexpected "
            "','; expected string literal");
  EXPECT_EQ(errorOf(replace(t, "memplan-plan", "memplan-graph"), sk),
            "p.json: format: expected \"memplan-plan\"");
  EXPECT_EQ(errorOf(replace(t, "\"version\": 4", "\"version\": 5"), sk),
            "p.json: version: 5 is not supported (this memplan reads versions 1 to 4)");
  EXPECT_EQ(errorOf(replace(t, "\"graph\": 1", "\"graph\": 5"), sk),
            "p.json: graphs[1].graph: must equal the graph's position 1");
  Plan one = sk;
  one.graphs.pop_back();
  EXPECT_EQ(errorOf(t, one), "p.json: graphs: the plan has 2 graphs, the input 1");
  Plan no_inputs = sk;
  no_inputs.options.alloc_graph_input = false;
  EXPECT_EQ(errorOf(t, no_inputs),
            "p.json: options.alloc_graph_input: the plan was made with true, the check with "
            "false");
  Plan renamed = sk;
  renamed.graphs[0].specs.specs[0].name = "z";
  EXPECT_EQ(errorOf(t, renamed), "p.json: graphs[0].allocations[0].id: no tensor 'x' in graph 0 of the input");
  EXPECT_EQ(errorOf(replace(t, "\"mem_offset\":16", "\"mem_offset\":-16"), sk),
            "p.json: graphs[0].allocations[1].mem_offset: expected a non-negative integer, got "
            "an integer -16");
  EXPECT_EQ(errorOf(replace(t, "\"spec\":3,", ""), sk),
            "p.json: graphs[0].allocations[3]: 'id' is null and 'spec' is missing");
  EXPECT_EQ(errorOf(replace(t, "\"spec\":3,", "\"spec\":1,"), sk),
            "p.json: graphs[0].allocations[3].spec: spec 1 of the input has no unnamed tensor there");
  EXPECT_EQ(errorOf(replace(t, "\"mem_id\":1,\"device\"", "\"mem_id\":2,\"device\""), sk),
            "p.json: graphs[0].pools[0].mem_id: 2 is not a pool of bufsizes (1 to 1)");
  EXPECT_EQ(errorOf(replace(t, "\"size\":16,\"lifetime\":[0,2]", "\"lifetime\":[0,2]"), sk),
            "p.json: graphs[0].allocations[0]: missing 'size'");
  EXPECT_EQ(errorOf(replace(t, "\"pool_devices\": [\"cpu:0\",\"npu:1\"]",
                            "\"pool_devices\": [\"cpu:0\",\"NPU\"]"),
                    sk),
            "p.json: graphs[1].pool_devices[1]: expected a device like \"cpu:0\", got 'NPU'");
  EXPECT_EQ(errorOf(replace(t, "\"steps\": 5", "\"step\": 5"), sk),
            "p.json: graphs[0]: unknown field 'step'");
  // The top-level copy of the main graph's numbers must match the graph's.
  const std::string edited = t.substr(0, t.find("\"mem_offset\":16")) + "\"mem_offset\":24" +
                             t.substr(t.find("\"mem_offset\":16") + 15);
  EXPECT_EQ(errorOf(edited, sk),
            "p.json: allocations: differs from graphs[0].allocations (the top-level copy must "
            "match)");
  EXPECT_EQ(errorOf(replace(t, "\"bufsizes\": [0,40],\n  \"allocations\"", "\"bufsizes\": [0,48],\n  \"allocations\""), sk),
            "p.json: bufsizes: differs from graphs[0].bufsizes (the top-level copy must match)");
}

TEST(PlanJson, ModelPlanRoundTripsAndVerifies) {
  const fs::path path = test::sourceDir() / "examples/graphs/mlp.json";
  const Model model = readGraphJson(readFile(path), "mlp.json");
  PlanRequest request;
  request.algorithm = "greedy";
  const Plan plan = planModel(model, request);
  const std::string text = writePlanJson(plan, &model, PlanJsonOptions{false});
  // Deterministic: planning again writes the same bytes.
  EXPECT_EQ(writePlanJson(planModel(model, request), &model, PlanJsonOptions{false}), text);
  EXPECT_NE(text.find("\"id\":\"h1_relu\""), std::string::npos) << text;

  Plan skeleton;
  skeleton.options = plan.options;
  for (GraphId g = 0; g < static_cast<GraphId>(model.graphs.size()); ++g) {
    GraphPlan e;
    e.graph = g;
    e.specs = collectSpecs(model, g, plan.options);
    skeleton.graphs.push_back(e);
  }
  const Plan back = readPlanJson(text, "p.json", skeleton);
  ASSERT_EQ(back.main().allocations.size(), plan.main().allocations.size());
  for (std::size_t i = 0; i < back.main().allocations.size(); ++i) {
    const Allocation& a = plan.main().allocations[i];
    const Allocation& b = back.main().allocations[i];
    EXPECT_EQ(a.spec, b.spec);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.size, b.size);
    EXPECT_EQ(a.mem_id, b.mem_id);
  }
  EXPECT_EQ(back.main().bufsizes, plan.main().bufsizes);
  EXPECT_TRUE(verifyPlan(back).ok());

  // Every tensor at offset 0: the verifier, fed from the file, catches it.
  std::string broken = text;
  for (std::size_t at = broken.find("\"mem_offset\":"); at != std::string::npos;
       at = broken.find("\"mem_offset\":", at + 1)) {
    const std::size_t end = broken.find(',', at);
    broken.replace(at, end - at, "\"mem_offset\":0");
  }
  EXPECT_FALSE(verifyPlan(readPlanJson(broken, "p.json", skeleton)).ok());
}

TEST(PlanJson, SpecListPlanMatchesTheCaseExpectedBlock) {
  const fs::path dir = test::dataDir() / "executorch-conformance";
  for (const char* name : {"greedy-101-0004.json", "naive-101-0318.json"}) {
    const std::string text = readFile(dir / name);
    const SpecList c = readSpecListJson(text, name);
    const auto expected = test::readExpectedPlan(text);
    ASSERT_TRUE(expected);
    PlanRequest r;
    r.algorithm = c.algorithm;
    r.options.alignment = c.alignment;
    r.extra_padding = c.extra_padding;
    GraphSpecs specs = c.specs;
    for (Spec& s : specs.specs) s.alignment = c.alignment;
    Plan plan;
    plan.algorithm = c.algorithm;
    plan.options = r.options;
    plan.graphs.push_back(planSpecs(specs, r, c.input_mem_buffer_sizes));
    const json out = json::parse(writePlanJson(plan, nullptr));
    ASSERT_EQ(out["bufsizes"].get<std::vector<Bytes>>(), expected->bufsizes) << name;
    ASSERT_EQ(out["allocations"].size(), expected->allocations.size()) << name;
    for (std::size_t i = 0; i < expected->allocations.size(); ++i) {
      const auto& e = expected->allocations[i];
      const json& a = out["allocations"][i];
      EXPECT_EQ(a["id"].get<std::int64_t>(), e.id) << name << " " << i;
      EXPECT_EQ(a["mem_id"].get<MemId>(), e.mem_id) << name << " " << i;
      EXPECT_EQ(a["mem_obj_id"].get<std::int32_t>(), e.mem_obj_id) << name << " " << i;
      EXPECT_EQ(a["mem_offset"].get<Offset>(), e.offset) << name << " " << i;
    }
    // And back onto the case's specs.
    Plan skeleton;
    skeleton.options = plan.options;
    skeleton.graphs.resize(1);
    skeleton.graphs[0].specs = c.specs;
    const Plan back = readPlanJson(writePlanJson(plan, nullptr), name, skeleton);
    EXPECT_EQ(back.main().allocations.size(), plan.main().allocations.size());
    EXPECT_EQ(back.main().bufsizes, expected->bufsizes);
  }
}

// `memplan import MODEL -o graph.json`, then planning graph.json, gives the
// plan of the model itself, byte for byte.
TEST(PlanJson, ImportedGraphPlansLikeTheModel) {
  const fs::path dir = test::tempDir("import-roundtrip");
  std::vector<std::pair<fs::path, std::string>> inputs = {
      {test::sourceDir() / "examples/graphs/mlp.json", ""}};
  const fs::path models = test::modelsDir();
  std::string missing;  // models not fetched: mlp.json still runs, then skip or fail
  for (const char* m : {"face_detection/face_detection_full_range_sparse.tflite",
                        "onnx-node/test_loop11.onnx", "onnx-node/test_if.onnx"}) {
    if (fs::exists(models / m))
      inputs.emplace_back(models / m, "--unknown-size-bytes 4096");
    else
      missing += std::string(missing.empty() ? "" : ", ") + m;
  }
  for (const auto& [model, flags] : inputs) {
    const std::string name = model.filename().string();
    const fs::path graph = dir / (name + ".graph.json");
    const fs::path direct = dir / (name + ".plan1.json");
    const fs::path via = dir / (name + ".plan2.json");
    const bool onnx = model.extension() == ".onnx";
    auto r = test::runCli("import '" + model.string() + "' " + (onnx ? flags : "") + " -o '" +
                          graph.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    r = test::runCli("plan -q '" + model.string() + "' " + (onnx ? flags : "") + " -o '" +
                     direct.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    r = test::runCli("plan -q '" + graph.string() + "' -o '" + via.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    // The same plan; only the recorded source (and how it was read) differ.
    const auto planPart = [](const std::string& text) {
      return text.substr(text.find("  \"algorithm\""));
    };
    const std::string plan = readFile(direct);
    EXPECT_EQ(planPart(readFile(via)), planPart(plan)) << name;
    EXPECT_NE(plan.find("\"allocations\""), std::string::npos);
    // Importing the graph JSON again writes the same file.
    const fs::path again = dir / (name + ".graph2.json");
    r = test::runCli("import '" + graph.string() + "' -o '" + again.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_EQ(readFile(again), readFile(graph)) << name;
    r = test::runCli("verify '" + graph.string() + "' '" + via.string() + "'");
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.out << r.err;
  }
  fs::remove_all(dir);
  if (!missing.empty()) MEMPLAN_MISSING_DATA() << "checked mlp.json only; not fetched: " << missing;
}

}  // namespace
}  // namespace memplan

// SVG picture and HTML viewer of hand-made plans: well-formed, one
// rectangle per planned tensor, names escaped, data embedded.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "memplan/report.h"
#include "support/test_support.h"

namespace memplan {
namespace {

Tensor tensor(const std::string& name, std::int64_t n) {
  Tensor t;
  t.name = name;
  t.shape = {1, n};
  t.dtype = DType::Float32;
  t.nbytes = static_cast<Bytes>(n) * 4;
  return t;
}

// Main graph: x -> conv -> a -> relu -> b; add(a, b) -> y, planned in pool
// 1; a mutable state tensor `s` alone in pool 2.  `n_extra` more
// intermediate tensors chain after y (for the large-plan test).
struct Fixture {
  Model model;
  Plan plan;
};

Fixture makeFixture(int n_extra = 0) {
  Fixture f;
  f.model.name = "tiny <model> & \"co\"";
  f.model.tensors = {tensor("x", 64), tensor("a<1>", 256), tensor("b&c", 512), tensor("y", 128),
                     tensor("s", 32)};
  f.model.tensors[4].kind = TensorKind::MutableBuffer;
  Graph g;
  g.name = "main";
  g.inputs = {0};
  g.outputs = {3};
  g.nodes = {{"conv1", "Conv", NodeKind::Op, {0}, {1}, {}},
             {"relu1", "Relu", NodeKind::Op, {1}, {2}, {}},
             {"add1", "Add", NodeKind::Op, {1, 2, 4}, {3}, {}}};
  for (int i = 0; i < n_extra; ++i) {
    const TensorId prev = i == 0 ? 3 : static_cast<TensorId>(f.model.tensors.size() - 1);
    f.model.tensors.push_back(tensor("e" + std::to_string(i), 16 + i % 7));
    g.nodes.push_back({"n" + std::to_string(i), "Relu", NodeKind::Op, {prev},
                       {static_cast<TensorId>(f.model.tensors.size() - 1)}, {}});
  }
  f.model.graphs = {g};

  GraphPlan gp;
  gp.specs.steps = static_cast<TimeValue>(5 + n_extra);
  struct Row { TensorId t; TimeValue first, last; MemId mem; Offset off; };
  std::vector<Row> rows = {{0, 0, 1, 1, 0}, {1, 1, 3, 1, 2048}, {2, 2, 3, 1, 0}, {3, 3, 4, 1, 3072},
                           {4, 0, 4 + n_extra, 2, 0}};
  for (int i = 0; i < n_extra; ++i)  // each extra lives two steps, ping-pong
    rows.push_back({5 + i, 4 + i, 5 + i, 1, static_cast<Offset>((i % 2) * 64)});
  Bytes naive1 = 0;
  for (const Row& r : rows) {
    Spec s;
    s.id = static_cast<SpecId>(gp.specs.specs.size());
    s.tensor = r.t;
    s.members = {r.t};
    s.nbytes = f.model.tensors[r.t].nbytes;
    s.first = r.first;
    s.last = r.last;
    s.is_input = r.t == 0;
    s.is_output = r.t == 3;
    s.is_mutable = r.t == 4;
    s.planned = true;
    s.name = f.model.tensors[r.t].name;
    const Bytes size = (s.nbytes + 15) / 16 * 16;
    if (r.mem == 1) naive1 += size;
    gp.allocations.push_back({s.id, r.mem, 0, r.off, size});
    gp.specs.specs.push_back(s);
  }
  gp.bufsizes = {0, 3584, 128};
  PoolInfo p1;
  p1.mem_id = 1;
  p1.size = 3584;
  p1.lower_bound = 3584;
  p1.naive_size = naive1;
  p1.buffers = rows.size() - 1;
  p1.algorithm = "greedy";
  PoolInfo p2;
  p2.mem_id = 2;
  p2.size = 128;
  p2.lower_bound = 128;
  p2.naive_size = 128;
  p2.buffers = 1;
  p2.algorithm = "naive";
  gp.pools = {p1, p2};
  gp.pool_devices = {Device{}, Device{}, Device{}};
  f.plan.graphs = {gp};
  f.plan.algorithm = "auto";
  return f;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

// Minimal XML well-formedness: balanced tags, quoted attributes, no raw '<'
// or stray '&' in text or attribute values. Returns "" or the problem.
std::string xmlProblem(const std::string& x) {
  std::vector<std::string> stack;
  std::size_t i = 0;
  auto entityOk = [&](std::size_t at) {
    static const std::regex ent("^&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);");
    return std::regex_search(x.substr(at, 12), ent);
  };
  while (i < x.size()) {
    if (x[i] == '&') {
      if (!entityOk(i)) return "bad entity at " + std::to_string(i);
      ++i;
      continue;
    }
    if (x[i] != '<') { ++i; continue; }
    if (x.compare(i, 5, "<?xml") == 0) {
      const auto e = x.find("?>", i);
      if (e == std::string::npos) return "unclosed declaration";
      i = e + 2;
      continue;
    }
    if (x.compare(i, 4, "<!--") == 0) {
      const auto e = x.find("-->", i);
      if (e == std::string::npos) return "unclosed comment";
      i = e + 3;
      continue;
    }
    const bool closing = x[i + 1] == '/';
    std::size_t j = i + (closing ? 2 : 1);
    std::string name;
    while (j < x.size() && (std::isalnum(static_cast<unsigned char>(x[j])) || x[j] == '-' || x[j] == ':'))
      name += x[j++];
    if (name.empty()) return "bad tag at " + std::to_string(i);
    // Attributes: name="value" with no '<' and valid entities inside.
    bool self_closing = false;
    while (true) {
      while (j < x.size() && std::isspace(static_cast<unsigned char>(x[j]))) ++j;
      if (j >= x.size()) return "unterminated tag " + name;
      if (x[j] == '>') { ++j; break; }
      if (x.compare(j, 2, "/>") == 0) { self_closing = true; j += 2; break; }
      if (closing) return "attribute in closing tag " + name;
      std::size_t k = j;
      while (k < x.size() && x[k] != '=' && x[k] != '>' && !std::isspace(static_cast<unsigned char>(x[k]))) ++k;
      if (k == j || k + 1 >= x.size() || x[k] != '=' || x[k + 1] != '"')
        return "bad attribute in " + name + " at " + std::to_string(j);
      const auto e = x.find('"', k + 2);
      if (e == std::string::npos) return "unclosed attribute in " + name;
      for (std::size_t c = k + 2; c < e; ++c) {
        if (x[c] == '<') return "'<' in attribute of " + name;
        if (x[c] == '&' && !entityOk(c)) return "bad entity in attribute of " + name;
      }
      j = e + 1;
    }
    if (closing) {
      if (stack.empty() || stack.back() != name) return "mismatched </" + name + ">";
      stack.pop_back();
    } else if (!self_closing) {
      stack.push_back(name);
    }
    i = j;
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  return "";
}

TEST(XmlChecker, CatchesBrokenDocuments) {
  EXPECT_EQ(xmlProblem("<a><b x=\"1\"/>t &amp; u</a>"), "");
  EXPECT_NE(xmlProblem("<a><b></a>"), "");
  EXPECT_NE(xmlProblem("<a>x & y</a>"), "");
  EXPECT_NE(xmlProblem("<a t=\"<\"></a>"), "");
  EXPECT_NE(xmlProblem("<a>"), "");
}

TEST(Svg, WellFormedOneRectPerTensor) {
  const Fixture f = makeFixture();
  const std::string svg = renderSvg(f.plan, &f.model, {});
  EXPECT_EQ(xmlProblem(svg), "") << svg;
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(count(svg, "<rect class=\"t\""), 5u);   // x a b y in pool 1, s in pool 2
  EXPECT_EQ(count(svg, "<g class=\"pool\""), 2u);
  EXPECT_EQ(count(svg, "<rect class=\"legend\""), 5u);
  // Names and the title are escaped, not dropped.
  EXPECT_NE(svg.find("a&lt;1&gt; (Conv), 1x256 float32, 1.0 KiB (1024 B) at offset 2048, steps 1..3"),
            std::string::npos);
  EXPECT_NE(svg.find("b&amp;c (Relu)"), std::string::npos);
  EXPECT_NE(svg.find("tiny &lt;model&gt; &amp; &quot;co&quot;"), std::string::npos);
  // Colours by role: input x, output y, mutable s, intermediates a and b.
  EXPECT_EQ(count(svg, "fill=\"#4e79a7\" stroke"), 1u);
  EXPECT_EQ(count(svg, "fill=\"#f28e2b\" stroke"), 1u);
  EXPECT_EQ(count(svg, "fill=\"#e15759\" stroke"), 1u);
  EXPECT_EQ(count(svg, "fill=\"#59a14f\" stroke"), 2u);
  EXPECT_NE(svg.find("main pool 1 (cpu:0): 3.5 KiB, lower bound 3.5 KiB"), std::string::npos);
}

TEST(Svg, GeometryFollowsOffsetsAndSteps) {
  const Fixture f = makeFixture();
  SvgOptions opt;
  opt.width = 578;        // plot 484 px wide: 5 steps of 96.8 px
  opt.pool_height = 358.4;  // 3584 bytes: 0.1 px per byte
  const std::string svg = renderSvg(f.plan, &f.model, opt);
  // b: steps 2..3, offset 0, 2048 bytes -> x = 78 + 2 * 96.8, 2 steps wide,
  // 204.8 px high, bottom on the base line (panel 0: 68 + 34 + 358.4).
  EXPECT_NE(svg.find("<rect class=\"t\" x=\"271.60\" y=\"255.60\" width=\"193.60\" height=\"204.80\""),
            std::string::npos)
      << svg;
}

TEST(Svg, SubgraphPanelsOnlyWhenAsked) {
  Fixture f = makeFixture();
  GraphPlan body;
  body.graph = 1;
  body.specs.graph = 1;
  body.specs.steps = 2;
  Spec s;
  s.name = "body_tmp";
  s.first = 0;
  s.last = 1;
  s.planned = true;
  body.specs.specs = {s};
  body.allocations = {{0, 1, 0, 0, 64}};
  PoolInfo p;
  p.mem_id = 1;
  p.size = 64;
  body.pools = {p};
  f.plan.graphs.push_back(body);
  EXPECT_EQ(count(renderSvg(f.plan, nullptr, {}), "<rect class=\"t\""), 5u);
  SvgOptions opt;
  opt.include_subgraphs = true;
  const std::string svg = renderSvg(f.plan, nullptr, opt);
  EXPECT_EQ(xmlProblem(svg), "");
  EXPECT_EQ(count(svg, "<rect class=\"t\""), 6u);
  EXPECT_EQ(count(svg, "<g class=\"pool\""), 3u);
  EXPECT_NE(svg.find("<g class=\"pool\" data-graph=\"1\" data-mem-id=\"1\">"), std::string::npos);
  EXPECT_NE(svg.find("graph 1 pool 1 (cpu:0): 64 B"), std::string::npos);
}

TEST(Svg, DeterministicAndEmptyPlan) {
  const Fixture f = makeFixture();
  EXPECT_EQ(renderSvg(f.plan, &f.model, {}), renderSvg(f.plan, &f.model, {}));
  Plan empty;
  empty.graphs.resize(1);
  const std::string svg = renderSvg(empty, nullptr, {});
  EXPECT_EQ(xmlProblem(svg), "");
  EXPECT_EQ(count(svg, "<rect class=\"t\""), 0u);
  EXPECT_NE(svg.find("no planned tensors"), std::string::npos);
}

TEST(Svg, InvalidUtf8AndControlsStayValid) {
  Fixture f = makeFixture();
  f.plan.graphs[0].specs.specs[1].name = std::string("bad\xc3\x28\x07name");
  const std::string svg = renderSvg(f.plan, nullptr, {});
  EXPECT_EQ(xmlProblem(svg), "");
  EXPECT_NE(svg.find("bad\xef\xbf\xbd(?name"), std::string::npos);
}

// ---- HTML viewer ----

// The JSON document embedded in the page.
nlohmann::json pageData(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"memplan-data\">";
  const auto a = html.find(open);
  if (a == std::string::npos) return nullptr;
  const auto b = html.find("</script>", a);
  if (b == std::string::npos) return nullptr;
  return nlohmann::json::parse(html.substr(a + open.size(), b - a - open.size()));
}

TEST(Html, SelfContainedWithEmbeddedData) {
  const Fixture f = makeFixture();
  const std::string html = renderHtml(f.plan, &f.model, {});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // No network: nothing is fetched from anywhere.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  // Stable ids the browser test relies on.
  for (const char* id : {"id=\"graph-tabs\"", "id=\"pool-tabs\"", "id=\"tooltip\"", "id=\"panels\""})
    EXPECT_NE(html.find(id), std::string::npos) << id;
  EXPECT_NE(html.find("window.memplanViewer"), std::string::npos);
  EXPECT_NE(html.find("<title>tiny &lt;model&gt; &amp; &quot;co&quot; - memplan</title>"),
            std::string::npos);

  const auto data = pageData(html);
  ASSERT_TRUE(data.is_object());
  EXPECT_EQ(data["title"], "tiny <model> & \"co\"");
  ASSERT_EQ(data["plans"].size(), 1u);
  const auto& g = data["plans"][0]["graphs"][0];
  EXPECT_EQ(g["steps"], 5);
  EXPECT_EQ(g["step_names"], nlohmann::json({"x", "conv1", "relu1", "add1", "output"}));
  EXPECT_EQ(g["tensors"]["name"], nlohmann::json({"x", "a<1>", "b&c", "y", "s"}));
  EXPECT_EQ(g["tensors"]["offset"], nlohmann::json({0, 2048, 0, 3072, 0}));
  EXPECT_EQ(g["tensors"]["pool"], nlohmann::json({1, 1, 1, 1, 2}));
  EXPECT_EQ(g["tensors"]["shape"][1], "1x256");
  // Roles index data.roles: input, intermediate, intermediate, output, mutable.
  const auto& roles = data["roles"];
  std::vector<std::string> got;
  for (const auto& r : g["tensors"]["role"]) got.push_back(roles[r.get<int>()]);
  EXPECT_EQ(got, (std::vector<std::string>{"input", "intermediate", "intermediate", "output", "mutable"}));
  ASSERT_EQ(g["pools"].size(), 2u);
  // Live bytes as change points: 256 at 0, 1280 at 1, 3072 at 2, 3584 at 3, 512 at 4, 0 at 5.
  EXPECT_EQ(g["pools"][0]["live"], nlohmann::json({0, 256, 1, 1280, 2, 3072, 3, 3584, 4, 512, 5, 0}));
  EXPECT_EQ(g["pools"][0]["lower_bound"], 3584);
}

TEST(Html, ScriptCannotBeClosedByANameAndBadUtf8IsReplaced) {
  Fixture f = makeFixture();
  f.model.tensors[1].name = "</script><script>alert(1)</script>\xff";
  f.plan.graphs[0].specs.specs[1].name = f.model.tensors[1].name;
  const std::string html = renderHtml(f.plan, &f.model, {});
  EXPECT_EQ(html.find("</script><script>alert"), std::string::npos);
  EXPECT_EQ(count(html, "</script>"), 2u);  // the data block and the viewer script
  const auto data = pageData(html);
  ASSERT_TRUE(data.is_object());
  EXPECT_EQ(data["plans"][0]["graphs"][0]["tensors"]["name"][1],
            "</script><script>alert(1)</script>\xef\xbf\xbd");
}

TEST(Html, ComparisonAndSubgraphs) {
  Fixture f = makeFixture();
  // A body graph under a Loop node at step 2 of main, planned on its own.
  Graph body;
  body.name = "loop_body";
  body.parent = 0;
  body.parent_node = 1;
  f.model.graphs[0].nodes[1].kind = NodeKind::While;
  f.model.graphs[0].nodes[1].subgraphs = {1};
  f.model.graphs.push_back(body);
  GraphPlan bp;
  bp.graph = 1;
  bp.specs.graph = 1;
  bp.specs.steps = 1;
  f.plan.graphs.push_back(bp);
  Fixture other = makeFixture();
  other.plan.algorithm = "naive";
  HtmlOptions opt;
  opt.compare = &other.plan;
  opt.label = "auto";
  opt.compare_label = "naive";
  const auto data = pageData(renderHtml(f.plan, &f.model, opt));
  ASSERT_TRUE(data.is_object());
  EXPECT_EQ(data["labels"], nlohmann::json({"auto", "naive"}));
  ASSERT_EQ(data["plans"].size(), 2u);
  EXPECT_EQ(data["plans"][1]["algorithm"], "naive");
  const auto& main = data["plans"][0]["graphs"][0];
  ASSERT_EQ(main["control"].size(), 1u);
  EXPECT_EQ(main["control"][0]["step"], 2);
  EXPECT_EQ(main["control"][0]["kind"], "while");
  EXPECT_EQ(main["control"][0]["subgraphs"], nlohmann::json({1}));
  const auto& sub = data["plans"][0]["graphs"][1];
  EXPECT_EQ(sub["name"], "loop_body");
  EXPECT_EQ(sub["parent"], 0);
  EXPECT_EQ(sub["parent_node"], "relu1");
}

TEST(Html, WritesALargePage) {
  // The page for a 20,000-tensor plan; MEMPLAN_VIEWER_PAGE=path keeps it
  // (for trying the viewer by hand), otherwise it goes to a scratch folder.
  const char* env = std::getenv("MEMPLAN_VIEWER_PAGE");
  const std::filesystem::path path = env ? std::filesystem::path(env)
                                         : test::tempDir("large-page") / "page.html";
  const Fixture f = makeFixture(20000);
  const std::string html = renderHtml(f.plan, &f.model, {});
  const auto data = pageData(html);
  ASSERT_TRUE(data.is_object());
  EXPECT_EQ(data["plans"][0]["graphs"][0]["tensors"]["name"].size(), 20005u);
  std::ofstream(path, std::ios::binary) << html;
  EXPECT_EQ(test::readText(path), html);
}

TEST(Export, InconsistentPlansDoNotCrash) {
  // A plan read back against the wrong model: dangling spec ids, tensor ids
  // past the table, more graphs than the model has, an empty plan.
  Fixture f = makeFixture();
  f.plan.graphs[0].allocations.push_back({99, 1, 0, 0, 16});
  f.plan.graphs[0].specs.specs[0].tensor = 1000;
  f.plan.graphs.push_back(f.plan.graphs[0]);
  f.plan.graphs[1].graph = 7;
  Model other;
  other.graphs.resize(1);
  for (const Model* m : std::vector<const Model*>{&f.model, &other, nullptr}) {
    SvgOptions so;
    so.include_subgraphs = true;
    EXPECT_EQ(xmlProblem(renderSvg(f.plan, m, so)), "");
    EXPECT_TRUE(pageData(renderHtml(f.plan, m, {})).is_object());
    EXPECT_FALSE(formatReport(f.plan, m, {}).empty());
    EXPECT_TRUE(nlohmann::json::parse(formatReportJson(f.plan, m, {})).is_object());
  }
  Plan empty;
  EXPECT_TRUE(pageData(renderHtml(empty, nullptr, {})).is_object());
  EXPECT_EQ(xmlProblem(renderSvg(empty, nullptr, {})), "");
  EXPECT_EQ(formatReport(empty, nullptr, {}).find("no planned tensors") != std::string::npos, true);
}

TEST(Cli, HtmlAndSvgOfAnExampleModelAgreeWithTheReport) {
  const auto model = test::modelsDir() / "selfie_segmentation" / "selfie_segmentation.tflite";
  if (!std::filesystem::exists(model)) MEMPLAN_MISSING_DATA() << "example models not fetched: " << model;
  const auto dir = test::tempDir("viewer-cli");
  const auto html = dir / "plan.html", svg = dir / "plan.svg";
  const auto r = test::runCli("plan '" + model.string() + "' --json --html '" + html.string() +
                              "' --svg '" + svg.string() + "' --compare greedy");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report["pools"].size(), 1u);
  const std::size_t tensors = report["pools"][0]["tensors"].get<std::size_t>();
  EXPECT_GT(tensors, 200u);

  const auto data = pageData(test::readText(html));
  ASSERT_TRUE(data.is_object());
  ASSERT_EQ(data["plans"].size(), 2u);  // auto and greedy
  const auto& g = data["plans"][0]["graphs"][0];
  EXPECT_EQ(g["tensors"]["name"].size(), tensors);
  EXPECT_EQ(g["pools"][0]["size"], report["pools"][0]["arena_bytes"]);
  EXPECT_EQ(g["pools"][0]["lower_bound"], report["pools"][0]["lower_bound_bytes"]);
  EXPECT_EQ(data["plans"][1]["algorithm"], "greedy");
  // Every tensor of the auto plan lies inside the arena.
  const Bytes arena = report["pools"][0]["arena_bytes"].get<Bytes>();
  for (std::size_t i = 0; i < tensors; ++i)
    EXPECT_LE(g["tensors"]["offset"][i].get<Bytes>() + g["tensors"]["size"][i].get<Bytes>(), arena);

  const std::string picture = test::readText(svg);
  EXPECT_EQ(xmlProblem(picture), "");
  EXPECT_EQ(count(picture, "<rect class=\"t\""), tensors);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace memplan

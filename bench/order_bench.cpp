// The order search on the repository's real models: a markdown table of
// each model's graphs (nodes; the bound of the given order and of the order
// found, summed over the graphs; how many changed and how many are proven
// optimal), the entry graphs' arenas planned in the order found (a .pte:
// its instructions reordered within the segments between jumps) and the
// search's time.
//
//   order_bench [MODELS_DIR] [--effort X]
//
// MODELS_DIR defaults to the example models (scripts/fetch-models.sh); the
// ExecuTorch programs come from tests/data/executorch-programs and
// examples/executorch, the graphs from examples/graphs, and the sample of
// Debian's ONNX test models (libonnx-testdata) the tests import is one row.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "memplan/memplan.h"
#include "memplan/pte.h"
#include "../tests/support/onnx_testdata_sample.h"  // the models the tests import

namespace {

using namespace memplan;
namespace fs = std::filesystem;

struct Case {
  std::string name;   // as the table shows it
  fs::path path;
  ImportOptions options;
};

std::vector<Case> cases(const fs::path& models, const fs::path& data) {
  const auto shape = [](std::vector<std::pair<std::string, std::vector<std::int64_t>>> shapes) {
    ImportOptions o;
    for (auto& [n, s] : shapes) o.input_shapes[n] = s;
    return o;
  };
  std::vector<Case> out = {
      {"face_detection_short_range.tflite", models / "face_detection/face_detection_short_range.tflite", {}},
      {"face_detection_full_range.tflite", models / "face_detection/face_detection_full_range.tflite", {}},
      {"face_detection_full_range_sparse.tflite",
       models / "face_detection/face_detection_full_range_sparse.tflite", {}},
      {"selfie_segmentation.tflite", models / "selfie_segmentation/selfie_segmentation.tflite", {}},
      {"selfie_segmentation_landscape.tflite",
       models / "selfie_segmentation/selfie_segmentation_landscape.tflite", {}},
      {"ch_PP-OCRv4_det_infer.onnx (1x3x640x640)", models / "ocr/ch_PP-OCRv4_det_infer.onnx",
       shape({{"x", {1, 3, 640, 640}}})},
      {"ch_PP-OCRv4_rec_infer.onnx (1x3x48x160)", models / "ocr/ch_PP-OCRv4_rec_infer.onnx",
       shape({{"x", {1, 3, 48, 160}}})},
      {"ch_ppocr_mobile_v2.0_cls_infer.onnx (1x3x48x192)",
       models / "ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx", shape({{"x", {1, 3, 48, 192}}})},
      {"silero_vad_v5.onnx", models / "vad/silero_vad_v5.onnx",
       shape({{"input", {1, 256}}, {"state", {2, 1, 128}}})},
  };
  ImportOptions legacy;
  legacy.dims = {{"batch", 1}, {"sequence", 512}};
  out.push_back({"silero_vad_legacy.onnx", models / "vad/silero_vad_legacy.onnx", legacy});
  // As python/tests/test_runtime_onnx.py runs them.
  ImportOptions v6 = shape({{"input", {1, 256}}, {"state", {2, 1, 128}}});
  v6.unknown_size_bytes = 65536;
  out.push_back({"silero_vad_v6.onnx (unknown sizes at 64 KiB)", models / "vad/silero_vad_v6.onnx", v6});
  ImportOptions loop;
  loop.unknown_size_bytes = 64;
  for (const char* p : {"test_if.onnx", "test_loop11.onnx", "test_scan9_sum.onnx", "test_scan_sum.onnx"})
    out.push_back({p, models / "onnx-node" / p, std::string(p) == "test_loop11.onnx" ? loop : ImportOptions{}});
  for (const char* p : {"add.pte", "module_linear_no_constant_segment.pte", "keyword_spotting.pte",
                        "cond.pte", "llm_prefill_decode_xnnpack.pte"})
    out.push_back({p, data / "executorch-programs" / p, {}});
  const fs::path examples = data.parent_path().parent_path() / "examples";
  out.push_back({"greedy_gap.pte", examples / "executorch/greedy_gap.pte", {}});
  for (const char* p : {"tiny.json", "mlp.json", "two_branches.json", "decoder_kv.json"})
    out.push_back({p, examples / "graphs" / p, {}});
  return out;
}

// The dense models of Debian's ONNX test data the tests import, one row together.
const fs::path kOnnxTestdata = test::kOnnxTestdataDir;

std::string commas(Bytes b) {
  std::string s = std::to_string(b);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

struct Row {
  std::size_t nodes = 0;
  Bytes given = 0, found = 0, arena = 0;
  double seconds = 0;
  std::string method;              // techniques that changed a graph's order
  std::size_t changed = 0, proven = 0;
};

Row measure(const Input& in, double effort) {
  const Model& m = *in.model();
  PlanRequest r;
  r.params.effort = effort;
  r.reorder = ReorderMode::Apply;
  const auto t0 = std::chrono::steady_clock::now();
  const OrderConstraints pte = in.pte() ? pteOrderConstraints(*in.pte()) : OrderConstraints{};
  const OrderResult order = searchOrder(m, r.options, OrderParams{.effort = effort}, &pte);
  Row row;
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Plan p = plan(in, r);
  // Every graph's bound (bodies plan their own arenas), the entry graphs' arenas.
  for (const GraphOrder& g : order.graphs) {
    row.nodes += m.graphs[g.graph].nodes.size();
    row.given += g.bound_given;
    row.found += g.bound_found;
    if (g.changed()) row.changed += 1;
    if (g.changed() && row.method.find(g.method) == std::string::npos)
      row.method += (row.method.empty() ? "" : ", ") + g.method;
    row.proven += g.proven_optimal;
  }
  if (row.method.empty()) row.method = "-";
  if (in.pte()) {  // every method is an entry point
    for (const GraphPlan& g : p.graphs)
      for (Bytes b : g.bufsizes) row.arena += b;
  } else {
    for (const Method& method : m.entryPoints())
      for (Bytes b : p.graphs.at(static_cast<std::size_t>(method.graph)).bufsizes) row.arena += b;
  }
  if (!verify(in, p).ok()) row.method += " (VERIFY FAILED)";
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path models = MEMPLAN_MODELS_DIR;
  double effort = 1.0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--effort") && i + 1 < argc) effort = std::stod(argv[++i]);
    else models = argv[i];
  }
  std::printf("| model | graphs | nodes | order bound, given | order bound, found | ratio | graphs reordered "
              "| proven optimal | arena (planned in it) | found by | search time |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
  std::vector<double> ratios;
  for (const Case& c : cases(models, MEMPLAN_DATA_DIR)) {
    if (!fs::exists(c.path)) {
      std::fprintf(stderr, "order_bench: %s missing (scripts/fetch-models.sh)\n", c.path.string().c_str());
      continue;
    }
    const Input in = readInput(c.path, c.options);
    const Row r = measure(in, effort);
    const double ratio = r.given ? static_cast<double>(r.found) / static_cast<double>(r.given) : 1.0;
    ratios.push_back(ratio);
    const std::size_t graphs = in.model()->graphs.size();
    std::printf("| %s | %zu | %zu | %s | %s | %.4f | %zu | %zu of %zu | %s | %s | %.2f s |\n", c.name.c_str(),
                graphs, r.nodes, commas(r.given).c_str(), commas(r.found).c_str(), ratio, r.changed,
                r.proven, graphs, commas(r.arena).c_str(), r.method.c_str(), r.seconds);
  }
  // The libonnx-testdata sample: one row, each model's ratio counted.
  Row sum;
  std::size_t graphs = 0, models_seen = 0;
  for (const char* rel : test::kOnnxTestdataDense) {
    const fs::path path = kOnnxTestdata / rel / "model.onnx";
    if (!fs::exists(path)) continue;
    const Input in = readInput(path, {});
    const Row r = measure(in, effort);
    ratios.push_back(r.given ? static_cast<double>(r.found) / static_cast<double>(r.given) : 1.0);
    graphs += in.model()->graphs.size();
    ++models_seen;
    sum.nodes += r.nodes;
    sum.given += r.given;
    sum.found += r.found;
    sum.arena += r.arena;
    sum.seconds += r.seconds;
    sum.changed += r.changed;
    sum.proven += r.proven;
    if (r.method != "-" && sum.method.find(r.method) == std::string::npos)
      sum.method += (sum.method.empty() ? "" : ", ") + r.method;
  }
  if (models_seen > 0)
    std::printf("| libonnx-testdata sample (%zu models, summed) | %zu | %zu | %s | %s | %.4f | %zu | %zu of %zu "
                "| %s | %s | %.2f s |\n",
                models_seen, graphs, sum.nodes, commas(sum.given).c_str(), commas(sum.found).c_str(),
                sum.given ? static_cast<double>(sum.found) / static_cast<double>(sum.given) : 1.0, sum.changed,
                sum.proven, graphs, commas(sum.arena).c_str(), sum.method.empty() ? "-" : sum.method.c_str(),
                sum.seconds);
  else
    std::fprintf(stderr, "order_bench: libonnx-testdata missing (scripts/setup.sh installs it)\n");
  if (ratios.empty()) return 1;
  std::sort(ratios.begin(), ratios.end());
  std::printf("\nbest %.3f, median %.3f of the given order's bound (%zu models)\n", ratios.front(),
              ratios[ratios.size() / 2], ratios.size());
  return 0;
}

// TensorFlow Lite Micro's memory-planner test cases (tensorflow/tflite-micro:
// tensorflow/lite/micro/memory_planner/greedy_memory_planner_test.cc,
// linear_memory_planner_test.cc, and the offline-planned arenas of
// tensorflow/lite/micro/micro_allocator_test.cc), translated into memplan's
// terms. TFLite Micro's AddBuffer(size, first_time_used, last_time_used)
// is a buffer alive over [first, last] inclusive: a CSV row lower = first,
// upper = last + 1. The offline-planned models (four float32[2,2,3]
// tensors, 48 bytes each) become graph JSON whose tensors are pinned at the
// offsets of the OfflineMemoryAllocation metadata. memplan must match or
// beat each expected arena. docs/peers.md has the table.
#include <gtest/gtest.h>

#include "memplan/memplan.h"
#include "support/test_support.h"

namespace memplan {
namespace {

struct TflmBuffer {
  Bytes size;
  TimeValue first, last;  // inclusive, as TFLite Micro counts
};

// Plans TFLite Micro's buffers with memplan's default algorithm (or
// `algorithm`); returns the arena and fills `offsets`.
Bytes planBuffers(const std::vector<TflmBuffer>& buffers, std::vector<Offset>* offsets = nullptr,
                  const std::string& algorithm = "") {
  std::string text = "id,lower,upper,size\n";
  for (std::size_t i = 0; i < buffers.size(); ++i)
    text += std::to_string(i) + "," + std::to_string(buffers[i].first) + "," +
            std::to_string(buffers[i].last + 1) + "," + std::to_string(buffers[i].size) + "\n";
  const Input in = Input::fromBuffers(readMiniMallocCsv(text, "tflm.csv"));
  PlanRequest request;
  request.algorithm = algorithm;
  const Plan p = plan(in, request);
  const VerifyResult v = verify(in, p);
  EXPECT_TRUE(v.ok()) << v.violations.front().message;
  EXPECT_TRUE(replay(in, p).ok());
  if (offsets) {
    offsets->clear();
    for (const Allocation& a : p.main().allocations) offsets->push_back(a.offset);
  }
  return p.main().bufsizes.at(1);
}

// The 250 KB MobileNet of TFLite Micro's person-detection example.
const std::vector<TflmBuffer> kPersonDetection = {
    {9216, 0, 29},  {3, 28, 29},    {256, 27, 28},  {2304, 26, 27}, {2304, 25, 26},
    {2304, 24, 25}, {1152, 23, 24}, {4608, 22, 23}, {4608, 21, 22}, {4608, 20, 21},
    {4608, 19, 20}, {4608, 18, 19}, {4608, 17, 18}, {4608, 16, 17}, {4608, 15, 16},
    {4608, 14, 15}, {4608, 13, 14}, {4608, 12, 13}, {2304, 11, 12}, {9216, 10, 11},
    {9216, 9, 10},  {9216, 8, 9},   {4608, 7, 8},   {18432, 6, 7},  {18432, 5, 6},
    {18432, 4, 5},  {9216, 3, 4},   {36864, 2, 3},  {18432, 1, 2},  {18432, 0, 1},
};

// ---- greedy_memory_planner_test.cc ------------------------------------------

TEST(PeersTflmGreedy, Basics) {
  std::vector<Offset> offsets;
  EXPECT_EQ(planBuffers({{10, 0, 1}, {20, 2, 3}}, &offsets), 20u);  // TFLM: 20
  EXPECT_EQ(offsets, (std::vector<Offset>{0, 0}));                   // TFLM: 0, 0
}

TEST(PeersTflmGreedy, Medium) {
  // TFLM: 90 (offsets 50, 70, 40, 0, 0). The most bytes live at once are
  // 80 (at time 1: 10 + 20 + 50), and memplan reaches that.
  EXPECT_EQ(planBuffers({{10, 0, 1}, {20, 1, 2}, {30, 2, 3}, {40, 3, 4}, {50, 0, 1}}), 80u);
}

TEST(PeersTflmGreedy, PersonDetectionModel) {
  // TFLM only asks for less than the sum of all buffers, 241,027 bytes;
  // memplan reaches the live-bytes peak (time 2: 9216 + 36864 + 18432).
  EXPECT_EQ(planBuffers(kPersonDetection), 64512u);
}

TEST(PeersTflmGreedy, OverlapCase) {
  EXPECT_EQ(planBuffers({{100, 0, 1}, {50, 2, 3}, {20, 1, 2}}), 120u);  // TFLM: 120
}

// ---- linear_memory_planner_test.cc: no reuse at all -------------------------

TEST(PeersTflmLinear, BasicsAndPersonDetection) {
  // TFLite Micro's LinearMemoryPlanner puts each buffer at the end of the
  // one before: memplan's naive (ExecuTorch's, no reuse) does the same, so
  // it must give TFLite Micro's offsets and arenas exactly.
  std::vector<Offset> offsets;
  EXPECT_EQ(planBuffers({{10, 0, 1}, {20, 1, 2}}, &offsets, "naive"), 30u);  // TFLM linear: 30
  EXPECT_EQ(offsets, (std::vector<Offset>{0, 10}));                          // TFLM: 0, 10
  EXPECT_EQ(planBuffers(kPersonDetection, &offsets, "naive"), 241027u);  // TFLM linear: 241,027
  Offset end = 0;
  for (std::size_t i = 0; i < kPersonDetection.size(); ++i) {
    EXPECT_EQ(offsets[i], end) << i;
    end += kPersonDetection[i].size;
  }
  // memplan's default reuses memory: both buffers of the first case are
  // live at time 1 (30 again); person detection drops to its live-bytes
  // peak, far below the linear arena.
  EXPECT_EQ(planBuffers({{10, 0, 1}, {20, 1, 2}}), 30u);
  EXPECT_EQ(planBuffers(kPersonDetection), 64512u);
}

// ---- micro_allocator_test.cc: offline-planned arenas ------------------------

// A graph of 48-byte tensors t0..tN-1 and nodes {inputs} -> {outputs}; the
// model's inputs are the first node's inputs, its outputs the last node's
// outputs (as TFLite Micro's test builder makes them). `offsets[i]` >= 0
// pins ti (mem_id 1), -1 leaves it to the planner.
std::string offlineModel(const std::vector<int>& offsets,
                         const std::vector<std::pair<std::vector<int>, std::vector<int>>>& nodes) {
  const auto refs = [](const std::vector<int>& ids) {
    std::string s;
    for (int i : ids) s += (s.empty() ? "\"t" : ", \"t") + std::to_string(i) + "\"";
    return "[" + s + "]";
  };
  std::string json = R"({"format": "memplan-graph", "version": 1, "name": "offline", "tensors": [)";
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    json += (i ? ", " : "") + std::string(R"({"name": "t)") + std::to_string(i) +
            R"(", "shape": [2, 2, 3], "dtype": "float32")";
    if (offsets[i] >= 0) json += R"(, "mem_id": 1, "offset": )" + std::to_string(offsets[i]);
    json += "}";
  }
  json += R"(], "graphs": [{"name": "main", "inputs": )" + refs(nodes.front().first) +
          R"(, "outputs": )" + refs(nodes.back().second) + R"(, "nodes": [)";
  for (std::size_t n = 0; n < nodes.size(); ++n)
    json += (n ? ", " : "") + std::string(R"({"op": "mock_custom", "inputs": )") +
            refs(nodes[n].first) + R"(, "outputs": )" + refs(nodes[n].second) + "}";
  return json + "]}]}";
}

struct Planned {
  Bytes arena = 0;
  std::vector<Offset> offsets;  // by tensor
};

Planned planOffline(const std::string& json) {
  const Input in = readInput(json, "offline.json");
  const Plan p = plan(in);
  const VerifyResult v = verify(in, p);
  EXPECT_TRUE(v.ok()) << v.violations.front().message;
  EXPECT_TRUE(replay(in, p).ok());
  Planned out;
  out.arena = p.main().bufsizes.at(1);
  const GraphPlan& g = p.main();
  for (TensorId t = 0; t < static_cast<TensorId>(in.model()->tensors.size()); ++t)
    out.offsets.push_back(g.find(g.specs.tensor_spec.at(t))->offset);
  return out;
}

TEST(PeersTflmOfflinePlanner, Basic) {
  const Planned p = planOffline(offlineModel({0, 48, 0, 48}, {{{0}, {1}}, {{1}, {2}}, {{2}, {3}}}));
  EXPECT_EQ(p.offsets, (std::vector<Offset>{0, 48, 0, 48}));  // TFLM: 0, 48, 0, 48
  EXPECT_EQ(p.arena, 96u);
}

TEST(PeersTflmOfflinePlanner, OfflineOnline) {
  // t0, t1, t3 offline; t2, t4 online (TFLM puts them at 96 and 48: 144).
  const Planned p = planOffline(offlineModel({0, 48, -1, 0, -1}, {{{0, 1}, {2}}, {{2}, {3, 4}}}));
  EXPECT_EQ(p.offsets[0], 0u);
  EXPECT_EQ(p.offsets[1], 48u);
  EXPECT_EQ(p.offsets[3], 0u);
  EXPECT_EQ(p.arena, 144u);
}

TEST(PeersTflmOfflinePlanner, BranchesAllOnline) {
  // No offsets (-1 everywhere): TFLM's greedy plan, 0, 96, 48, 0: 144.
  const Planned p = planOffline(offlineModel({-1, -1, -1, -1}, {{{0}, {1}}, {{0}, {2}}, {{1, 2}, {3}}}));
  EXPECT_EQ(p.arena, 144u);
}

TEST(PeersTflmOfflinePlanner, OverlappingAllocationIsRefusedByDefault) {
  // TFLM places t0 and t1 (both inputs of the first node, alive together)
  // at offset 0 as the offline plan says. memplan refuses pinned tensors
  // that overlap as bad input: the plan would let one clobber the other.
  const std::string json = offlineModel({0, 0, 48, -1}, {{{0, 1}, {2}}, {{2}, {3}}});
  const Input in = readInput(json, "offline.json");
  try {
    plan(in);
    ADD_FAILURE() << "overlapping pins accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("pinned"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace memplan

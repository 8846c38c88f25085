// TensorFlow Lite Micro: offline plans read as pins, TFLM's own planner on
// TFLM's view of a model (the offsets of TFLM's micro_allocator tests),
// --write-tflite round trips checked by an independent reader, the plan a
// model carries verified on its own, pinned overlaps refused or accepted.
#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "memplan/algorithm.h"
#include "memplan/import.h"
#include "memplan/memplan.h"
#include "plan/pinned.h"
#include "memplan/plan.h"
#include "plan/tflm_analysis.h"
#include "export/tflite_writer.h"
#include "memplan/verify.h"
#include "support/test_support.h"

namespace memplan {
namespace {

namespace fb = flatbuffers;
namespace fs = std::filesystem;
constexpr fb::voffset_t F(int id) { return static_cast<fb::voffset_t>(4 + 2 * id); }

// ---------------------------------------------------------------------------
// Hand-built models (raw FlatBufferBuilder calls, the public schema's ids).

struct T {  // tensor
  std::vector<std::int32_t> shape = {2, 2, 3};  // float32: 48 bytes, as TFLM's tests
  std::uint32_t buffer = 0;
  std::string name;
  bool is_variable = false;
};
struct Op {
  std::uint32_t opcode = 0;  // 0: custom "mock_custom", 1: IF
  std::vector<std::int32_t> inputs, outputs;
  std::vector<std::int32_t> if_bodies;  // then, else
};
struct Sg {
  std::vector<T> tensors;
  std::vector<std::int32_t> inputs, outputs;
  std::vector<Op> ops;
};
struct Meta {
  std::string name;
  std::uint32_t buffer;
};
struct Desc {
  std::vector<Sg> subgraphs;
  std::vector<std::string> buffers = {""};
  std::vector<Meta> metadata;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> external;  // Buffer{offset, size}
  std::string tail;                                               // bytes after the flatbuffer
};

std::string build(const Desc& d) {
  fb::FlatBufferBuilder b;
  using Off = fb::Offset<fb::Table>;
  std::vector<Off> bufs;
  for (const std::string& data : d.buffers) {
    fb::Offset<fb::Vector<std::uint8_t>> vec;
    if (!data.empty()) {
      b.ForceVectorAlignment(data.size(), 1, 16);
      vec = b.CreateVector(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
    }
    const auto start = b.StartTable();
    if (!data.empty()) b.AddOffset(F(0), vec);
    bufs.push_back(Off(b.EndTable(start)));
  }
  for (const auto& [offset, size] : d.external) {
    const auto start = b.StartTable();
    b.AddElement<std::uint64_t>(F(1), offset, 0);
    b.AddElement<std::uint64_t>(F(2), size, 0);
    bufs.push_back(Off(b.EndTable(start)));
  }
  std::vector<Off> codes;
  {
    const auto custom = b.CreateString("mock_custom");
    auto start = b.StartTable();
    b.AddElement<std::int8_t>(F(0), 32, 0);
    b.AddOffset(F(1), custom);
    b.AddElement<std::int32_t>(F(3), 32, 0);
    codes.push_back(Off(b.EndTable(start)));
    start = b.StartTable();
    b.AddElement<std::int8_t>(F(0), 118, 0);
    b.AddElement<std::int32_t>(F(3), 118, 0);
    codes.push_back(Off(b.EndTable(start)));
  }
  std::vector<Off> sgs;
  for (const Sg& sg : d.subgraphs) {
    std::vector<Off> tensors, ops;
    for (const T& t : sg.tensors) {
      const auto shape = b.CreateVector(t.shape);
      const auto name = b.CreateString(t.name);
      const auto start = b.StartTable();
      b.AddOffset(F(0), shape);
      b.AddElement<std::int8_t>(F(1), 0, 0);  // FLOAT32
      b.AddElement<std::uint32_t>(F(2), t.buffer, 0);
      b.AddOffset(F(3), name);
      b.AddElement<std::uint8_t>(F(5), t.is_variable, 0);
      tensors.push_back(Off(b.EndTable(start)));
    }
    for (const Op& op : sg.ops) {
      Off options;
      if (!op.if_bodies.empty()) {
        const auto start = b.StartTable();
        b.AddElement<std::int32_t>(F(0), op.if_bodies[0], 0);
        b.AddElement<std::int32_t>(F(1), op.if_bodies[1], 0);
        options = Off(b.EndTable(start));
      }
      const auto in = b.CreateVector(op.inputs);
      const auto out = b.CreateVector(op.outputs);
      const auto start = b.StartTable();
      b.AddElement<std::uint32_t>(F(0), op.opcode, 0);
      b.AddOffset(F(1), in);
      b.AddOffset(F(2), out);
      if (!op.if_bodies.empty()) {
        b.AddElement<std::uint8_t>(F(3), 92, 0);  // IfOptions
        b.AddOffset(F(4), options);
      }
      ops.push_back(Off(b.EndTable(start)));
    }
    const auto tv = b.CreateVector(tensors);
    const auto iv = b.CreateVector(sg.inputs);
    const auto ov = b.CreateVector(sg.outputs);
    const auto opv = b.CreateVector(ops);
    const auto start = b.StartTable();
    b.AddOffset(F(0), tv);
    b.AddOffset(F(1), iv);
    b.AddOffset(F(2), ov);
    b.AddOffset(F(3), opv);
    sgs.push_back(Off(b.EndTable(start)));
  }
  std::vector<Off> meta;
  for (const Meta& m : d.metadata) {
    const auto name = b.CreateString(m.name);
    const auto start = b.StartTable();
    b.AddOffset(F(0), name);
    b.AddElement<std::uint32_t>(F(1), m.buffer, 0);
    meta.push_back(Off(b.EndTable(start)));
  }
  const auto cv = b.CreateVector(codes);
  const auto sv = b.CreateVector(sgs);
  const auto bv = b.CreateVector(bufs);
  const auto description = b.CreateString("built by a memplan test");
  const auto mv = d.metadata.empty() ? fb::Offset<fb::Vector<Off>>() : b.CreateVector(meta);
  const auto start = b.StartTable();
  b.AddElement<std::uint32_t>(F(0), 3, 0);
  b.AddOffset(F(1), cv);
  b.AddOffset(F(2), sv);
  b.AddOffset(F(3), description);
  b.AddOffset(F(4), bv);
  if (!d.metadata.empty()) b.AddOffset(F(6), mv);
  b.Finish(Off(b.EndTable(start)), "TFL3");
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()) + d.tail;
}

// The offline plan's buffer bytes: [version, subgraphs, n, offsets...].
std::string planBuffer(const std::vector<std::int32_t>& offsets, std::int32_t subgraphs = 1) {
  std::vector<std::int32_t> words = {1, subgraphs, static_cast<std::int32_t>(offsets.size())};
  words.insert(words.end(), offsets.begin(), offsets.end());
  return std::string(reinterpret_cast<const char*>(words.data()), 4 * words.size());
}

// TFLM's GetModelWithOfflinePlanning: 48-byte tensors t0..tn-1, one custom
// op per connection, inputs = the first op's inputs, outputs = the last's.
Desc offlineModel(int tensors, const std::vector<Op>& ops, const std::vector<std::int32_t>& offsets) {
  Desc d;
  Sg sg;
  for (int i = 0; i < tensors; ++i) sg.tensors.push_back({{2, 2, 3}, 0, "t" + std::to_string(i)});
  sg.ops = ops;
  sg.inputs = ops.front().inputs;
  sg.outputs = ops.back().outputs;
  d.subgraphs = {sg};
  d.buffers = {"", planBuffer(offsets)};
  d.metadata = {{"OfflineMemoryAllocation", 1}};
  return d;
}

Model import(const std::string& bytes, bool ignore = false) {
  ImportOptions o;
  o.ignore_offline_plan = ignore;
  return importTflite(bytes, "model.tflite", o);
}

std::vector<Offset> tflmOffsets(const Model& m) {
  const TflmBuffers b = tflmBuffers(m);
  const PoolSolution s = makeAlgorithm("tflm_greedy")->solve(b.problem, AlgorithmParams{});
  std::vector<Offset> out(m.tensors.size(), ~Offset{0});
  for (std::size_t i = 0; i < b.tensors.size(); ++i) out[static_cast<std::size_t>(b.tensors[i])] = s.offsets[i];
  return out;
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// ---------------------------------------------------------------------------

TEST(TfliteMicro, OfflinePlanIsReadAsPins) {
  // micro_allocator_test.cc, OfflinePlannerBasic.
  const std::string bytes = build(offlineModel(4, {{0, {0}, {1}}, {0, {1}, {2}}, {0, {2}, {3}}}, {0, 48, 0, 48}));
  const Model m = import(bytes);
  for (int t = 0; t < 4; ++t) {
    ASSERT_TRUE(m.tensors[t].offset) << t;
    EXPECT_EQ(*m.tensors[t].offset, t % 2 ? 48u : 0u);
    EXPECT_EQ(m.tensors[t].mem_id, 1);
  }
  EXPECT_EQ(tflmOffsets(m), (std::vector<Offset>{0, 48, 0, 48}));
  const Plan plan = planModelWithPins(m, PlanRequest{});
  EXPECT_EQ(plan.main().bufsizes, (std::vector<Bytes>{0, 96}));
  for (const Allocation& a : plan.main().allocations)
    EXPECT_EQ(a.offset, *m.tensors[plan.main().specs.specs[a.spec].tensor].offset);
  EXPECT_TRUE(verifyPlan(plan).ok());
  // Ignored on request: planned afresh, no pins.
  const Model fresh = import(bytes, true);
  for (const Tensor& t : fresh.tensors) EXPECT_FALSE(t.offset);
}

// OfflinePlannerBranchesAllOnline / TestAllocationForModelsWithBranches:
// all -1, TFLM places t0=0, t1=96, t2=48, t3=0.
TEST(TfliteMicro, TflmViewReproducesBranchesAllOnline) {
  const Model m = import(build(offlineModel(4, {{0, {0}, {1}}, {0, {0}, {2}}, {0, {1, 2}, {3}}}, {-1, -1, -1, -1})));
  for (const Tensor& t : m.tensors) EXPECT_FALSE(t.offset);
  EXPECT_EQ(tflmOffsets(m), (std::vector<Offset>{0, 96, 48, 0}));
  EXPECT_EQ(tflmArenaBytes(m), 144u);
  // memplan needs the same three tensors live at step 3: 144 as well.
  EXPECT_EQ(planModel(m, PlanRequest{}).main().bufsizes[1], 144u);
}

// OfflinePlannerOfflineOnline: t0=0, t1=48, t3=0 offline; t2 -> 96, t4 -> 48.
TEST(TfliteMicro, TflmViewReproducesOfflineOnline) {
  const Model m = import(build(offlineModel(5, {{0, {0, 1}, {2}}, {0, {2}, {3, 4}}}, {0, 48, -1, 0, -1})));
  EXPECT_EQ(tflmOffsets(m), (std::vector<Offset>{0, 48, 96, 0, 48}));
  // memplan honours the same pins and places the rest itself.
  const Plan plan = planModelWithPins(m, PlanRequest{});
  EXPECT_TRUE(verifyPlan(plan).ok());
  EXPECT_EQ(plan.main().bufsizes[1], 144u);
}

// OfflinePlannerOverlappingAllocation: t0 and t1 both at 0 while both
// alive (on purpose), t2 at 48; TFLM puts t3 at 0.
TEST(TfliteMicro, OverlappingPinsAreRefusedUnlessAllowed) {
  const std::string bytes = build(offlineModel(4, {{0, {0, 1}, {2}}, {0, {2}, {3}}}, {0, 0, 48, -1}));
  const Model m = import(bytes);
  EXPECT_EQ(tflmOffsets(m), (std::vector<Offset>{0, 0, 48, 0}));
  const std::string err = errorOf([&] { planModelWithPins(m, PlanRequest{}); });
  EXPECT_NE(err.find("pinned tensors 't0' (bytes [0, 48), steps [0, 2]) and 't1' (bytes [0, 48), steps [0, 2]) "
                     "share bytes while both alive"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("--allow-pinned-overlap"), std::string::npos);
  EXPECT_EQ(err.find('\n'), std::string::npos);

  PlanRequest allow;
  allow.options.allow_pinned_overlap = true;
  const Plan plan = planModelWithPins(m, allow);
  const GraphPlan& g = plan.main();
  ASSERT_EQ(g.allocations.size(), 4u);
  for (const Allocation& a : g.allocations) {
    const TensorId t = g.specs.specs[a.spec].tensor;
    if (t < 3) EXPECT_EQ(a.offset, *m.tensors[t].offset);
    else EXPECT_EQ(a.offset, 0u);  // around t2 (alive together), over t0/t1 (dead)
  }
  EXPECT_EQ(g.bufsizes[1], 96u);
  EXPECT_EQ(g.pools.at(0).buffers, 4u);
  EXPECT_TRUE(verifyPlan(plan).ok());
  PlanOptions strict = plan.options;
  strict.allow_pinned_overlap = false;
  EXPECT_FALSE(verifyGraphPlan(g, strict).ok());  // the verifier still sees it when not allowed
}

TEST(TfliteMicro, AllowedOverlapsStillKeepFreeTensorsOffPins) {
  // t0 [0,48) and t1 [32,80) pinned, overlapping; t2 and t3 free and live
  // with them: planned around the union [0,80).
  Desc d = offlineModel(5, {{0, {0, 1}, {2}}, {0, {2, 0}, {3}}, {0, {3, 1}, {4}}}, {0, 32, -1, -1, -1});
  const Model m = import(build(d));
  PlanRequest allow;
  allow.options.allow_pinned_overlap = true;
  allow.options.alignment = 16;
  const Plan plan = planModelWithPins(m, allow);
  ASSERT_TRUE(verifyPlan(plan).ok());
  for (const Allocation& a : plan.main().allocations) {
    const TensorId t = plan.main().specs.specs[a.spec].tensor;
    if (t == 2 || t == 3) {
      EXPECT_GE(a.offset, 80u) << t;
    }
  }
}

TEST(TfliteMicro, MalformedOfflinePlansAreOneLineErrors) {
  const std::vector<Op> ops = {{0, {0}, {1}}, {0, {1}, {2}}};
  const auto expectError = [&](Desc d, const std::string& needle) {
    const std::string e = errorOf([&] { import(build(d)); });
    EXPECT_NE(e.find(needle), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_NE(e.find("model.tflite: byte "), std::string::npos) << e;
  };
  expectError(offlineModel(3, ops, {0, 48}), "OfflineMemoryAllocation: 2 offsets for 3 tensors");
  Desc d = offlineModel(3, ops, {0, 48, 0});
  d.buffers[1].resize(16);
  expectError(d, "buffer 1 holds 16 bytes, 3 offsets need 24");
  d = offlineModel(3, ops, {0, -5, 0});
  expectError(d, "tensor 1 ('t1'): offset -5 is neither -1");
  d = offlineModel(3, ops, {0, 48, 0});
  d.buffers[1] = "abc";
  expectError(d, "fewer than its 12-byte header");
  d = offlineModel(3, ops, {0, 48, 0});
  d.metadata[0].buffer = 7;
  expectError(d, "buffer index 7 out of range (2 buffers)");
  // --ignore-offline-plan reads past all of these.
  EXPECT_EQ(import(build(d), true).tensors.size(), 3u);
  // A misaligned pin is named before planning.
  const Model m = import(build(offlineModel(3, ops, {0, 8, 0})));
  const std::string e = errorOf([&] { planModelWithPins(m, PlanRequest{}); });
  EXPECT_NE(e.find("tensor 't1' is pinned at offset 8, not a multiple of its alignment 16"), std::string::npos) << e;
}

TEST(TfliteMicro, OfflineOffsetsOfConstantsAndVariablesAreIgnored) {
  Desc d = offlineModel(4, {{0, {0, 2, 3}, {1}}}, {0, 48, 96, 144});
  d.subgraphs[0].tensors[2].buffer = 2;  // a weight
  d.subgraphs[0].tensors[3].is_variable = true;
  d.buffers.push_back(std::string(48, 'w'));
  const Model m = import(build(d));
  EXPECT_TRUE(m.tensors[0].offset);
  EXPECT_TRUE(m.tensors[1].offset);
  EXPECT_FALSE(m.tensors[2].offset);  // TFLM does not place constants
  EXPECT_FALSE(m.tensors[3].offset);  // nor variables (its persistent section)
}

// ---------------------------------------------------------------------------
// --write-tflite, checked by a reader written here (plain little-endian
// reads of the flatbuffer layout, nothing shared with memplan's readers).

class Raw {
 public:
  explicit Raw(std::string b) : b_(std::move(b)) {}
  std::uint32_t u32(std::size_t at) const { return get<std::uint32_t>(at); }
  std::size_t root() const { return u32(0); }
  std::size_t field(std::size_t t, int id) const {
    const std::size_t vt = t - static_cast<std::size_t>(get<std::int32_t>(t));
    const std::size_t slot = 4 + 2 * static_cast<std::size_t>(id);
    if (slot >= get<std::uint16_t>(vt)) return 0;
    const auto off = get<std::uint16_t>(vt + slot);
    return off ? t + off : 0;
  }
  std::size_t deref(std::size_t at) const { return at + u32(at); }
  std::vector<std::size_t> tables(std::size_t t, int id) const {
    std::vector<std::size_t> out;
    if (const std::size_t f = field(t, id))
      for (std::uint32_t i = 0, v = deref(f); i < u32(v); ++i) out.push_back(deref(v + 4 + 4 * i));
    return out;
  }
  std::string bytes(std::size_t t, int id) const {  // [ubyte] / string contents
    const std::size_t f = field(t, id);
    if (!f) return {};
    const std::size_t v = deref(f);
    return b_.substr(v + 4, u32(v));
  }
  std::vector<std::int32_t> ints(std::size_t t, int id) const {
    std::vector<std::int32_t> out;
    if (const std::size_t f = field(t, id))
      for (std::uint32_t i = 0, v = deref(f); i < u32(v); ++i) out.push_back(get<std::int32_t>(v + 4 + 4 * i));
    return out;
  }
  template <typename V>
  V scalar(std::size_t t, int id, V fallback) const {
    const std::size_t f = field(t, id);
    return f ? get<V>(f) : fallback;
  }
  const std::string& data() const { return b_; }

 private:
  template <typename V>
  V get(std::size_t at) const {
    V v;
    std::memcpy(&v, b_.data() + at, sizeof(V));
    return v;
  }
  std::string b_;
};

// Everything but the metadata: subgraphs (tensors, inputs, outputs,
// operators), operator codes, buffers (contents), version, description.
std::string meaning(const Raw& r) {
  std::string s;
  const std::size_t model = r.root();
  s += "version " + std::to_string(r.scalar<std::uint32_t>(model, 0, 0)) + "\n";
  s += "description " + r.bytes(model, 3) + "\n";
  for (std::size_t c : r.tables(model, 1))
    s += "opcode " + std::to_string(r.scalar<std::int32_t>(c, 3, 0)) + " " + r.bytes(c, 1) + "\n";
  const auto buffers = r.tables(model, 4);
  for (std::size_t sg : r.tables(model, 2)) {
    s += "subgraph\n";
    for (std::size_t t : r.tables(sg, 0)) {
      s += "tensor " + r.bytes(t, 3) + " type " + std::to_string(r.scalar<std::int8_t>(t, 1, 0)) + " shape";
      for (std::int32_t d : r.ints(t, 0)) s += " " + std::to_string(d);
      const std::uint32_t b = r.scalar<std::uint32_t>(t, 2, 0);
      s += " var " + std::to_string(r.scalar<std::uint8_t>(t, 5, 0)) + " buffer " + std::to_string(b);
      const std::size_t bt = buffers.at(b);
      const std::uint64_t ext = r.scalar<std::uint64_t>(bt, 1, 0);
      const std::string data = ext > 1 ? r.data().substr(ext, r.scalar<std::uint64_t>(bt, 2, 0)) : r.bytes(bt, 0);
      s += " data " + std::to_string(std::hash<std::string>{}(data)) + "/" + std::to_string(data.size()) + "\n";
    }
    for (int io : {1, 2}) {
      s += io == 1 ? "inputs" : "outputs";
      for (std::int32_t i : r.ints(sg, io)) s += " " + std::to_string(i);
      s += "\n";
    }
    for (std::size_t op : r.tables(sg, 3)) {
      s += "op " + std::to_string(r.scalar<std::uint32_t>(op, 0, 0)) + " in";
      for (std::int32_t i : r.ints(op, 1)) s += " " + std::to_string(i);
      s += " out";
      for (std::int32_t i : r.ints(op, 2)) s += " " + std::to_string(i);
      s += " options " + std::to_string(r.scalar<std::uint8_t>(op, 3, 0)) + "\n";
    }
  }
  return s;
}

// The offline plan a file carries, by the independent reader.
std::vector<std::int32_t> carriedPlan(const Raw& r) {
  const std::size_t model = r.root();
  for (std::size_t m : r.tables(model, 6))
    if (r.bytes(m, 0) == "OfflineMemoryAllocation") {
      const std::string data = r.bytes(r.tables(model, 4).at(r.scalar<std::uint32_t>(m, 1, 0)), 0);
      std::vector<std::int32_t> words(data.size() / 4);
      std::memcpy(words.data(), data.data(), 4 * words.size());
      return words;
    }
  return {};
}

std::string rewrite(const std::string& bytes, const Plan& plan, const Model& m) {
  const TfliteTensorIndex index = tfliteTensorIndex(bytes, "model.tflite");
  return writeTfliteOfflinePlan(bytes, "model.tflite", tfliteOfflineOffsets(m, plan, index));
}

struct ExampleModel {
  const char* path;
};
class RoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(RoundTrip, ExampleModelCarriesMemplansPlan) {
  const fs::path path = test::modelsDir() / GetParam();
  if (!fs::exists(path)) MEMPLAN_MISSING_DATA() << "model not fetched: " << path;
  const std::string bytes = test::readText(path);
  const Model m = import(bytes);
  const Plan plan = planModel(m, PlanRequest{});
  const std::string planned = rewrite(bytes, plan, m);
  EXPECT_EQ(planned, rewrite(bytes, plan, m));  // deterministic

  // Same meaning, read independently; the plan is there, one word per tensor.
  const Raw before(bytes), after(planned);
  EXPECT_EQ(meaning(before), meaning(after));
  EXPECT_EQ(after.tables(after.root(), 4).size(), before.tables(before.root(), 4).size() + 1);
  const std::vector<std::int32_t> words = carriedPlan(after);
  ASSERT_EQ(words.size(), 3 + m.tensors.size());
  EXPECT_EQ(words[0], 1);
  EXPECT_EQ(words[1], 1);
  EXPECT_EQ(words[2], static_cast<std::int32_t>(m.tensors.size()));

  // Read back: every planned tensor pinned where memplan put it; planning
  // the planned model gives the same arena; TFLM's allocator with this plan
  // needs exactly memplan's arena; the plan verifies on its own.
  const Model back = import(planned);
  std::size_t pinned = 0;
  for (const Allocation& a : plan.main().allocations) {
    const Spec& s = plan.main().specs.specs[a.spec];
    ASSERT_TRUE(back.tensors[s.tensor].offset) << s.name;
    EXPECT_EQ(*back.tensors[s.tensor].offset, a.offset) << s.name;
    EXPECT_EQ(words[3 + static_cast<std::size_t>(s.tensor)], static_cast<std::int32_t>(a.offset));
    ++pinned;
  }
  EXPECT_EQ(pinned, plan.main().allocations.size());
  const Plan again = planModelWithPins(back, PlanRequest{});
  EXPECT_EQ(again.main().bufsizes, plan.main().bufsizes);
  EXPECT_EQ(tflmArenaBytes(back), plan.main().bufsizes[1]);
  PlanOptions exact;
  exact.alignment = 1;
  EXPECT_TRUE(verifyPlan(pinnedPlan(back, exact)).ok());
  EXPECT_TRUE(tflmPinConflicts(back).empty());
  // memplan never needs more than TFLM's own planner.
  EXPECT_LE(plan.main().bufsizes[1], tflmArenaBytes(m));
  RecordProperty("memplan", static_cast<int>(plan.main().bufsizes[1]));
  RecordProperty("tflm_greedy", static_cast<int>(tflmArenaBytes(m)));

  // Planned again: the old plan's bytes are overwritten, nothing grows.
  const std::string twice = rewrite(planned, again, back);
  EXPECT_EQ(twice.size(), planned.size());
  EXPECT_EQ(rewrite(twice, again, import(twice)), twice);
  const Raw raw_twice(twice);
  EXPECT_EQ(raw_twice.tables(raw_twice.root(), 4).size(), after.tables(after.root(), 4).size());
  EXPECT_EQ(raw_twice.tables(raw_twice.root(), 6).size(), before.tables(before.root(), 6).size() + 1);
  EXPECT_EQ(carriedPlan(raw_twice), words);
  EXPECT_EQ(meaning(raw_twice), meaning(before));
}

INSTANTIATE_TEST_SUITE_P(Models, RoundTrip,
                         ::testing::Values("face_detection/face_detection_short_range.tflite",
                                           "face_detection/face_detection_full_range.tflite",
                                           "face_detection/face_detection_full_range_sparse.tflite",
                                           "selfie_segmentation/selfie_segmentation.tflite",
                                           "selfie_segmentation/selfie_segmentation_landscape.tflite"));

TEST(TfliteMicro, OtherMetadataAndExternalBuffersSurvive) {
  // Buffers: 0 empty, 1 an old plan, 2 "min_runtime_version", 3 a weight
  // stored after the flatbuffer (Buffer.offset, as in models above 2 GB).
  Desc d = offlineModel(3, {{0, {0, 3}, {1}}, {0, {1}, {2}}}, {-1, -1, -1, -1});
  d.subgraphs[0].tensors.push_back({{8}, 3, "weight"});
  d.subgraphs[0].inputs = {0};
  d.buffers = {"", planBuffer({-1, -1, -1, -1}), "1.5.0"};
  d.metadata = {{"min_runtime_version", 2}, {"OfflineMemoryAllocation", 1}};
  const std::string weight(32, '\x7f');
  d.external = {{1u << 20, weight.size()}};  // the value does not change the layout
  const std::size_t size = build(d).size();
  const std::size_t at = (size + 15) / 16 * 16;
  d.external = {{at, weight.size()}};
  d.tail = std::string(at - size, '\0') + weight;
  const std::string bytes = build(d);
  ASSERT_EQ(bytes.substr(at, weight.size()), weight);

  const Model m = import(bytes);
  ASSERT_EQ(m.tensors[3].kind, TensorKind::Constant);
  const Plan plan = planModel(m, PlanRequest{});
  const std::string planned = rewrite(bytes, plan, m);
  const Raw before(bytes), after(planned);
  EXPECT_EQ(meaning(before), meaning(after));  // the weight's bytes are found at its moved offset
  const auto meta = after.tables(after.root(), 6);
  ASSERT_EQ(meta.size(), 2u);
  EXPECT_EQ(after.bytes(meta[0], 0), "min_runtime_version");
  EXPECT_EQ(after.bytes(after.tables(after.root(), 4).at(after.scalar<std::uint32_t>(meta[0], 1, 0)), 0), "1.5.0");
  // The old plan's buffer (1) was free: reused.
  EXPECT_EQ(after.scalar<std::uint32_t>(meta[1], 1, 0), 1u);
  EXPECT_EQ(after.tables(after.root(), 4).size(), before.tables(before.root(), 4).size());
}

TEST(TfliteMicro, ControlFlowBodiesFollowTheConcatenationRule) {
  // main: t0 -> IF(c, t0) -> t1 -> op -> t2; bodies then/else: x -> y.
  Desc d;
  Sg main;
  main.tensors = {{{2, 2, 3}, 0, "t0"}, {{2, 2, 3}, 0, "t1"}, {{2, 2, 3}, 0, "t2"}, {{1}, 0, "c"}};
  main.inputs = {3, 0};
  main.outputs = {2};
  main.ops = {{1, {3, 0}, {1}, {1, 2}}, {0, {1}, {2}}};
  const auto body = [](const std::string& n) {
    Sg s;
    s.tensors = {{{2, 2, 3}, 0, n + "_x"}, {{4, 2, 3}, 0, n + "_y"}, {{2, 2, 3}, 0, n + "_z"}};
    s.inputs = {0};
    s.outputs = {2};
    s.ops = {{0, {0}, {1}}, {0, {1}, {2}}};
    return s;
  };
  d.subgraphs = {main, body("then"), body("else"), body("unused")};
  const std::string bytes = build(d);
  const Model m = import(bytes);
  ASSERT_EQ(m.graphs.size(), 3u);  // "unused" is never run
  const Plan plan = planModel(m, PlanRequest{});
  ASSERT_TRUE(verifyPlan(plan).ok());
  const TfliteTensorIndex index = tfliteTensorIndex(bytes, "model.tflite");
  EXPECT_EQ(index.total, 4u + 3 * 3);
  const std::vector<std::int32_t> offsets = tfliteOfflineOffsets(m, plan, index);
  ASSERT_EQ(offsets.size(), 13u);
  // Concatenated in file order: main 0-3, then 4-6, else 7-9, unused 10-12 (-1).
  for (const GraphPlan& g : plan.graphs)
    for (const Allocation& a : g.allocations) {
      const TensorId t = g.specs.specs[a.spec].tensor;
      EXPECT_EQ(offsets[static_cast<std::size_t>(index.index[t])], static_cast<std::int32_t>(a.offset))
          << m.tensors[t].name;
    }
  for (std::size_t k = 10; k < 13; ++k) EXPECT_EQ(offsets[k], -1);
  EXPECT_EQ(offsets[4], -1);  // a body's input is its caller's tensor: not planned there
  const std::string planned = writeTfliteOfflinePlan(bytes, "model.tflite", offsets);
  EXPECT_EQ(meaning(Raw(bytes)), meaning(Raw(planned)));
  const Model back = import(planned);
  EXPECT_TRUE(back.tensors[5].offset);  // then_y
  PlanOptions exact;
  exact.alignment = 1;
  EXPECT_TRUE(verifyPlan(pinnedPlan(back, exact)).ok());
  EXPECT_TRUE(tflmPinConflicts(back).empty());
  // A body tensor moved over its caller's live input is caught across graphs.
  std::vector<std::int32_t> bad = offsets;
  bad[5] = offsets[0];  // then_y over t0 (alive through the IF)
  const Model clash = import(writeTfliteOfflinePlan(bytes, "model.tflite", bad));
  const auto conflicts = tflmPinConflicts(clash);
  ASSERT_FALSE(conflicts.empty());
  EXPECT_NE(conflicts[0].find("'t0'"), std::string::npos) << conflicts[0];
  EXPECT_NE(conflicts[0].find("'then_y'"), std::string::npos) << conflicts[0];
}

TEST(TfliteMicro, RewrittenFilesSurviveBitFlips) {
  const std::string bytes = build(offlineModel(4, {{0, {0}, {1}}, {0, {1}, {2}}, {0, {2}, {3}}}, {0, 48, 0, 48}));
  const Model m = import(bytes);
  const std::string planned = rewrite(bytes, planModelWithPins(m, PlanRequest{}), m);
  std::mt19937_64 rng(14);
  int imported = 0, rejected = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string mutated = planned;
    const std::size_t at = rng() % 256;  // the head memplan wrote, and what follows
    mutated[at] = static_cast<char>(mutated[at] ^ (1u << (rng() % 8)));
    try {
      const Model x = import(mutated);
      ++imported;
      try {
        (void)tflmBuffers(x);
      } catch (const InputError&) {
      }
    } catch (const InputError& e) {
      ++rejected;
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
  EXPECT_GT(rejected, 100);
  EXPECT_GT(imported, 100);
}

// ---------------------------------------------------------------------------
// The command line.

// The check every --write-tflite result passes before it is written,
// handed results altered after the writer made them.
std::string planWords(const std::vector<std::int32_t>& words) {
  std::string out(4 * words.size(), '\0');
  std::memcpy(out.data(), words.data(), out.size());
  return out;
}

std::string rewriteError(const std::string& original, const std::string& written,
                         const std::vector<std::int32_t>& offsets) {
  try {
    checkTfliteRewrite(original, written, "model.tflite", offsets);
  } catch (const PlanError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TfliteMicro, RewriteCheckRefusesAnyChangeBeyondThePlan) {
  Desc d = offlineModel(3, {{0, {0, 3}, {1}}, {0, {1}, {2}}}, {-1, -1, -1, -1});
  d.subgraphs[0].tensors.push_back({{8}, 2, "weight"});
  d.subgraphs[0].inputs = {0};
  const std::string weight(32, '\x5a');
  d.buffers = {"", planBuffer({-1, -1, -1, -1}), weight};
  const std::string bytes = build(d);
  const Model m = import(bytes);
  const Plan plan = planModel(m, PlanRequest{});
  const std::vector<std::int32_t> offsets =
      tfliteOfflineOffsets(m, plan, tfliteTensorIndex(bytes, "model.tflite"));
  const std::string planned = writeTfliteOfflinePlan(bytes, "model.tflite", offsets);
  EXPECT_EQ(rewriteError(bytes, planned, offsets), "(no error)");

  std::string altered = planned;  // a weight's byte
  altered[altered.find(weight) + 5] = '\x5b';
  EXPECT_EQ(rewriteError(bytes, altered, offsets),
            "model.tflite: the rewritten model differs beyond its plan: buffer 2 (weights or "
            "constants) changed; nothing written");
  altered = planned;  // a tensor's name, in the subgraph
  const std::size_t name = altered.rfind("t1");
  ASSERT_NE(name, std::string::npos);
  altered[name + 1] = '7';
  const std::size_t base = planned.size() - bytes.size();
  EXPECT_EQ(rewriteError(bytes, altered, offsets),
            fmt::format("model.tflite: the rewritten model differs beyond its plan: byte {} of the "
                        "original (now {}) changed; nothing written",
                        name + 1 - base, name + 1));
  std::vector<std::int32_t> other = offsets;  // not the plan given
  other[1] = other[1] == 0 ? 16 : 0;
  EXPECT_EQ(rewriteError(bytes, planned, other),
            "model.tflite: the rewritten model differs beyond its plan: the offline plan read back "
            "is not the plan given; nothing written");
  EXPECT_NE(rewriteError(bytes, bytes, offsets).find("is not the plan given"), std::string::npos);
}

// tests/data/hostile-writers/sharedplan.tflite: the offline plan's Buffer
// table (2) points at the vector of weight 'w' (buffer 1). The old writer
// wrote the new plan over those bytes in place: 'w' changed, exit 0.
TEST(TfliteMicroCli, PlanBytesSharedWithAWeightAreNotOverwritten) {
  const fs::path dir = test::tempDir("tflm-shared-plan");
  const fs::path input = test::dataDir() / "hostile-writers" / "sharedplan.tflite";
  const std::string bytes = test::readText(input);
  const Raw before(bytes);
  const auto weights = [](const Raw& r) { return r.bytes(r.tables(r.root(), 4).at(1), 0); };
  ASSERT_EQ(weights(before), planWords({1, 1, 3, 16, -1, 0}));  // shared: the plan's words
  const fs::path out = dir / "out.tflite", plan_json = dir / "p.json";
  test::CliResult r = test::runCli("plan -q --ignore-offline-plan " + input.string() + " -o " +
                                   plan_json.string() + " --write-tflite " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string written = test::readText(out);
  const Raw after(written);
  EXPECT_EQ(weights(after), weights(before));  // 'w' byte for byte
  EXPECT_EQ(meaning(after), meaning(before));
  EXPECT_GT(written.size(), bytes.size());     // a new buffer, not the shared bytes
  // The plan read back is the one memplan made, and it checks out.
  ImportOptions ignore;
  ignore.ignore_offline_plan = true;
  const Input in = readInput(input, ignore);
  const Plan plan = memplan::plan(in, PlanRequest{});
  const std::vector<std::int32_t> offsets =
      tfliteOfflineOffsets(*in.model(), plan, tfliteTensorIndex(bytes, input.string()));
  std::vector<std::int32_t> want = {1, 1, 3};
  want.insert(want.end(), offsets.begin(), offsets.end());
  EXPECT_EQ(carriedPlan(after), want);
  EXPECT_NE(want, (std::vector<std::int32_t>{1, 1, 3, 16, -1, 0}));
  for (const std::string& cmd : {"verify " + out.string(), "replay " + out.string(),
                                "verify " + input.string() + " " + plan_json.string(),
                                "replay " + input.string() + " " + plan_json.string()}) {
    r = test::runCli(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.out << r.err;
  }
  // What the old writer wrote (the words in place) is refused by the check.
  std::string in_place = bytes;
  const std::size_t at = in_place.find(planWords({1, 1, 3, 16, -1, 0}));
  in_place.replace(at, 4 * want.size(), planWords(want));
  EXPECT_EQ(rewriteError(bytes, in_place, offsets),
            "model.tflite: the rewritten model differs beyond its plan: buffer 1 (weights or "
            "constants) changed; nothing written");
  fs::remove_all(dir);
}

TEST(TfliteMicroCli, WriteVerifyAndRefuse) {
  const fs::path dir = test::tempDir("tflm-cli");
  const fs::path input = dir / "overlap.tflite";
  std::ofstream(input, std::ios::binary) << build(offlineModel(4, {{0, {0, 1}, {2}}, {0, {2}, {3}}}, {0, 0, 48, -1}));
  // Overlapping pins: refused by plan and by verify, naming both tensors.
  test::CliResult r = test::runCli("plan -q " + input.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'t0'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'t1'"), std::string::npos) << r.err;
  r = test::runCli("verify " + input.string());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("INVALID"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'t0'"), std::string::npos) << r.out;
  // Accepted when asked; planned afresh when the plan is ignored.
  EXPECT_EQ(test::runCli("plan -q --allow-pinned-overlap " + input.string()).exit_code, 0);
  EXPECT_EQ(test::runCli("verify --allow-pinned-overlap " + input.string()).exit_code, 0);
  // Plan files record both choices: verify and replay need no flags again.
  const fs::path plan_json = dir / "overlap.plan.json";
  r = test::runCli("plan -q --allow-pinned-overlap " + input.string() + " -o " + plan_json.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(test::readText(plan_json).find("\"allow_pinned_overlap\":true"), std::string::npos);
  r = test::runCli("verify " + input.string() + " " + plan_json.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path fresh_json = dir / "fresh.plan.json";
  r = test::runCli("plan -q --ignore-offline-plan " + input.string() + " -o " + fresh_json.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(test::readText(fresh_json).find("\"ignore_offline_plan\":true"), std::string::npos);
  r = test::runCli("verify " + input.string() + " " + fresh_json.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = test::runCli("replay " + input.string() + " " + fresh_json.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path planned = dir / "planned.tflite";
  r = test::runCli("plan -q --ignore-offline-plan " + input.string() + " --write-tflite " + planned.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::runCli("verify " + planned.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("OK: 4 allocations verified"), std::string::npos) << r.out;
  r = test::runCli("replay " + planned.string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // The report shows TFLite Micro's own arena beside memplan's.
  r = test::runCli("plan --bytes " + planned.string());
  EXPECT_NE(r.out.find("TFLite Micro's own planner (GreedyMemoryPlanner) would need"), std::string::npos) << r.out;
  // Wrong inputs.
  const std::string json = (test::sourceDir() / "examples/runtime/tiny_cnn.json").string();
  r = test::runCli("plan -q " + json + " --write-tflite " + (dir / "x.tflite").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is not a .tflite model"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "x.tflite"));
  r = test::runCli("verify " + json);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("carries no plan of its own"), std::string::npos) << r.err;
  r = test::runCli("plan -q --per-device " + input.string() + " --ignore-offline-plan -a tflm_greedy --write-tflite " +
                   (dir / "y.tflite").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace memplan

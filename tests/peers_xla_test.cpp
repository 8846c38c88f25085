// XLA's heap-simulator test cases (openxla/xla:
// xla/service/heap_simulator/heap_simulator_test.cc), translated into
// memplan's terms. XLA's heap algorithms see a sequence of Alloc, Free and
// ShareWith calls, each one step of time; a buffer lives from its Alloc to
// its Free, both included. Here each sequence becomes planning specs (a
// ShareWith buffer is an in-place spec at its base's offset), planned by
// memplan's default algorithm; a size-limited heap set
// (ConstrainedGlobalDecreasingSizeBestFitHeap) becomes pools with that
// capacity and a spill order. memplan must match or beat XLA's heap size.
// docs/peers.md has the table.
#include <gtest/gtest.h>

#include <map>

#include "memplan/memplan.h"
#include "support/test_support.h"
#include "verify/replay.h"

namespace memplan {
namespace {

class Heap {
 public:
  explicit Heap(Bytes alignment = 1) : alignment_(alignment) {}
  Heap& alloc(const std::string& name, Bytes size) { return add(name, size, kNone); }
  Heap& shareWith(const std::string& name, const std::string& base, Bytes size) {
    return add(name, size, ids_.at(base));
  }
  Heap& free(const std::string& name) {
    specs_.specs[ids_.at(name)].last = t_++;
    return *this;
  }
  GraphSpecs specs() const {
    GraphSpecs g = specs_;
    g.steps = t_;
    return g;
  }
  SpecId id(const std::string& name) const { return ids_.at(name); }

 private:
  Heap& add(const std::string& name, Bytes size, SpecId base) {
    Spec s;
    s.id = static_cast<SpecId>(specs_.specs.size());
    s.name = name;
    s.nbytes = size;
    s.alignment = alignment_;
    s.first = s.last = t_++;
    s.inplace_base = base;
    s.planned = true;
    ids_[name] = s.id;
    specs_.specs.push_back(std::move(s));
    return *this;
  }
  Bytes alignment_;
  TimeValue t_ = 0;
  GraphSpecs specs_;
  std::map<std::string, SpecId> ids_;
};

// Plans the heap (auto) and checks the plan; returns the total of its pools.
// `limit`: each pool holds at most that many bytes, spilling 1 -> 2 -> ...
Bytes planHeap(const Heap& heap, std::optional<Bytes> limit = std::nullopt, GraphPlan* out = nullptr) {
  PlanRequest r;
  r.algorithm = "auto";
  const GraphSpecs specs = heap.specs();
  if (limit) {
    r.options.capacities.assign(specs.specs.size() + 2, limit);
    r.options.capacities[0] = std::nullopt;
    for (MemId m = 1; m <= static_cast<MemId>(specs.specs.size()); ++m) r.options.spill_order.push_back(m);
  }
  GraphPlan p = planSpecs(specs, r, {});
  const VerifyResult v = verifyGraphPlan(p, r.options);
  EXPECT_TRUE(v.ok()) << v.violations.front().message;
  EXPECT_TRUE(replaySpecs(p, r.options).ok());
  Bytes total = 0;
  for (std::size_t m = 1; m < p.bufsizes.size(); ++m) {
    if (limit) {
      EXPECT_LE(p.bufsizes[m], *limit) << "pool " << m;
    }
    total += p.bufsizes[m];
  }
  if (out) *out = std::move(p);
  return total;
}

// ---- NoFragmentationStatsHeapTest: the live-bytes peak ----------------------

TEST(PeersXlaNoFragmentationStats, EmptySimpleMixed) {
  EXPECT_EQ(planHeap(Heap()), 0u);  // XLA: 0
  EXPECT_EQ(planHeap(Heap().alloc("a", 10).alloc("b", 20).alloc("c", 30).alloc("d", 30)
                         .free("a").free("b").free("c").free("d")),
            90u);  // XLA: 90
  EXPECT_EQ(planHeap(Heap().alloc("a", 10).alloc("b", 20).free("b").alloc("c", 30).free("c")
                         .alloc("d", 5).free("d").free("a")),
            40u);  // XLA: 40
}

// ---- GlobalDecreasingSizeBestFitHeapTest -------------------------------------

TEST(PeersXlaGlobalDecreasingSizeBestFit, DecreasingSizeAndBestFit) {
  EXPECT_EQ(planHeap(Heap().alloc("a", 10).alloc("b", 30).alloc("c", 20).alloc("d", 40)
                         .free("a").free("b").free("c").free("d")),
            100u);  // XLA: 100
  EXPECT_EQ(planHeap(Heap().alloc("a", 10).alloc("b", 20).alloc("c", 40).free("a").alloc("d", 30)
                         .alloc("e", 50).free("b").free("c").free("d").free("e")),
            140u);  // XLA: 140
}

// XLA aligns offsets to 20 (not a power of two). memplan rounds sizes up to
// the alignment as well, so its pools are multiples of 20.
TEST(PeersXlaGlobalDecreasingSizeBestFit, DecreasingSizeWithAlignment20) {
  GraphPlan p;
  EXPECT_EQ(planHeap(Heap(20).alloc("a", 10).alloc("b", 20).alloc("c", 50).free("a").alloc("d", 40)
                         .free("b").free("c").free("d"),
                     std::nullopt, &p),
            120u);  // XLA: 120
  for (const Allocation& a : p.allocations) EXPECT_EQ(a.offset % 20, 0u) << a.spec;
}

TEST(PeersXlaGlobalDecreasingSizeBestFit, ColocatedBuffersShareTheirBaseOffset) {
  // `xla`: XLA's expected heap size; `memplan`: memplan's, never above it.
  const auto check = [](const Heap& h, Bytes xla, Bytes memplan) {
    GraphPlan p;
    const Bytes planned = planHeap(h, std::nullopt, &p);
    EXPECT_EQ(planned, memplan);
    EXPECT_LE(planned, xla);
    EXPECT_EQ(p.find(h.id("c"))->offset, p.find(h.id("a"))->offset);
  };
  // Colocated: a, b, c one after another; c colocated with a.
  check(Heap().alloc("a", 40).free("a").alloc("b", 20).free("b").shareWith("c", "a", 40).free("c"), 40, 40);
  // ColocatedII: b alive across c.
  check(Heap().alloc("a", 40).free("a").alloc("b", 20).shareWith("c", "a", 40).free("c").free("b"), 60, 60);
  // ColocatedIII.
  check(Heap().alloc("a", 10).free("a").alloc("b", 30).shareWith("c", "a", 10).free("c").free("b"), 40, 40);
  // ColocatedDifferentSize1: XLA gives c a's 40 bytes; memplan gives c its
  // own 30 and, the group being one buffer with a 30-byte window, puts b at
  // 30.
  check(Heap().alloc("a", 40).free("a").alloc("b", 20).shareWith("c", "a", 30).free("c").free("b"), 60, 50);
  // ColocatedDifferentSize2: c larger than a.
  check(Heap().alloc("a", 40).free("a").alloc("b", 20).shareWith("c", "a", 50).free("c").free("b"), 70, 70);
}

// The colocation of ColocatedDifferentSize1 as one buffer with gaps (no
// in-place pair needed): a's 40 bytes at [0, 2), nothing while b alone
// lives, then c's 30 bytes. Needs an algorithm that honours gaps.
TEST(PeersXlaGlobalDecreasingSizeBestFit, ColocationAsGaps) {
  const Input in = Input::fromBuffers(
      readMiniMallocCsv("id,lower,upper,size,gaps\nac,0,5,40,2-3 3-5@0:30\nb,2,6,20,\n", "x.csv"));
  const Plan p = plan(in);
  EXPECT_TRUE(verify(in, p).ok());
  EXPECT_EQ(p.main().bufsizes.at(1), 50u);  // XLA: 60
}

// FindGlobalDecreasingSizeBestFitTest.ChunkCandidate: preferred offsets are
// hints (honoured by algorithms that declare honours_hints).
TEST(PeersXlaGlobalDecreasingSizeBestFit, ChunkCandidateWithPreferredOffsets) {
  const Input in = Input::fromBuffers(readMiniMallocCsv(
      "id,lower,upper,size,hint\n"
      "a,6,11,5,5\nb,3,6,10,-1\nc,2,9,5,-1\nd,0,3,5,10\ne,11,14,10,10\nf,3,6,5,20\ng,4,9,10,15\n",
      "chunks.csv"));
  const Plan p = plan(in);
  EXPECT_TRUE(verify(in, p).ok());
  EXPECT_EQ(p.main().bufsizes.at(1), 30u);  // XLA: 35; the live-bytes peak is 30
}

// ---- ConstrainedGlobalDecreasingSizeBestFitHeapTest: heaps of limited size --

TEST(PeersXlaConstrainedHeaps, DecreasingSize) {
  // Also DecreasingSizeFastMerge and DecreasingSizeFastSplit: the same
  // buffers, 100 bytes over 3 or 2 heaps.
  EXPECT_EQ(planHeap(Heap().alloc("a", 10).alloc("b", 30).alloc("c", 20).alloc("d", 40)
                         .free("a").free("b").free("c").free("d"),
                     50),
            100u);  // XLA: 100
}

TEST(PeersXlaConstrainedHeaps, DecreasingSizeWithAlignment20) {
  EXPECT_EQ(planHeap(Heap(20).alloc("a", 10).alloc("b", 20).alloc("c", 50).free("a").alloc("d", 40)
                         .free("b").free("c").free("d"),
                     70),
            120u);  // XLA: 130 (70 + 60)
}

TEST(PeersXlaConstrainedHeaps, ColocatedIIWithAlignment20) {
  EXPECT_EQ(planHeap(Heap(20).alloc("a", 30).free("a").alloc("b", 20).shareWith("c", "a", 40)
                         .free("c").free("b"),
                     50),
            60u);  // XLA: 60 (40 + 20)
}

TEST(PeersXlaConstrainedHeaps, PhaseWindows) {
  // PhaseWindowEndClustersByExpiry / PhaseWindowOrdersByStartTime: two
  // heaps either way ({a, c} and {b}, or {b, c} and {a}): 85 bytes.
  EXPECT_EQ(planHeap(Heap().alloc("a", 40).alloc("b", 35).alloc("c", 10).free("b").free("c").free("a"),
                     50),
            85u);
}

}  // namespace
}  // namespace memplan

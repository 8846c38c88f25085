// Replay of a plan on a spec list (verify/replay.h). A spec list has no
// graph: each spec is written at its first step and checked at its last
// (each piece of a spec with gaps likewise), on shadow arenas
// (verify/shadow.h). Writes of a step come before its reads. A spec's
// write id is 1 + its index; each pool's reserved prefix is written first
// with an id of its own and checked after the last step.
//
//   specs    a [0, 3] at 0, 32 bytes     b [2, 5] at 16, 32 bytes   (mem_id 1)
//
//   step     ops                       shadow of mem_id 1
//   0        write a (w1)              [0,32) w1
//   2        write b (w2)              [0,16) w1  [16,48) w2
//   3        check a [0,32) for w1:    byte 16 holds w2
//            -> "spec 'a' [0, 3] was clobbered at mem_id 1 offset 16:
//                overwritten by 'b' (written at step 2)"
#include "verify/replay.h"

#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "memplan/verify.h"
#include "verify/pieces.h"
#include "verify/shadow.h"

namespace memplan {
namespace {

using shadow::Clobber;
using shadow::PoolShape;
using shadow::reportClobber;
using shadow::Shadow;
using shadow::WriteId;

// The write or the read of one piece (a spec without gaps: one piece).
struct PieceOp {
  TimeValue time;
  bool read;
  SpecId spec;
  std::int64_t piece;  // index into SpecLayout::pieces (bytes from the offset); -1: all
};

// What the replay runs: the specs' allocations, the pools' reserved
// prefixes and shapes, and every piece's write and read in time order.
struct SpecLayout {
  std::vector<const Allocation*> alloc;  // by spec; null: not planned
  std::vector<Bytes> reserved;           // by mem_id
  std::vector<PoolShape> pools;          // by mem_id
  std::vector<PieceOp> ops;
  std::vector<piece::Piece> pieces;
};

bool fail(ReplayResult& r, ReplayIssue issue, std::string message) {
  r.issue = issue;
  r.message = std::move(message);
  return false;
}

// One planned spec's allocation checked, its pieces' ranges and
// operations added. False (r says why) when it cannot be replayed.
bool layOutSpec(const GraphPlan& plan, SpecId s, SpecLayout& out, std::vector<piece::Piece>& scratch,
                ReplayResult& r) {
  const Spec& spec = plan.specs.specs[s];
  const Allocation* a = out.alloc[s];
  const auto end = checkedAdd(a->offset, a->size);  // padding included
  const auto mid = static_cast<std::size_t>(std::max(a->mem_id, 0));
  const Bytes pool = mid < plan.bufsizes.size() ? plan.bufsizes[mid] : 0;
  if (a->size < spec.nbytes)
    return fail(r, ReplayIssue::ShortAllocation,
                fmt::format("replay: spec '{}' needs {} bytes but its allocation holds {}", spec.name,
                            spec.nbytes, a->size));
  if (a->mem_id < 1 || !end || *end > pool)
    return fail(r, ReplayIssue::OutOfArena,
                fmt::format("replay: spec '{}' at mem_id {} [{}, +{}) lies outside its pool "
                            "({} bytes)", spec.name, a->mem_id, a->offset, a->size, pool));
  if (spec.first > spec.last)
    return fail(r, ReplayIssue::BadPlan,
                fmt::format("replay: spec '{}' has lifetime [{}, {}]", spec.name, spec.first, spec.last));
  out.pools[mid].add(a->offset, a->size);
  if (spec.gaps.empty()) {
    out.ops.push_back({spec.first, false, s, -1});
    out.ops.push_back({spec.last, true, s, -1});
    return true;
  }
  piece::piecesOf(spec, a->size, scratch);
  for (const piece::Piece& p : scratch) {
    out.pools[mid].add(a->offset + p.begin, p.end - p.begin);
    const auto index = static_cast<std::int64_t>(out.pieces.size());
    out.pieces.push_back(p);
    out.ops.push_back({p.first, false, s, index});
    out.ops.push_back({p.last, true, s, index});
  }
  return true;
}

// False (r says why) when the plan cannot be replayed.
bool layOut(const GraphPlan& plan, SpecLayout& out, ReplayResult& r) {
  const std::vector<Spec>& specs = plan.specs.specs;
  out.alloc.assign(specs.size(), nullptr);
  for (const Allocation& a : plan.allocations) {
    if (a.spec < 0 || static_cast<std::size_t>(a.spec) >= specs.size())
      return fail(r, ReplayIssue::BadPlan,
                  fmt::format("replay: allocation for spec {}, which does not exist", a.spec));
    out.alloc[a.spec] = &a;
  }
  out.reserved.assign(plan.bufsizes.size(), 0);
  for (const PoolInfo& pool : plan.pools)
    if (pool.mem_id >= 1 && static_cast<std::size_t>(pool.mem_id) < out.reserved.size())
      out.reserved[pool.mem_id] = std::min(pool.reserved, plan.bufsizes[pool.mem_id]);
  out.pools.assign(plan.bufsizes.size(), PoolShape{});
  for (std::size_t m = 1; m < out.reserved.size(); ++m) {
    out.pools[m].size = plan.bufsizes[m];
    if (out.reserved[m] > 0) out.pools[m].add(0, out.reserved[m]);
  }
  std::vector<piece::Piece> scratch;
  for (std::size_t s = 0; s < specs.size(); ++s) {
    const Allocation* a = out.alloc[s];
    if (!a || specs[s].nbytes == 0 || a->size == 0) continue;
    if (!layOutSpec(plan, static_cast<SpecId>(s), out, scratch, r)) return false;
  }
  // Writes of a step before its reads; stable by spec order otherwise.
  std::stable_sort(out.ops.begin(), out.ops.end(), [](const PieceOp& a, const PieceOp& b) {
    if (a.time != b.time) return a.time < b.time;
    return a.read < b.read;
  });
  return true;
}

SpecId specOfWrite(WriteId id, std::size_t specs) {
  return id >= 1 && id <= specs ? static_cast<SpecId>(id - 1) : kNone;
}

// Runs the writes and checks in time order. False after the first clobber
// (reported in r).
bool replayPieces(const GraphPlan& plan, const PlanOptions& plan_options, const SpecLayout& layout,
                  std::vector<Shadow>& shadows, ReplayResult& r) {
  const std::vector<Spec>& specs = plan.specs.specs;
  TimeValue last_time = std::numeric_limits<TimeValue>::min();
  for (const PieceOp& op : layout.ops) {
    if (op.time != last_time) ++r.steps, last_time = op.time;
    const Allocation& a = *layout.alloc[op.spec];
    const Offset at = op.piece < 0 ? a.offset : a.offset + layout.pieces[op.piece].begin;
    const Bytes n = op.piece < 0 ? a.size : layout.pieces[op.piece].end - layout.pieces[op.piece].begin;
    const WriteId id = static_cast<WriteId>(op.spec) + 1;
    if (!op.read) {
      shadows[a.mem_id].write(at, n, id);
      ++r.writes;
      continue;
    }
    ++r.reads;
    // A ShareWith pair at one offset may overwrite each other, and so may
    // pinned specs the plan lets share bytes (the verifier's exceptions).
    const bool pinned = plan_options.allow_pinned_overlap && specs[op.spec].offset.has_value();
    const auto accept = [&](WriteId found) {
      if (found == id) return true;
      const SpecId other = specOfWrite(found, specs.size());
      if (other == kNone) return false;
      if (pinned && specs[other].offset.has_value()) return true;
      const Allocation* o = layout.alloc[other];
      return o && o->mem_id == a.mem_id && o->offset == a.offset &&
             (specs[other].inplace_base == op.spec || specs[op.spec].inplace_base == other);
    };
    const auto bad = shadows[a.mem_id].check(at, n, accept);
    if (!bad) continue;
    const SpecId other = specOfWrite(bad->found, specs.size());
    Clobber c;
    c.graph = plan.graph;
    c.victim = specs[op.spec].name;
    c.writer = other != kNone ? specs[other].name : "";
    c.write_step = other != kNone ? specs[other].first : 0;
    c.read_step = op.time;
    c.mem_id = a.mem_id;
    c.offset = bad->offset;
    c.message = fmt::format("replay: spec '{}' [{}, {}] was clobbered at mem_id {} offset {}: "
                            "overwritten by '{}' (written at step {})",
                            c.victim, specs[op.spec].first, specs[op.spec].last, c.mem_id, c.offset,
                            other != kNone ? c.writer : "nothing", c.write_step);
    reportClobber(r, std::move(c));
    return false;
  }
  return true;
}

// Each pool's reserved prefix still holds its first write; the first that
// does not is reported in r.
void checkReservedPrefixes(const GraphPlan& plan, const SpecLayout& layout,
                           const std::vector<Shadow>& shadows, WriteId reserved_id, ReplayResult& r) {
  const std::vector<Spec>& specs = plan.specs.specs;
  for (std::size_t m = 1; m < layout.reserved.size(); ++m) {
    const auto bad =
        shadows[m].check(0, layout.reserved[m], [&](WriteId found) { return found == reserved_id; });
    if (!bad) continue;
    const SpecId other = specOfWrite(bad->found, specs.size());
    Clobber c;
    c.graph = plan.graph;
    c.victim = fmt::format("reserved prefix of mem_id {}", m);
    c.writer = other != kNone ? specs[other].name : "";
    c.write_step = other != kNone ? specs[other].first : 0;
    c.mem_id = static_cast<MemId>(m);
    c.offset = bad->offset;
    c.message = fmt::format("replay: the reserved prefix of mem_id {} ({} bytes) was overwritten "
                            "at offset {} by '{}' (written at step {})",
                            m, layout.reserved[m], c.offset, c.writer, c.write_step);
    reportClobber(r, std::move(c));
    return;
  }
}

ReplayResult replaySpecsRun(const GraphPlan& plan, const PlanOptions& plan_options,
                            const ReplayOptions& options) {
  ReplayResult r;
  SpecLayout layout;
  if (!layOut(plan, layout, r)) return r;
  std::vector<Shadow> shadows = shadow::makeShadows(layout.pools, options, r);
  // Write ids: 1 + spec for specs, `reserved_id` for the prefixes.
  const WriteId reserved_id = static_cast<WriteId>(plan.specs.specs.size()) + 1;
  for (std::size_t m = 1; m < layout.reserved.size(); ++m)
    shadows[m].write(0, layout.reserved[m], reserved_id);
  if (replayPieces(plan, plan_options, layout, shadows, r))
    checkReservedPrefixes(plan, layout, shadows, reserved_id, r);
  r.shadow_work = shadow::shadowWork(shadows);
  return r;
}

}  // namespace

ReplayResult replaySpecs(const GraphPlan& plan, const ReplayOptions& options) {
  return replaySpecs(plan, PlanOptions{}, options);
}

ReplayResult replaySpecs(const GraphPlan& plan, const PlanOptions& plan_options,
                         const ReplayOptions& options) {
  ReplayResult r = replaySpecsRun(plan, plan_options, options);
  if (!r.ok()) return r;
  // What needs no running is checked as the verifier checks it.
  if (const VerifyResult structure = checkGraphStructure(plan, plan_options, 1); !structure.ok()) {
    r.issue = ReplayIssue::BadPlan;
    r.message = "replay: " + structure.violations[0].message;
  }
  return r;
}

}  // namespace memplan

// The shadow arenas both replays run on (model_replay.cpp, spec_replay.cpp):
// per pool, which write last touched each byte, and how a clobber found
// there is reported.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "verify/replay.h"

namespace memplan::shadow {

using WriteId = std::uint32_t;  // index into a replay's write log; 0 = never written
constexpr WriteId kUnwritten = 0;

// Shadow of one pool: which write last touched each byte.
//
// A write or a check costs what the tensors are, never what they weigh:
// the shadow is a run map unless a flat array of granules is as cheap.
//
//   pool (mem_id 1)   0        64       128   160     x, y at 64 B, z at 32 B
//                     |--x:w1--|--y:w2--|z:w3-|
//
//   runs_  (map)      0 -> {end 64, w1}    each key a run's first byte; runs
//                    64 -> {end 128, w2}   are disjoint, bytes of no run are
//                   128 -> {end 160, w3}   unwritten. write: O(log n + runs
//                                          it replaces); check: O(log n +
//                                          runs it crosses), whatever the size
//   cells_ (flat)     [w1 w1 w2 w2 w3]     granule 32 (gcd of every end):
//                                          only when no range spans more than
//                                          kMaxCellsPerRange cells and the
//                                          pool has at most that many cells
//                                          per range (a few per tensor)
//
//   write w4 over [96, 144): y's head and z's tail stay
//   runs_                0 -> {64, w1}  64 -> {96, w2}  96 -> {144, w4}  144 -> {160, w3}
//   check y [64, 128) for w2: the run at 64 passes, the run at 96 is w4:
//                        Mismatch{96, w4}, the first clobbered byte and its writer
//
// A range of 2^27 bytes is one run; as cells it would be 2^27 writes at
// granule 1, the reason the flat form is held to a few cells per range.
class Shadow {
 public:
  static constexpr std::uint64_t kMaxCellsPerRange = 64;

  void initCells(Bytes size, Bytes granule) {
    cells_mode_ = true;
    granule_ = granule;
    cells_.assign(static_cast<std::size_t>(size / granule + (size % granule != 0)), kUnwritten);
  }
  // Cells and runs writes and checks visited (ReplayResult::shadow_work).
  std::uint64_t work() const { return work_; }

  // Bytes [off, off + n) now hold write `id`.
  void write(Offset off, Bytes n, WriteId id);

  struct Mismatch {
    Offset offset;
    WriteId found;
  };
  // First byte of [off, off + n) whose owner `accept` refuses.
  template <typename Accept>
  std::optional<Mismatch> check(Offset off, Bytes n, const Accept& accept) const {
    if (n == 0) return std::nullopt;
    if (cells_mode_) {
      for (std::size_t c = off / granule_, e = (off + n) / granule_; c < e; ++c, ++work_)
        if (!accept(cells_[c])) return Mismatch{c * granule_, cells_[c]};
      return std::nullopt;
    }
    const Offset end = off + n;
    Offset pos = off;
    while (pos < end) {
      ++work_;
      auto it = runs_.upper_bound(pos);
      if (it == runs_.begin() || std::prev(it)->second.end <= pos) {
        if (!accept(kUnwritten)) return Mismatch{pos, kUnwritten};
        pos = it == runs_.end() ? end : std::min(end, it->first);
        continue;
      }
      const Run& run = std::prev(it)->second;
      if (!accept(run.id)) return Mismatch{pos, run.id};
      pos = run.end;
    }
    return std::nullopt;
  }

 private:
  struct Run {
    Offset end;
    WriteId id;
  };
  bool cells_mode_ = false;
  mutable std::uint64_t work_ = 0;
  Bytes granule_ = 1;
  std::vector<WriteId> cells_;
  std::map<Offset, Run> runs_;
};

// The ranges a pool's shadow will be written and checked over: what
// chooses its form.
struct PoolShape {
  Bytes size = 0;            // arena bytes
  Bytes granule = 0;         // gcd of every range's ends (0: no range yet)
  Bytes longest = 0;         // longest range
  std::uint64_t ranges = 0;  // ranges added
  void add(Offset begin, Bytes n) {
    granule = std::gcd(granule, std::gcd(begin, begin + n));
    longest = std::max(longest, n);
    ++ranges;
  }
};

// Shadows of `pools` (index = mem_id): flat cells where each range is a few
// cells, the pool a few cells per range and the budget lasts (in mem_id
// order); run maps otherwise.
std::vector<Shadow> makeShadows(const std::vector<PoolShape>& pools, const ReplayOptions& options,
                                ReplayResult& result);

// The first clobber, as ReplayResult reports it.
struct Clobber {
  GraphId graph = 0;
  std::string victim, writer, writer_node, reader_node;
  TimeValue write_step = 0, read_step = 0;
  MemId mem_id = 0;
  Offset offset = 0;
  std::string message;
};

// Records the first clobber in `r` (later ones are dropped).
void reportClobber(ReplayResult& r, Clobber c);

// a + b, saturating (counts of a run whose bodies repeat may be huge).
inline std::uint64_t saturatingCount(std::uint64_t a, std::uint64_t b) {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max()
                                                           : a + b;
}
inline void bump(std::uint64_t& count) { count = saturatingCount(count, 1); }

// The work of every shadow (ReplayResult::shadow_work), saturating.
std::uint64_t shadowWork(const std::vector<Shadow>& shadows);

}  // namespace memplan::shadow

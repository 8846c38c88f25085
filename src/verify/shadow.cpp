// The shadow arenas of the replays: see shadow.h.
#include "verify/shadow.h"

namespace memplan::shadow {

void Shadow::write(Offset off, Bytes n, WriteId id) {
  if (n == 0) return;
  if (cells_mode_) {
    work_ += (off + n) / granule_ - off / granule_;
    std::fill(cells_.begin() + static_cast<std::ptrdiff_t>(off / granule_),
              cells_.begin() + static_cast<std::ptrdiff_t>((off + n) / granule_), id);
    return;
  }
  const Offset end = off + n;
  auto it = runs_.lower_bound(off);
  if (it != runs_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end > off) {  // a run straddles `off`: keep its head
      const Run tail = prev->second;
      prev->second.end = off;
      if (tail.end > end) runs_.emplace(end, tail);
    }
  }
  it = runs_.lower_bound(off);
  while (it != runs_.end() && it->first < end) {
    ++work_;
    if (it->second.end > end) {  // keep the part past `end`
      const Run tail = it->second;
      runs_.erase(it);
      runs_.emplace(end, tail);
      break;
    }
    it = runs_.erase(it);
  }
  runs_.emplace(off, Run{end, id});
  ++work_;
}


std::vector<Shadow> makeShadows(const std::vector<PoolShape>& pools, const ReplayOptions& options,
                                ReplayResult& result) {
  std::vector<Shadow> shadows(pools.size());
  std::uint64_t budget = options.force_sparse ? 0 : options.max_dense_bytes;
  for (std::size_t m = 1; m < pools.size(); ++m) {
    const PoolShape& pool = pools[m];
    const Bytes g = std::max<Bytes>(pool.granule, 1);
    const std::uint64_t cells = pool.size / g + (pool.size % g != 0);
    const std::uint64_t cost = cells * sizeof(WriteId);  // sizes <= kMaxBytes: no overflow
    const bool cheap = pool.longest / g <= Shadow::kMaxCellsPerRange &&
                       cells / Shadow::kMaxCellsPerRange <= pool.ranges;
    if (cheap && cells <= budget / sizeof(WriteId) && cost <= budget) {
      budget -= cost;
      shadows[m].initCells(pool.size, g);
      ++result.dense_pools;
    } else {
      ++result.sparse_pools;
    }
  }
  return shadows;
}

void reportClobber(ReplayResult& r, Clobber c) {
  if (r.issue != ReplayIssue::None) return;
  r.issue = ReplayIssue::Clobber;
  r.graph = c.graph;
  r.victim = std::move(c.victim);
  r.writer = std::move(c.writer);
  r.writer_node = std::move(c.writer_node);
  r.write_step = c.write_step;
  r.reader_node = std::move(c.reader_node);
  r.read_step = c.read_step;
  r.mem_id = c.mem_id;
  r.offset = c.offset;
  r.message = std::move(c.message);
}

std::uint64_t shadowWork(const std::vector<Shadow>& shadows) {
  std::uint64_t work = 0;
  for (const Shadow& s : shadows) work = saturatingCount(work, s.work());
  return work;
}


}  // namespace memplan::shadow

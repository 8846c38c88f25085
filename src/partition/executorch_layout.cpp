// bufsizes around the reserved prefixes (see partition.h and BufsizesLayout).
//
// ExecuTorch's greedy lists one entry per mem_id up to the largest used
// (unused ones 0; [0, 0] when nothing is planned); its naive extends the
// reserved list (or [0, 0]); memplan's own algorithms give
// bufsizes[m] = max(reserved[m], pool size) up to
// max(len(reserved) - 1, largest used mem_id, 1), so a pool always holds its
// bodies' arena.
#include <algorithm>

#include "partition/partition.h"

namespace memplan::partition {

std::vector<Bytes> layoutBufsizes(BufsizesLayout layout, const std::map<MemId, Bytes>& sizes,
                                  const std::vector<Bytes>& reserved) {
  const MemId max_used = sizes.empty() ? 0 : sizes.rbegin()->first;
  std::vector<Bytes> out;
  switch (layout) {
    case BufsizesLayout::ExecutorchGreedy:
      out.assign(std::max<std::size_t>(2, static_cast<std::size_t>(max_used) + 1), 0);
      for (const auto& [m, size] : sizes) out[m] = size;
      break;
    case BufsizesLayout::ExecutorchNaive:
      out = reserved.empty() ? std::vector<Bytes>{0, 0} : reserved;
      if (out.size() < static_cast<std::size_t>(max_used) + 1) out.resize(max_used + 1, 0);
      for (const auto& [m, size] : sizes) out[m] = size;
      break;
    case BufsizesLayout::Memplan:
      out.assign(std::max<std::size_t>({reserved.size(), static_cast<std::size_t>(max_used) + 1, 2}), 0);
      for (std::size_t m = 1; m < reserved.size(); ++m) out[m] = reserved[m];
      for (const auto& [m, size] : sizes) out[m] = std::max(out[m], size);
      break;
  }
  return out;
}

}  // namespace memplan::partition

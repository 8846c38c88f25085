// Per-device partitions, as ExecuTorch's apply_algo makes them with
// enable_non_cpu_memory_planning (see partition.h):
//
//  - specs are grouped by device, keeping spec order inside a group; only
//    devices that have specs get a group (an all-CUDA graph has no CPU pool);
//  - groups are planned in order CPU:0 first, then by (type's rank, type,
//    index): ExecuTorch's DeviceType values rank cpu 0 and cuda 1; types it
//    has no value for come after, by name (Device's operator<);
//  - bufsizes = [0] followed by each group's bufsizes[1:], so a spec's mem_id
//    becomes (local mem_id - 1) + base; at least [0, 0];
//  - a preset pool anywhere together with a non-CPU spec is refused.
#include <algorithm>

#include <fmt/format.h>

#include "partition/partition.h"

namespace memplan::partition {

std::vector<Device> devicePartitions(const GraphSpecs& graph) {
  std::vector<Device> devices;
  const Spec* preset = nullptr;
  const Spec* off_cpu = nullptr;
  for (const Spec& s : graph.specs) {
    if (!s.planned || s.shared) continue;
    if (s.mem_id && !preset) preset = &s;
    if (!s.device.isCpu() && !off_cpu) off_cpu = &s;
    if (std::find(devices.begin(), devices.end(), s.device) == devices.end())
      devices.push_back(s.device);
  }
  if (preset && off_cpu)
    throw InputError(fmt::format(
        "PlanRequest.options.per_device: '{}' has a preset pool (mem_id {}) and '{}' is on {}; "
        "preset pools cannot be combined with per-device planning (ExecuTorch raises "
        "NotImplementedError)",
        specName(*preset), *preset->mem_id, specName(*off_cpu), off_cpu->device.str()));
  std::sort(devices.begin(), devices.end());
  return devices;
}

void appendPartition(GraphPlan& merged, const GraphPlan& part, const Device& device) {
  if (merged.bufsizes.empty()) {
    merged.bufsizes = {0};
    merged.pool_devices = {Device{}};
  }
  const MemId shift = static_cast<MemId>(merged.bufsizes.size()) - 1;
  for (std::size_t m = 1; m < part.bufsizes.size(); ++m) {
    merged.bufsizes.push_back(part.bufsizes[m]);
    merged.pool_devices.push_back(device);
  }
  for (Allocation a : part.allocations) {
    a.mem_id += shift;
    merged.allocations.push_back(a);
  }
  for (PoolInfo info : part.pools) {
    info.mem_id += shift;
    info.device = device;
    merged.pools.push_back(std::move(info));
  }
}

void finishPartitions(GraphPlan& merged) {
  if (merged.bufsizes.empty()) {
    merged.bufsizes = {0};
    merged.pool_devices = {Device{}};
  }
  if (merged.bufsizes.size() < 2) {
    merged.bufsizes.push_back(0);
    merged.pool_devices.push_back(Device{});
  }
  std::sort(merged.allocations.begin(), merged.allocations.end(),
            [](const Allocation& a, const Allocation& b) { return a.spec < b.spec; });
}

}  // namespace memplan::partition

// State shared by several methods (see partition.h).
//
// Every method keeps its state (a KV cache) between calls and hands it to
// the next method: one placement for all methods, in a pool of its own
// that no method's activations touch. The order is ExecuTorch's
// (run_multimethod): methods in planning order, each method's specs in
// order, an fqn counted where a method mutates it (a method that only
// reads it does not fix its place).
#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "partition/partition.h"

namespace memplan::partition {
namespace {

// Each fqn once: its first mutating spec (and that spec's method).
std::vector<const Spec*> stateOrder(const std::vector<MethodSpecs>& methods) {
  std::vector<const Spec*> order;
  std::unordered_map<std::string_view, std::size_t> seen;
  for (const MethodSpecs& m : methods)
    for (const Spec& s : m.specs->specs)
      if (s.shared && s.planned && s.is_mutable && seen.emplace(s.fqn, order.size()).second)
        order.push_back(&s);
  // State planned only where it is read (its writers left unplanned).
  for (const MethodSpecs& m : methods)
    for (const Spec& s : m.specs->specs)
      if (s.shared && s.planned && seen.emplace(s.fqn, order.size()).second) order.push_back(&s);
  return order;
}

}  // namespace

StateLayout placeStateExecutorch(const std::vector<MethodSpecs>& methods, Bytes alignment) {
  StateLayout layout;
  layout.pool_sizes = {0};
  layout.pool_devices = {Device{}};
  Bytes arena = 0;
  for (const Spec* s : stateOrder(methods)) {
    const auto size = alignUp(s->nbytes, std::max<Bytes>(alignment, 1));
    const auto end = size ? checkedAdd(arena, *size) : std::nullopt;
    if (!end) throw PlanError(fmt::format("shared state overflows at '{}'", s->fqn));
    layout.slots.push_back({s->fqn, Device{}, 0, arena, *size});
    arena = *end;
  }
  layout.pool_sizes[0] = arena;
  return layout;
}

StateLayout placeStateMemplan(const std::vector<MethodSpecs>& methods) {
  const std::vector<const Spec*> order = stateOrder(methods);
  const bool per_device = !methods.empty() && methods.front().per_device;
  StateLayout layout;
  for (const Spec* s : order) {
    const Device d = per_device ? s->device : Device{};
    if (std::find(layout.pool_devices.begin(), layout.pool_devices.end(), d) == layout.pool_devices.end())
      layout.pool_devices.push_back(d);
  }
  std::sort(layout.pool_devices.begin(), layout.pool_devices.end());
  layout.pool_sizes.assign(layout.pool_devices.size(), 0);
  for (const Spec* s : order) {
    const Device d = per_device ? s->device : Device{};
    const auto pool = static_cast<std::size_t>(
        std::find(layout.pool_devices.begin(), layout.pool_devices.end(), d) - layout.pool_devices.begin());
    const Bytes align = std::max<Bytes>(s->alignment, 1);
    const auto offset = alignUp(layout.pool_sizes[pool], align);
    const auto size = alignUp(s->nbytes, align);
    const auto end = offset && size ? checkedAdd(*offset, *size) : std::nullopt;
    if (!end) throw PlanError(fmt::format("shared state overflows at '{}'", s->fqn));
    layout.slots.push_back({s->fqn, d, pool, *offset, *size});
    layout.pool_sizes[pool] = *end;
  }
  return layout;
}

}  // namespace memplan::partition

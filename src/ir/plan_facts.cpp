// Facts read off specs and plans (see memplan/specs.h, memplan/plan.h).
#include <algorithm>
#include <map>

#include "memplan/order.h"
#include "memplan/plan.h"

namespace memplan {

std::vector<SpecId> GraphSpecs::planned() const {
  std::vector<SpecId> out;
  for (SpecId i = 0; i < static_cast<SpecId>(specs.size()); ++i)
    if (specs[i].planned) out.push_back(i);
  return out;
}

const Allocation* GraphPlan::find(SpecId s) const {
  // Allocations are in spec order.
  auto it = std::lower_bound(allocations.begin(), allocations.end(), s,
                             [](const Allocation& a, SpecId id) { return a.spec < id; });
  if (it != allocations.end() && it->spec == s) return &*it;
  for (const Allocation& a : allocations)  // tolerate hand-built plans
    if (a.spec == s) return &a;
  return nullptr;
}

std::vector<BufferDevice> nonConstBufferDevice(const GraphPlan& graph) {
  std::vector<BufferDevice> out;
  for (std::size_t m = 1; m < graph.pool_devices.size() && m < graph.bufsizes.size(); ++m)
    if (!graph.pool_devices[m].isCpu()) out.push_back({static_cast<MemId>(m), graph.pool_devices[m]});
  return out;
}

std::vector<StateSlot> sharedState(const Plan& plan) {
  std::vector<GraphId> entries;
  for (const MethodPlan& m : plan.methods) entries.push_back(m.graph);
  if (entries.empty()) entries.push_back(0);
  std::map<std::string, StateSlot> by_fqn;
  for (GraphId g : entries) {
    if (g < 0 || static_cast<std::size_t>(g) >= plan.graphs.size()) continue;
    const GraphPlan& gp = plan.graphs[g];
    for (const Allocation& a : gp.allocations) {
      if (a.spec < 0 || static_cast<std::size_t>(a.spec) >= gp.specs.specs.size()) continue;
      const Spec& s = gp.specs.specs[a.spec];
      if (s.shared) by_fqn.emplace(s.fqn, StateSlot{s.fqn, a.mem_id, a.offset, a.size});
    }
  }
  std::vector<StateSlot> out;
  for (auto& [fqn, slot] : by_fqn) out.push_back(std::move(slot));
  std::sort(out.begin(), out.end(), [](const StateSlot& a, const StateSlot& b) {
    return std::tie(a.mem_id, a.offset, a.fqn) < std::tie(b.mem_id, b.offset, b.fqn);
  });
  return out;
}

// Facts of an order (memplan/order.h): every stage that reads one asks.
bool GraphOrder::changed() const {
  for (std::size_t i = 0; i < order.size(); ++i)
    if (order[i] != static_cast<NodeId>(i)) return true;
  return false;
}

bool OrderResult::changed() const {
  return std::any_of(graphs.begin(), graphs.end(), [](const GraphOrder& g) { return g.changed(); });
}

}  // namespace memplan

// Steps 4 and 5 of memplan/order.h: greedy orders and local search.
#include <algorithm>
#include <set>
#include <tuple>

#include "order/order_search.h"

namespace memplan::order {
namespace {

// The greedy's view of the nodes run so far: the sweep, and which nodes
// are ready.
struct GreedyState : OrderSweep {
  std::vector<std::int32_t> waiting;  // by node: predecessors not run yet

  explicit GreedyState(const OrderProblem& problem) : OrderSweep(problem) {
    waiting.resize(static_cast<std::size_t>(p.n));
    for (NodeId v = 0; v < p.n; ++v) waiting[v] = static_cast<std::int32_t>(p.preds[v].size());
  }
  // (cost of v's step, bytes live after it).
  std::pair<Bytes, Bytes> effect(NodeId v) const {
    Bytes step = saturatingAdd(p.always, live), after = live;
    for (Item i : p.touches[v]) {
      if (!across[i]) step = saturatingAdd(step, p.bytes[i]);
      const bool now = remaining[i] > 1 || p.open_end[i];
      if (now && !across[i]) after += p.bytes[i];
      if (!now && across[i]) after -= p.bytes[i];
    }
    return {step, after};
  }
  void run(NodeId v, std::set<NodeId>& ready) {
    OrderSweep::run(v);
    ready.erase(v);
    for (NodeId s : p.succs[v])
      if (--waiting[s] == 0) ready.insert(s);
  }
};

}  // namespace

std::vector<NodeId> greedyOrder(const OrderProblem& p, GreedyRule rule, std::uint64_t& work) {
  GreedyState st(p);
  std::set<NodeId> ready;  // by given index: ties go to the given order
  for (NodeId v = 0; v < p.n; ++v)
    if (st.waiting[v] == 0) ready.insert(v);
  std::vector<NodeId> order;
  order.reserve(static_cast<std::size_t>(p.n));
  while (!ready.empty()) {
    NodeId best = kNone;
    std::tuple<Bytes, Bytes, NodeId> best_key{};
    std::size_t seen = 0;
    for (auto it = ready.begin(); it != ready.end() && seen < kGreedyWindow; ++it, ++seen) {
      const auto [step, after] = st.effect(*it);
      const auto key = rule == GreedyRule::CheapestStep ? std::tuple{step, after, *it}
                                                        : std::tuple{after, step, *it};
      if (best == kNone || key < best_key) best = *it, best_key = key;
      work += p.touches[*it].size() + 1;
    }
    order.push_back(best);
    st.run(best, ready);
  }
  return order;
}

namespace {

// Where a node may go: after its last predecessor, before its first successor.
struct Window {
  Pos lo = 0, hi = 0;
};

Window windowOf(const OrderProblem& p, const std::vector<Pos>& pos, NodeId v) {
  Window w{0, p.n - 1};
  for (NodeId u : p.preds[v]) w.lo = std::max(w.lo, pos[u] + 1);
  for (NodeId u : p.succs[v]) w.hi = std::min(w.hi, pos[u] - 1);
  return w;
}

void moveTo(std::vector<NodeId>& order, Pos from, Pos to) {
  const auto b = order.begin();
  if (from < to) std::rotate(b + from, b + from + 1, b + to + 1);
  else if (to < from) std::rotate(b + to, b + from, b + from + 1);
}

// The first step at the peak.
Pos peakStep(const OrderProblem& p, const std::vector<NodeId>& order) {
  const std::vector<Bytes> costs = stepCosts(p, order);
  return static_cast<Pos>(std::max_element(costs.begin(), costs.end()) - costs.begin());
}

// One pass over the nodes that may cross the peak step: the first move
// that lowers the key is kept. False when none does (or budget is out).
bool improveOnce(const OrderProblem& p, std::vector<NodeId>& order, OrderKey& key,
                 std::uint64_t budget, std::uint64_t& work) {
  const Pos peak = peakStep(p, order);
  work += static_cast<std::uint64_t>(p.n);
  std::vector<Pos> pos(static_cast<std::size_t>(p.n));
  for (Pos i = 0; i < p.n; ++i) pos[order[i]] = i;
  for (Pos i = 0; i < p.n && work < budget; ++i) {
    const NodeId v = order[i];
    const Window w = windowOf(p, pos, v);
    if (w.hi < peak || w.lo > peak) continue;  // cannot cross the peak step
    for (const Pos to : {w.lo, w.hi, peak}) {  // the ends, or just across
      if (to == i || to < w.lo || to > w.hi) continue;
      moveTo(order, i, to);
      const OrderKey k = evaluate(p, order, work);
      if (k < key) {
        key = k;
        return true;
      }
      moveTo(order, to, i);
    }
  }
  return false;
}

}  // namespace

void localSearch(const OrderProblem& p, std::vector<NodeId>& order, OrderKey& key,
                 std::uint64_t budget, std::uint64_t& work) {
  if (p.n < 2) return;
  const std::uint64_t limit = work + budget;
  while (work < limit && improveOnce(p, order, key, limit, work)) {
  }
}

}  // namespace memplan::order

// The order search's techniques (steps 4-6 of memplan/order.h), each on an
// OrderProblem; src/order/order_api.cpp runs them and accepts the result.
#pragma once

#include <cstdint>
#include <vector>

#include "order/order_problem.h"

namespace memplan::order {

// The sweep's state: items live across the boundary of the nodes run so far.
struct OrderSweep {
  const OrderProblem& p;
  std::vector<std::int32_t> remaining;  // by item: users not run yet
  std::vector<char> across;             // by item: live across the boundary
  Bytes live = 0;                       // bytes of `across`

  explicit OrderSweep(const OrderProblem& problem) : p(problem) {
    remaining.resize(p.bytes.size());
    across.resize(p.bytes.size());
    for (std::size_t i = 0; i < p.bytes.size(); ++i) {
      remaining[i] = static_cast<std::int32_t>(p.users[i].size());
      across[i] = p.open_start[i] && (remaining[i] > 0 || p.open_end[i]);
      if (across[i]) live += p.bytes[i];
    }
  }
  // Bytes live while `v` runs now.
  Bytes cost(NodeId v) const {
    Bytes c = saturatingAdd(p.always, live);
    for (Item i : p.touches[v])
      if (!across[i]) c = saturatingAdd(c, p.bytes[i]);
    return c;
  }
  void run(NodeId v) {
    for (Item i : p.touches[v]) {
      const bool now = --remaining[i] > 0 || p.open_end[i];
      if (now && !across[i]) live += p.bytes[i];
      if (!now && across[i]) live -= p.bytes[i];
      across[i] = now;
    }
  }
};

// Step 4. Which ready node a greedy step takes.
enum class GreedyRule : std::uint8_t {
  CheapestStep,   // lowest cost of its own step, then fewest bytes left live
  FewestLive,     // fewest bytes left live after it, then cheapest step
};
// A topological order built one ready node at a time. Among more than
// kGreedyWindow ready nodes only the first kGreedyWindow (by given index)
// are compared, so a step costs O(kGreedyWindow * degree), not O(n).
inline constexpr std::size_t kGreedyWindow = 64;
std::vector<NodeId> greedyOrder(const OrderProblem& p, GreedyRule rule, std::uint64_t& work);

// Step 5. Improves `order` (and its `key`) in place until no move across
// the peak step helps or `budget` work units are spent.
void localSearch(const OrderProblem& p, std::vector<NodeId>& order, OrderKey& key,
                 std::uint64_t budget, std::uint64_t& work);

// Step 6. Best-first search for an order whose peak is below `incumbent`.
struct ExactResult {
  bool complete = false;           // searched to the end: the answer is optimal
  std::vector<NodeId> order;       // empty: nothing below `incumbent` (or budget out)
  Bytes peak = 0;
};
ExactResult exactOrder(const OrderProblem& p, Bytes incumbent, std::uint64_t budget,
                       std::uint64_t& work);

}  // namespace memplan::order

// The order search's techniques (steps 4-6 of memplan/order.h), each on an
// OrderProblem; src/order/order_api.cpp runs them and accepts the result.
#pragma once

#include <cstdint>
#include <vector>

#include "order/order_problem.h"

namespace memplan::order {

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

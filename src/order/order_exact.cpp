// Step 6 of memplan/order.h: best-first search over the sets of nodes run.
//
// A set S (a bitset; only sets closed under predecessors are reached)
// determines the bytes live across its boundary, so the cheapest way to
// reach S is all that matters about it: each set is kept once (memo), with
// the lowest peak of a path to it. The queue pops sets by
// f = max(peak so far, the largest single step still to come), so the first
// complete set popped has the lowest peak of all orders (the estimate never
// overstates and never drops by more than a step's cost: consistent).
#include <algorithm>
#include <cstring>
#include <queue>
#include <unordered_map>

#include "order/order_search.h"

namespace memplan::order {
namespace {

using Word = std::uint64_t;

// One reached set: its bits live in ExactSearch::bits_.
struct SetState {
  Bytes peak = 0;            // lowest peak of a path reaching it
  Bytes live = 0;            // bytes live across its boundary
  std::int32_t parent = -1;  // state it was reached from on that path
  NodeId node = kNone;       // node run last on that path
  bool closed = false;
};

// A queue entry: lowest estimate first, then the larger set (closer to the
// end), then the earlier reached (deterministic).
struct QueueEntry {
  Bytes f = 0;
  std::int32_t size = 0;
  std::int32_t state = 0;
  bool operator<(const QueueEntry& o) const {  // std::priority_queue pops the largest
    if (f != o.f) return f > o.f;
    if (size != o.size) return size < o.size;
    return state > o.state;
  }
};

// A successor of a set: the node run, its step's cost, the bytes left live.
struct Step {
  NodeId node = kNone;
  Bytes cost = 0, live = 0;
  bool dominant = false;     // runs at no cost: the only successor needed
};

// Most states the search keeps (memory), whatever the work budget.
constexpr std::size_t kMaxStates = 1'000'000;

class ExactSearch {
 public:
  ExactSearch(const OrderProblem& p, std::uint64_t& work) : p_(p), work_(work) {
    words_ = (static_cast<std::size_t>(p.n) + 63) / 64;
    by_cost_.resize(static_cast<std::size_t>(p.n));
    own_.resize(static_cast<std::size_t>(p.n));
    for (NodeId v = 0; v < p.n; ++v) {
      own_[v] = p.always;
      for (Item i : p.touches[v]) own_[v] = saturatingAdd(own_[v], p.bytes[i]);
      by_cost_[v] = v;
    }
    std::stable_sort(by_cost_.begin(), by_cost_.end(),
                     [&](NodeId a, NodeId b) { return own_[a] > own_[b]; });
  }

  ExactResult run(Bytes incumbent, std::uint64_t budget);

 private:
  const Word* bits(std::int32_t s) const { return bits_.data() + static_cast<std::size_t>(s) * words_; }
  static bool has(const Word* set, NodeId v) { return (set[v >> 6] >> (v & 63)) & 1U; }
  std::int32_t count(const Word* set) const;
  Bytes estimate(const Word* set) const;
  bool across(const Word* set, Item i, NodeId extra) const;
  std::vector<Step> successors(std::int32_t s);
  Step stepOf(const Word* set, Bytes live, NodeId v) const;
  void reach(std::int32_t from, const Step& step, Bytes incumbent,
             std::priority_queue<QueueEntry>& queue);
  std::vector<NodeId> orderTo(std::int32_t s) const;

  const OrderProblem& p_;
  std::uint64_t& work_;
  std::size_t words_ = 0;
  std::vector<Bytes> own_;          // by node: its own items' bytes (+ always)
  std::vector<NodeId> by_cost_;     // nodes by own_ descending (the estimate)
  std::vector<Word> bits_;          // states' sets, words_ each
  std::vector<SetState> states_;
  std::unordered_multimap<std::uint64_t, std::int32_t> memo_;  // hash -> state
  std::vector<Word> scratch_;
};

std::int32_t ExactSearch::count(const Word* set) const {
  std::int32_t c = 0;
  for (std::size_t w = 0; w < words_; ++w) c += __builtin_popcountll(set[w]);
  return c;
}

// The largest single step not run yet: no completion's peak is lower.
Bytes ExactSearch::estimate(const Word* set) const {
  for (NodeId v : by_cost_)
    if (!has(set, v)) return own_[v];
  return 0;
}

// Whether item i is live across the boundary of `set` plus node `extra`.
bool ExactSearch::across(const Word* set, Item i, NodeId extra) const {
  bool started = p_.open_start[i], after = p_.open_end[i];
  for (NodeId u : p_.users[i]) {
    const bool in = has(set, u) || u == extra;
    started |= in;
    after |= !in;
    if (started && after) return true;
  }
  return started && after;
}

Step ExactSearch::stepOf(const Word* set, Bytes live, NodeId v) const {
  Step st{v, saturatingAdd(p_.always, live), live, true};
  for (Item i : p_.touches[v]) {
    const bool before = across(set, i, kNone), now = across(set, i, v);
    if (!before) st.cost = saturatingAdd(st.cost, p_.bytes[i]);
    if (now && !before) st.live += p_.bytes[i], st.dominant = false;
    if (!now && before) st.live -= p_.bytes[i];
    work_ += p_.users[i].size();
  }
  return st;
}

std::vector<Step> ExactSearch::successors(std::int32_t s) {
  const Word* set = bits(s);
  const SetState st = states_[s];
  NodeId first = 0;  // every node below it has run (given order is topological)
  while (first < p_.n && has(set, first)) ++first;
  std::vector<Step> out;
  for (NodeId v = first; v < p_.n; ++v) {
    ++work_;
    if (has(set, v)) continue;
    bool ready = true;
    for (NodeId u : p_.preds[v]) ready = ready && has(set, u);
    work_ += p_.preds[v].size();
    if (!ready) continue;
    Step step = stepOf(set, st.live, v);
    step.dominant = step.dominant && step.cost <= st.peak;
    if (step.dominant) return {step};
    out.push_back(step);
  }
  return out;
}

void ExactSearch::reach(std::int32_t from, const Step& step, Bytes incumbent,
                        std::priority_queue<QueueEntry>& queue) {
  const Bytes peak = std::max(states_[from].peak, step.cost);
  if (peak >= incumbent) return;  // cannot beat the best order known
  // Copying, hashing and storing a set and queueing it cost far more than
  // a visit: measured, about as much as 200 of them.
  work_ += 200 + 4 * words_;
  std::memcpy(scratch_.data(), bits(from), words_ * sizeof(Word));
  scratch_[step.node >> 6] |= Word{1} << (step.node & 63);
  const Bytes f = std::max(peak, estimate(scratch_.data()));
  if (f >= incumbent) return;
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (Word w : scratch_) h = (h ^ w) * 0x100000001b3ULL + (h >> 29);
  auto [lo, hi] = memo_.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    SetState& old = states_[it->second];
    if (std::memcmp(bits(it->second), scratch_.data(), words_ * sizeof(Word)) != 0) continue;
    if (old.closed || old.peak <= peak) return;
    old = {peak, step.live, from, step.node, false};
    queue.push({f, count(scratch_.data()), it->second});
    return;
  }
  if (states_.size() >= kMaxStates) return;
  const auto id = static_cast<std::int32_t>(states_.size());
  bits_.insert(bits_.end(), scratch_.begin(), scratch_.end());
  states_.push_back({peak, step.live, from, step.node, false});
  memo_.emplace(h, id);
  queue.push({f, count(scratch_.data()), id});
}

std::vector<NodeId> ExactSearch::orderTo(std::int32_t s) const {
  std::vector<NodeId> order;
  for (; states_[s].parent >= 0; s = states_[s].parent) order.push_back(states_[s].node);
  std::reverse(order.begin(), order.end());
  return order;
}

ExactResult ExactSearch::run(Bytes incumbent, std::uint64_t budget) {
  scratch_.assign(words_, 0);
  SetState start;
  for (std::size_t i = 0; i < p_.bytes.size(); ++i)
    if (p_.open_start[i] && (!p_.users[i].empty() || p_.open_end[i])) start.live += p_.bytes[i];
  bits_.assign(words_, 0);
  states_.push_back(start);
  std::priority_queue<QueueEntry> queue;
  queue.push({estimate(bits(0)), 0, 0});
  const std::uint64_t limit = work_ + budget;
  bool capped = false;
  while (!queue.empty()) {
    const QueueEntry e = queue.top();
    queue.pop();
    if (states_[e.state].closed) continue;
    if (e.size == p_.n) return {true, orderTo(e.state), states_[e.state].peak};
    if (work_ >= limit) return {};
    states_[e.state].closed = true;
    capped |= states_.size() >= kMaxStates;
    for (const Step& step : successors(e.state)) reach(e.state, step, incumbent, queue);
  }
  // Nothing below the incumbent: it is optimal, unless states were dropped.
  return {!capped, {}, 0};
}

}  // namespace

ExactResult exactOrder(const OrderProblem& p, Bytes incumbent, std::uint64_t budget,
                       std::uint64_t& work) {
  if (p.n == 0) return {true, {}, 0};
  return ExactSearch(p, work).run(incumbent, budget);
}

}  // namespace memplan::order

// Iterated local search (see local_search.h) and its stage of the
// searching algorithms (search_stages.h).
#include "algorithms/local_search.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "algorithms/pool_util.h"
#include "algorithms/random.h"
#include "algorithms/search_stages.h"

namespace memplan::heur {

namespace {

// (height, buffers reaching it): lower is better.
struct Score {
  Bytes height = 0;
  std::size_t at_peak = 0;
  bool operator<=(const Score& o) const {
    return height < o.height || (height == o.height && at_peak <= o.at_peak);
  }
  bool operator<(const Score& o) const {
    return height < o.height || (height == o.height && at_peak < o.at_peak);
  }
};

// The placement the search walks: the greedy order that rebuilds it, the
// offsets, and the tops of its buffers ordered (the peak at the end),
// updated per move so that a move costs O(buffers it moves), never O(n).
struct Walked {
  std::vector<BufferId> order;
  std::vector<std::size_t> position;        // buffer -> place in order
  std::vector<Offset> offsets;              // merged
  std::set<std::pair<Bytes, BufferId>> tops;  // (offset + size, buffer), size > 0
  Score score;                              // of the placement as it stands
};

// How the moves adapt: the ruin size and the split of work between
// reorder and ruin moves.
struct MoveControl {
  std::size_t ruin = 0;                     // buffers lifted by a sample ruin
  std::uint64_t since_improvement = 0;      // moves without a lower best score
  std::uint64_t reorder_work = 0, ruin_work = 0;  // placer units spent so far
  std::uint64_t scan_cost = 0;              // of the last reorder scan
};

// Scratch reused by every move.
struct MoveScratch {
  std::vector<BufferId> peak, around, ruined;
  std::vector<Offset> saved;                // offsets before a reorder move
  std::vector<std::pair<BufferId, Offset>> lifted;  // ruined buffers' old offsets
  std::vector<char> in_ruin;                // buffer -> lifted by this move
};

// One run of improvePlacement.
class Search {
 public:
  Search(const PoolProblem& merged, Placer& placer, std::vector<BufferId> order, Fit fit,
         std::vector<Offset> offsets, const LocalSearchParams& params)
      : merged_(merged), bufs_(merged.buffers), placer_(placer), fit_(fit), params_(params),
        work0_(placer.work()), rng_(params.seed) {
    walked_.order = std::move(order);
    walked_.offsets = std::move(offsets);
  }
  LocalSearchResult run();

 private:
  void rebuildTops();
  Score score() const;
  void moveTop(BufferId b, Offset from, Offset to);
  bool acceptable(const Score& s, const Score& than) const {
    return params_.accept_equal ? s <= than : s < than;
  }
  bool wantsReorder(BufferId c);
  void reorderScan(BufferId c);
  void reorderOnce(BufferId c);
  void ruinAndRecreate(BufferId c);
  void gatherRuin(BufferId c);
  void afterMove();
  // order[q..p] rotated so that order[p] comes first, and back.
  void rotateIn(std::size_t q, std::size_t p);
  void rotateOut(std::size_t q, std::size_t p);

  const PoolProblem& merged_;
  const std::vector<Buffer>& bufs_;
  Placer& placer_;
  const Fit fit_;
  const LocalSearchParams& params_;
  const std::uint64_t work0_;               // placer work before the search
  std::size_t pinned_ = 0;                  // pinned buffers open the order
  bool small_ = false;                      // at most reorder_max_buffers
  SplitMix64 rng_;
  Walked walked_;
  Score best_score_;
  LocalSearchResult best_;
  MoveControl control_;
  MoveScratch scratch_;
  std::chrono::steady_clock::time_point last_progress_{};  // progress lines only
};

void Search::rebuildTops() {
  walked_.tops.clear();
  for (const Buffer& b : bufs_)
    if (b.size > 0) walked_.tops.emplace(walked_.offsets[b.id] + b.size, b.id);
}

Score Search::score() const {
  Score s{merged_.reserved, 0};
  const auto& tops = walked_.tops;
  if (tops.empty()) return s;
  s.height = std::max(s.height, tops.rbegin()->first);
  for (auto it = tops.rbegin(); it != tops.rend() && it->first == s.height; ++it) ++s.at_peak;
  return s;
}

void Search::moveTop(BufferId b, Offset from, Offset to) {
  if (bufs_[b].size == 0 || from == to) return;
  walked_.tops.erase({from + bufs_[b].size, b});
  walked_.tops.emplace(to + bufs_[b].size, b);
}

void Search::rotateIn(std::size_t q, std::size_t p) {
  auto& order = walked_.order;
  std::rotate(order.begin() + static_cast<std::ptrdiff_t>(q),
              order.begin() + static_cast<std::ptrdiff_t>(p),
              order.begin() + static_cast<std::ptrdiff_t>(p + 1));
}

void Search::rotateOut(std::size_t q, std::size_t p) {
  auto& order = walked_.order;
  std::rotate(order.begin() + static_cast<std::ptrdiff_t>(q),
              order.begin() + static_cast<std::ptrdiff_t>(q + 1),
              order.begin() + static_cast<std::ptrdiff_t>(p + 1));
}

// Reorder or ruin: small pools toss a coin; large ones reorder while the
// reorder moves have spent at most their share of the work and a scan
// fits in what is left of the budget.
bool Search::wantsReorder(BufferId c) {
  if (!params_.reorder || walked_.position[c] <= pinned_) return false;
  if (!params_.ruin_recreate) return true;
  if (small_) return rng_.below(2) == 0;
  const auto& k = control_;
  return static_cast<double>(k.reorder_work) <=
             params_.reorder_work_share * static_cast<double>(k.reorder_work + k.ruin_work) &&
         placer_.work() - work0_ + k.scan_cost <= params_.work_limit;
}

// Large pools: where c goes in the order matters in steps (it must come
// after the buffers that should claim a spot first and before those that
// would take the one it needs), so try reorder_scan places spread over the
// earlier part of the order and keep the best.
void Search::reorderScan(BufferId c) {
  const std::uint64_t start = placer_.work();
  auto& w = walked_;
  const std::size_t p = w.position[c];
  scratch_.saved = w.offsets;
  std::size_t best_q = p;
  Score best_s = w.score;
  bool found = false;
  const std::size_t scan = params_.reorder_scan;
  for (std::size_t k = 0; k < scan; ++k) {
    const std::size_t q = pinned_ + (p - pinned_) * k / scan;
    if (k > 0 && q == pinned_ + (p - pinned_) * (k - 1) / scan) continue;
    rotateIn(q, p);
    w.offsets = scratch_.saved;
    placer_.place(w.order, q, fit_, w.offsets);
    rebuildTops();
    const Score s = score();
    if (acceptable(s, best_s) && (!found || s < best_s)) {
      best_s = s;
      best_q = q;
      found = true;
    }
    rotateOut(q, p);
    if (params_.watch && params_.watch->due()) break;
  }
  if (found) {
    rotateIn(best_q, p);
    w.offsets = scratch_.saved;
    placer_.place(w.order, best_q, fit_, w.offsets);
    for (std::size_t k = best_q; k <= p; ++k) w.position[w.order[k]] = k;
  } else {
    w.offsets.swap(scratch_.saved);
    placer_.markAll(w.order, w.offsets);
  }
  rebuildTops();
  w.score = score();
  control_.scan_cost = placer_.work() - start;
}

// Move c to a random earlier place; re-place everything after it.
void Search::reorderOnce(BufferId c) {
  auto& w = walked_;
  const std::size_t p = w.position[c];
  const std::size_t q = pinned_ + rng_.below(p - pinned_);
  scratch_.saved = w.offsets;
  rotateIn(q, p);
  placer_.place(w.order, q, fit_, w.offsets);
  rebuildTops();
  const Score s = score();
  if (acceptable(s, w.score)) {
    w.score = s;
    for (std::size_t k = q; k <= p; ++k) w.position[w.order[k]] = k;
  } else {
    rotateOut(q, p);
    w.offsets.swap(scratch_.saved);
    placer_.markAll(w.order, w.offsets);
    rebuildTops();
  }
}

// scratch_.ruined = c and the buffers to lift with it: a slab (everything
// alive with c whose top is above a random level under c) half of the
// time, else a random sample of `ruin` of the buffers alive with it.
void Search::gatherRuin(BufferId c) {
  auto& around = scratch_.around;
  auto& ruined = scratch_.ruined;
  auto& in_ruin = scratch_.in_ruin;
  placer_.overlapping(c, around);
  ruined.clear();
  ruined.push_back(c);
  in_ruin[c] = 1;
  const auto& offsets = walked_.offsets;
  if (params_.slab_ruin && rng_.below(2) == 0) {
    const Offset level = offsets[c] == merged_.reserved
                             ? merged_.reserved
                             : merged_.reserved + rng_.below(offsets[c] - merged_.reserved + 1);
    for (BufferId o : around) {
      if (ruined.size() >= params_.slab_max) break;
      if (!bufs_[o].fixed_offset && !in_ruin[o] && bufs_[o].size > 0 &&
          offsets[o] + bufs_[o].size > level) {
        ruined.push_back(o);
        in_ruin[o] = 1;
      }
    }
    return;
  }
  const std::size_t want = std::min(control_.ruin, around.size());
  for (std::size_t k = 0; k < want; ++k) {
    const std::size_t j = k + rng_.below(around.size() - k);
    std::swap(around[k], around[j]);
    const BufferId o = around[k];
    if (!bufs_[o].fixed_offset && !in_ruin[o]) {
      ruined.push_back(o);
      in_ruin[o] = 1;
    }
  }
}

// Lift c and the buffers gathered with it, put them back one by one
// (largest first, or a random order one time in four; the other fit one
// time in four) while every other buffer stays; undone unless acceptable.
void Search::ruinAndRecreate(BufferId c) {
  gatherRuin(c);
  auto& ruined = scratch_.ruined;
  auto& lifted = scratch_.lifted;
  auto& offsets = walked_.offsets;
  lifted.clear();
  for (BufferId r : ruined) {
    lifted.emplace_back(r, offsets[r]);
    placer_.unmark(r);
  }
  if (rng_.below(4) == 0) {
    for (std::size_t k = ruined.size(); k > 1; --k) std::swap(ruined[k - 1], ruined[rng_.below(k)]);
  } else {
    std::sort(ruined.begin(), ruined.end(), [&](BufferId a, BufferId b) {
      if (bufs_[a].size != bufs_[b].size) return bufs_[a].size > bufs_[b].size;
      return a < b;
    });
  }
  const Fit f = rng_.below(4) == 0 ? (fit_ == Fit::Best ? Fit::First : Fit::Best) : fit_;
  for (BufferId r : ruined) {
    const Offset at = placer_.choose(r, f);
    moveTop(r, offsets[r], at);
    offsets[r] = at;
    placer_.mark(r, at);
  }
  const Score s = score();
  if (acceptable(s, walked_.score)) {
    walked_.score = s;
  } else {
    for (BufferId r : ruined) placer_.unmark(r);
    for (const auto& [r, at] : lifted) {
      moveTop(r, offsets[r], at);
      offsets[r] = at;
      placer_.mark(r, at);
    }
  }
  for (BufferId r : ruined) scratch_.in_ruin[r] = 0;
}

// Keeps a lower score as the best; adapts the ruin size: it grows while
// no move improves and shrinks back after an improvement.
void Search::afterMove() {
  auto& k = control_;
  if (walked_.score < best_score_) {
    if (walked_.score.height < best_score_.height) {
      ++best_.improvements;
      best_.height = walked_.score.height;
      best_.offsets = walked_.offsets;
    }
    best_score_ = walked_.score;
    k.since_improvement = 0;
    k.ruin = params_.ruin_min;
    if (params_.progress) {
      const auto now = std::chrono::steady_clock::now();
      if (std::chrono::duration<double>(now - last_progress_).count() >= 0.25) {
        last_progress_ = now;
        params_.progress(
            fmt::format("local search: height {} after {} moves", best_.height, best_.moves));
      }
    }
  } else if (++k.since_improvement % 64 == 0) {
    k.ruin = std::min(params_.ruin_max, k.ruin * 2);
    if (k.ruin == params_.ruin_max && k.since_improvement % 1024 == 0) k.ruin = params_.ruin_min;
  }
}

LocalSearchResult Search::run() {
  const std::size_t n = bufs_.size();
  rebuildTops();
  walked_.score = score();
  best_score_ = walked_.score;
  best_.height = walked_.score.height;
  best_.offsets = walked_.offsets;
  while (pinned_ < walked_.order.size() && bufs_[walked_.order[pinned_]].fixed_offset) ++pinned_;
  if (n == pinned_ || walked_.score.height <= params_.target) {
    best_.work = placer_.work() - work0_;
    return std::move(best_);
  }
  last_progress_ = std::chrono::steady_clock::now();
  walked_.position.assign(n, 0);
  for (std::size_t k = 0; k < n; ++k) walked_.position[walked_.order[k]] = k;
  scratch_.in_ruin.assign(n, 0);
  control_.ruin = params_.ruin_min;
  small_ = n <= params_.reorder_max_buffers;
  control_.scan_cost = params_.reorder_scan * params_.pass_work;
  placer_.markAll(walked_.order, walked_.offsets);
  const std::uint64_t stall =
      std::max<std::uint64_t>(params_.stall_moves, params_.stall_moves_per_buffer * n);
  while (placer_.work() - work0_ < params_.work_limit && best_score_.height > params_.target) {
    if (params_.stall_moves > 0 && control_.since_improvement >= stall) break;
    ++best_.moves;
    if (params_.watch && params_.watch->due()) {
      best_.stopped = true;
      break;
    }
    auto& peak = scratch_.peak;
    peak.clear();
    const auto& tops = walked_.tops;
    for (auto it = tops.rbegin(); it != tops.rend() && it->first == walked_.score.height; ++it)
      if (!bufs_[it->second].fixed_offset) peak.push_back(it->second);
    if (peak.empty()) break;  // the peak is pinned: nothing to move
    const BufferId c = peak[rng_.below(peak.size())];
    const bool reorder = wantsReorder(c);
    const std::uint64_t move_start = placer_.work();
    if (reorder && !small_ && params_.reorder_scan > 1) reorderScan(c);
    else if (reorder) reorderOnce(c);
    else if (params_.ruin_recreate) ruinAndRecreate(c);
    (reorder ? control_.reorder_work : control_.ruin_work) += placer_.work() - move_start;
    afterMove();
  }
  best_.work = placer_.work() - work0_;
  return std::move(best_);
}

}  // namespace

LocalSearchResult improvePlacement(const PoolProblem& merged, Placer& placer,
                                   std::vector<BufferId> order, Fit fit,
                                   std::vector<Offset> offsets,
                                   const LocalSearchParams& params) {
  return Search(merged, placer, std::move(order), fit, std::move(offsets), params).run();
}

}  // namespace memplan::heur

namespace memplan::search {

namespace {

// Iterated local search as a stage (search_stages.h).
class LocalSearchStage : public Stage {
 public:
  explicit LocalSearchStage(const LocalSearch& settings) : set_(settings) {}
  std::string_view name() const override { return "local search"; }
  bool run(SearchState& s) const override {
    const std::uint64_t n = s.buffers();
    if (s.effort() <= 0 || n > set_.max_buffers || !s.open() || s.proof.optimal) return false;
    const std::uint64_t linear = set_.base_work + set_.work_per_buffer * n;
    const std::uint64_t all = std::min(set_.max_work, std::max(linear, set_.min_passes * s.pass_work));
    const std::uint64_t rounds = std::max<std::uint64_t>(1, set_.rounds);
    for (std::uint64_t k = 0; k < rounds && s.open(); ++k)
      searchRound(s, s.budget(all / rounds), s.params.seed + set_.first_seed + k);
    return true;
  }

 private:
  // One round from the incumbent, from the default order when the
  // incumbent is not a greedy placement.
  static void searchRound(SearchState& s, std::uint64_t limit, std::uint64_t seed) {
    heur::LocalSearchParams lp;
    lp.seed = seed;
    lp.target = s.enough;
    lp.watch = &s.watch;
    lp.progress = s.params.progress;
    lp.work_limit = limit;
    lp.pass_work = s.pass_work;
    if (s.best.order.empty()) s.best.order = s.default_order;
    heur::Placer& placer = s.placer();
    const std::uint64_t before = placer.work();
    auto r = heur::improvePlacement(s.pool(), placer, s.best.order, s.best.fit, s.best.offsets, lp);
    s.work += placer.work() - before;
    s.best.offer(r.height, r.offsets, "local_search");
  }

  LocalSearch set_;
};

}  // namespace

std::shared_ptr<const Stage> localSearchStage(const LocalSearch& settings) {
  return std::make_shared<LocalSearchStage>(settings);
}

}  // namespace memplan::search

// Iterated local search (see local_search.h) and the "local_search"
// algorithm: best_fit's portfolio followed by the search.
#include "algorithms/local_search.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "algorithms/auto.h"
#include "algorithms/pool_util.h"
#include "algorithms/random.h"

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

}  // namespace

LocalSearchResult improvePlacement(const PoolProblem& merged, Placer& placer,
                                   std::vector<BufferId> order, Fit fit,
                                   std::vector<Offset> offsets,
                                   const LocalSearchParams& params) {
  const auto& bufs = merged.buffers;
  const std::size_t n = bufs.size();
  const std::uint64_t work0 = placer.work();
  LocalSearchResult best;

  // Tops of all buffers, ordered: the peak is at the end. Updated per move,
  // so a move costs O(lifted buffers), never O(n).
  std::set<std::pair<Bytes, BufferId>> tops;
  auto rebuildTops = [&] {
    tops.clear();
    for (const Buffer& b : bufs)
      if (b.size > 0) tops.emplace(offsets[b.id] + b.size, b.id);
  };
  auto score = [&] {
    Score s{merged.reserved, 0};
    if (tops.empty()) return s;
    s.height = std::max(s.height, tops.rbegin()->first);
    for (auto it = tops.rbegin(); it != tops.rend() && it->first == s.height; ++it) ++s.at_peak;
    return s;
  };
  auto moveTop = [&](BufferId b, Offset from, Offset to) {
    if (bufs[b].size == 0 || from == to) return;
    tops.erase({from + bufs[b].size, b});
    tops.emplace(to + bufs[b].size, b);
  };
  rebuildTops();
  Score current = score();
  Score best_score = current;
  best.height = current.height;
  best.offsets = offsets;

  std::size_t pinned = 0;
  while (pinned < order.size() && bufs[order[pinned]].fixed_offset) ++pinned;
  if (n == pinned || current.height <= params.target) {
    best.work = placer.work() - work0;
    return best;
  }

  SplitMix64 rng(params.seed);
  auto last_progress = std::chrono::steady_clock::now();
  std::vector<std::size_t> position(n);
  for (std::size_t k = 0; k < n; ++k) position[order[k]] = k;
  std::vector<BufferId> peak, around, ruined;
  std::vector<Offset> saved;
  std::vector<std::pair<BufferId, Offset>> lifted;
  std::vector<char> in_ruin(n, 0);
  std::size_t ruin = params.ruin_min;
  std::uint64_t since_improvement = 0;
  const bool can_reorder = params.reorder;
  const bool small = n <= params.reorder_max_buffers;
  std::uint64_t reorder_work = 0, ruin_work = 0;
  std::uint64_t scan_cost = params.reorder_scan * params.pass_work;  // of the last scan
  placer.markAll(order, offsets);

  const std::uint64_t stall =
      std::max<std::uint64_t>(params.stall_moves, params.stall_moves_per_buffer * n);
  while (placer.work() - work0 < params.work_limit && best_score.height > params.target) {
    if (params.stall_moves > 0 && since_improvement >= stall) break;
    ++best.moves;
    if (params.watch && params.watch->due()) {
      best.stopped = true;
      break;
    }

    peak.clear();
    for (auto it = tops.rbegin(); it != tops.rend() && it->first == current.height; ++it)
      if (!bufs[it->second].fixed_offset) peak.push_back(it->second);
    if (peak.empty()) break;  // the peak is pinned: nothing to move
    const BufferId c = peak[rng.below(peak.size())];

    bool do_reorder = false;
    if (can_reorder && position[c] > pinned) {
      if (!params.ruin_recreate) do_reorder = true;
      else if (small) do_reorder = rng.below(2) == 0;
      else  // a scan that fits in what is left of the budget
        do_reorder = static_cast<double>(reorder_work) <=
                         params.reorder_work_share * static_cast<double>(reorder_work + ruin_work) &&
                     placer.work() - work0 + scan_cost <= params.work_limit;
    }
    const std::uint64_t move_start = placer.work();
    if (do_reorder && !small && params.reorder_scan > 1) {
      // Large pools: where c goes in the order matters in steps (it must
      // come after the buffers that should claim a spot first and before
      // those that would take the one it needs), so try reorder_scan
      // places spread over the earlier part of the order and keep the best.
      const std::size_t p = position[c];
      saved = offsets;
      std::size_t best_q = p;
      Score best_s = current;
      bool found = false;
      for (std::size_t k = 0; k < params.reorder_scan; ++k) {
        const std::size_t q = pinned + (p - pinned) * k / params.reorder_scan;
        if (k > 0 && q == pinned + (p - pinned) * (k - 1) / params.reorder_scan) continue;
        std::rotate(order.begin() + static_cast<std::ptrdiff_t>(q),
                    order.begin() + static_cast<std::ptrdiff_t>(p),
                    order.begin() + static_cast<std::ptrdiff_t>(p + 1));
        offsets = saved;
        placer.place(order, q, fit, offsets);
        rebuildTops();
        const Score s = score();
        if (params.accept_equal ? s <= best_s : s < best_s) {
          if (!found || s < best_s) {
            best_s = s;
            best_q = q;
            found = true;
          }
        }
        std::rotate(order.begin() + static_cast<std::ptrdiff_t>(q),
                    order.begin() + static_cast<std::ptrdiff_t>(q + 1),
                    order.begin() + static_cast<std::ptrdiff_t>(p + 1));
        if (params.watch && params.watch->due()) break;
      }
      if (found) {
        std::rotate(order.begin() + static_cast<std::ptrdiff_t>(best_q),
                    order.begin() + static_cast<std::ptrdiff_t>(p),
                    order.begin() + static_cast<std::ptrdiff_t>(p + 1));
        offsets = saved;
        placer.place(order, best_q, fit, offsets);
        for (std::size_t k = best_q; k <= p; ++k) position[order[k]] = k;
      } else {
        offsets.swap(saved);
        placer.markAll(order, offsets);
      }
      rebuildTops();
      current = score();
      scan_cost = placer.work() - move_start;
    } else if (do_reorder) {
      // Move c to a random earlier place; re-place everything after it.
      const std::size_t p = position[c];
      const std::size_t q = pinned + rng.below(p - pinned);
      saved = offsets;
      std::rotate(order.begin() + static_cast<std::ptrdiff_t>(q),
                  order.begin() + static_cast<std::ptrdiff_t>(p),
                  order.begin() + static_cast<std::ptrdiff_t>(p + 1));
      placer.place(order, q, fit, offsets);
      rebuildTops();
      const Score s = score();
      if (params.accept_equal ? s <= current : s < current) {
        current = s;
        for (std::size_t k = q; k <= p; ++k) position[order[k]] = k;
      } else {
        std::rotate(order.begin() + static_cast<std::ptrdiff_t>(q),
                    order.begin() + static_cast<std::ptrdiff_t>(q + 1),
                    order.begin() + static_cast<std::ptrdiff_t>(p + 1));
        offsets.swap(saved);
        placer.markAll(order, offsets);
        rebuildTops();
      }
    } else if (params.ruin_recreate) {
      // Lift c and a random sample of the buffers alive with it.
      placer.overlapping(c, around);
      ruined.clear();
      ruined.push_back(c);
      in_ruin[c] = 1;
      if (params.slab_ruin && rng.below(2) == 0) {
        // Everything alive with c whose top is above a random level under c.
        const Offset level = offsets[c] == merged.reserved
                                 ? merged.reserved
                                 : merged.reserved + rng.below(offsets[c] - merged.reserved + 1);
        for (BufferId o : around) {
          if (ruined.size() >= params.slab_max) break;
          if (!bufs[o].fixed_offset && !in_ruin[o] && bufs[o].size > 0 &&
              offsets[o] + bufs[o].size > level) {
            ruined.push_back(o);
            in_ruin[o] = 1;
          }
        }
      } else {
        const std::size_t want = std::min(ruin, around.size());
        for (std::size_t k = 0; k < want; ++k) {
          const std::size_t j = k + rng.below(around.size() - k);
          std::swap(around[k], around[j]);
          const BufferId o = around[k];
          if (!bufs[o].fixed_offset && !in_ruin[o]) {
            ruined.push_back(o);
            in_ruin[o] = 1;
          }
        }
      }
      lifted.clear();
      for (BufferId r : ruined) {
        lifted.emplace_back(r, offsets[r]);
        placer.unmark(r);
      }
      // Recreate: largest first, or a random order one time in four.
      if (rng.below(4) == 0) {
        for (std::size_t k = ruined.size(); k > 1; --k) std::swap(ruined[k - 1], ruined[rng.below(k)]);
      } else {
        std::sort(ruined.begin(), ruined.end(), [&](BufferId a, BufferId b) {
          if (bufs[a].size != bufs[b].size) return bufs[a].size > bufs[b].size;
          return a < b;
        });
      }
      const Fit f = rng.below(4) == 0 ? (fit == Fit::Best ? Fit::First : Fit::Best) : fit;
      for (BufferId r : ruined) {
        const Offset at = placer.choose(r, f);
        moveTop(r, offsets[r], at);
        offsets[r] = at;
        placer.mark(r, at);
      }
      const Score s = score();
      if (params.accept_equal ? s <= current : s < current) {
        current = s;
      } else {
        for (BufferId r : ruined) placer.unmark(r);
        for (const auto& [r, at] : lifted) {
          moveTop(r, offsets[r], at);
          offsets[r] = at;
          placer.mark(r, at);
        }
      }
      for (BufferId r : ruined) in_ruin[r] = 0;
    }
    (do_reorder ? reorder_work : ruin_work) += placer.work() - move_start;
    if (current < best_score) {
      if (current.height < best_score.height) {
        ++best.improvements;
        best.height = current.height;
        best.offsets = offsets;
      }
      best_score = current;
      since_improvement = 0;
      ruin = params.ruin_min;
      if (params.progress) {
        const auto now = std::chrono::steady_clock::now();
        if (std::chrono::duration<double>(now - last_progress).count() >= 0.25) {
          last_progress = now;
          params.progress(fmt::format("local search: height {} after {} moves", best.height,
                                      best.moves));
        }
      }
    } else if (++since_improvement % 64 == 0) {
      ruin = std::min(params.ruin_max, ruin * 2);
      if (ruin == params.ruin_max && since_improvement % 1024 == 0) ruin = params.ruin_min;
    }
  }
  best.work = placer.work() - work0;
  return best;
}

}  // namespace memplan::heur

namespace memplan {

namespace {

// "local_search": auto's first three stages exactly (its heuristics, the
// portfolio within its budget, then this search within its budget), so
// that auto, which goes on from there, is never larger.
class LocalSearch : public Algorithm {
 public:
  const AlgorithmInfo& info() const override {
    static const AlgorithmInfo kInfo{
        .name = "local_search",
        .summary = "iterated local search over placements and orders from the best heuristic plan",
        .honours_gaps = true,
        .honours_hints = true};
    return kInfo;
  }
  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams& params) const override {
    AutoParams ap;
    ap.stop_after_local_search = true;
    PoolSolution s = makeAutoAlgorithm(ap)->solve(problem, params);
    s.algorithm = "local_search";
    return s;
  }
};

}  // namespace

std::unique_ptr<Algorithm> makeLocalSearchAlgorithm() { return std::make_unique<LocalSearch>(); }

}  // namespace memplan

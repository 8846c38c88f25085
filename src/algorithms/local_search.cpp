// Iterated local search (see local_search.h) and the "local_search"
// algorithm: best_fit's portfolio followed by the search.
#include "algorithms/local_search.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>

#include <fmt/format.h>

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
  const auto clock_start = std::chrono::steady_clock::now();
  auto last_progress = clock_start;
  std::vector<std::size_t> position(n);
  for (std::size_t k = 0; k < n; ++k) position[order[k]] = k;
  std::vector<BufferId> peak, around, ruined;
  std::vector<Offset> saved;
  std::vector<std::pair<BufferId, Offset>> lifted;
  std::vector<char> in_ruin(n, 0);
  std::size_t ruin = params.ruin_min;
  std::uint64_t since_improvement = 0;
  const bool can_reorder = params.reorder && n <= params.reorder_max_buffers;
  placer.markAll(order, offsets);

  const std::uint64_t stall =
      std::max<std::uint64_t>(params.stall_moves, params.stall_moves_per_buffer * n);
  while (placer.work() - work0 < params.work_limit && best_score.height > params.target) {
    if (params.stall_moves > 0 && since_improvement >= stall) break;
    ++best.moves;
    if (params.time_limit_seconds > 0 && (best.moves & 15) == 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - clock_start).count() >
            params.time_limit_seconds)
      break;

    peak.clear();
    for (auto it = tops.rbegin(); it != tops.rend() && it->first == current.height; ++it)
      if (!bufs[it->second].fixed_offset) peak.push_back(it->second);
    if (peak.empty()) break;  // the peak is pinned: nothing to move
    const BufferId c = peak[rng.below(peak.size())];

    const bool do_reorder =
        can_reorder && (!params.ruin_recreate || rng.below(2) == 0) && position[c] > pinned;
    if (do_reorder) {
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

class LocalSearch : public Algorithm {
 public:
  const AlgorithmInfo& info() const override {
    static const AlgorithmInfo kInfo{
        .name = "local_search",
        .summary = "iterated local search over placement orders from the best heuristic plan",
        .honours_gaps = true,
        .honours_hints = true};
    return kInfo;
  }
  PoolSolution solve(const PoolProblem& problem, const AlgorithmParams& params) const override {
    return pool::solveOffsets(problem, [&](const pool::MergedProblem& m, const pool::Bounds& bounds) {
      heur::Placer placer(m.problem);
      const auto passes = heur::allPasses();
      auto start = heur::runPortfolio(m.problem, placer, passes, bounds.target);
      heur::LocalSearchParams lp;
      lp.seed = params.seed;
      lp.target = bounds.target;
      lp.time_limit_seconds = params.time_limit_seconds;
      lp.progress = params.progress;
      lp.work_limit = static_cast<std::uint64_t>(
          params.effort * static_cast<double>(lp.work_limit + 200 * m.problem.buffers.size()));
      auto r = heur::improvePlacement(m.problem, placer, start.order, start.pass.fit,
                                      std::move(start.offsets), lp);
      return pool::Placement{.offsets = std::move(r.offsets),
                             .label = "local_search",
                             .work = start.work + r.work};
    });
  }
};

}  // namespace

std::unique_ptr<Algorithm> makeLocalSearchAlgorithm() { return std::make_unique<LocalSearch>(); }

}  // namespace memplan

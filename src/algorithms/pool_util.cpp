#include "algorithms/pool_util.h"

#include <algorithm>
#include <map>
#include <numeric>

#include <fmt/format.h>

namespace memplan::pool {

namespace {

BufferId findRoot(std::vector<BufferId>& parent, BufferId x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];  // path halving keeps chains short
    x = parent[x];
  }
  return x;
}

}  // namespace

MergedProblem mergeInplace(const PoolProblem& problem) {
  const auto n = static_cast<BufferId>(problem.buffers.size());
  MergedProblem out;
  out.problem.mem_id = problem.mem_id;
  out.problem.reserved = problem.reserved;
  out.problem.extra_padding = problem.extra_padding;
  out.problem.capacity = problem.capacity;

  std::vector<BufferId> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  for (BufferId i = 0; i < n; ++i) {
    const BufferId base = problem.buffers[i].inplace_base;
    if (base == kNone) continue;
    if (base < 0 || base >= n)
      throw InputError(fmt::format("pool {}: buffer {} ('{}'): inplace_base {} out of range",
                                   problem.mem_id, i, problem.buffers[i].name, base));
    const BufferId a = findRoot(parent, i), b = findRoot(parent, base);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);  // root = first member
    out.merged_any = true;
  }

  // Groups numbered by their first member, so the merged order follows the
  // original insertion order.
  out.group_of.assign(n, kNone);
  for (BufferId i = 0; i < n; ++i) {
    const BufferId r = findRoot(parent, i);
    if (out.group_of[r] == kNone) {
      out.group_of[r] = static_cast<BufferId>(out.members.size());
      out.members.emplace_back();
    }
    out.group_of[i] = out.group_of[r];
    out.members[out.group_of[i]].push_back(i);
  }

  out.problem.buffers.resize(out.members.size());
  for (std::size_t g = 0; g < out.members.size(); ++g) {
    Buffer& m = out.problem.buffers[g];
    const Buffer& first = problem.buffers[out.members[g].front()];
    m = first;
    m.id = static_cast<BufferId>(g);
    m.inplace_base = kNone;
    m.alignment = std::max<Bytes>(1, first.alignment);
    for (BufferId i : out.members[g]) {
      const Buffer& b = problem.buffers[i];
      m.start = std::min(m.start, b.start);
      m.end = std::max(m.end, b.end);
      m.size = std::max(m.size, b.size);
      m.nbytes = std::max(m.nbytes, b.nbytes);
      m.alignment = std::max<Bytes>(m.alignment, b.alignment);
      if (b.fixed_offset) {
        if (m.fixed_offset && *m.fixed_offset != *b.fixed_offset)
          throw InputError(fmt::format(
              "pool {}: buffer {} ('{}') shares storage with '{}' but is pinned at {} "
              "instead of {}",
              problem.mem_id, i, b.name, first.name, *b.fixed_offset, *m.fixed_offset));
        m.fixed_offset = b.fixed_offset;
      }
    }
    if (m.end <= m.start) m.end = m.start + 1;  // an empty lifetime still needs a home
  }
  return out;
}

std::vector<Offset> expandOffsets(const MergedProblem& merged,
                                  const std::vector<Offset>& merged_offsets) {
  std::vector<Offset> out(merged.group_of.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = merged_offsets[merged.group_of[i]];
  return out;
}

Bytes placementHeight(const PoolProblem& problem, const std::vector<Offset>& offsets) {
  Bytes h = problem.reserved;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i)
    if (problem.buffers[i].size > 0) h = std::max(h, offsets[i] + problem.buffers[i].size);
  return h;
}

Bytes poolSize(const PoolProblem& problem, const std::vector<Offset>& offsets) {
  Bytes h = placementHeight(problem, offsets);
  if (!problem.buffers.empty()) h += problem.extra_padding;
  return h;
}

std::string checkPlacement(const PoolProblem& problem, const std::vector<Offset>& offsets) {
  const std::size_t n = problem.buffers.size();
  if (offsets.size() != n)
    return fmt::format("{} offsets for {} buffers", offsets.size(), n);
  MergedProblem merged;
  try {
    merged = mergeInplace(problem);
  } catch (const InputError& e) {
    return e.what();
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    const Offset o = offsets[i];
    const Bytes align = std::max<Bytes>(1, b.alignment);
    if (o % align != 0)
      return fmt::format("buffer {} ('{}') at {} is not aligned to {}", i, b.name, o, align);
    if (o < problem.reserved)
      return fmt::format("buffer {} ('{}') at {} is inside the reserved prefix ({} bytes)", i,
                         b.name, o, problem.reserved);
    if (o > kMaxBytes || b.size > kMaxBytes - o)
      return fmt::format("buffer {} ('{}') at {} overflows", i, b.name, o);
    if (b.fixed_offset && *b.fixed_offset != o)
      return fmt::format("buffer {} ('{}') at {} is pinned at {}", i, b.name, o, *b.fixed_offset);
    const BufferId first = merged.members[merged.group_of[i]].front();
    if (offsets[first] != o)
      return fmt::format("buffer {} ('{}') at {} but its in-place base '{}' is at {}", i, b.name,
                         o, problem.buffers[first].name, offsets[first]);
  }
  // Sweep over the merged groups: ends before starts at the same time
  // (half-open lifetimes); the live set, ordered by offset, must stay
  // disjoint, so checking the two neighbours of each insertion suffices.
  const auto& mb = merged.problem.buffers;
  struct Event { TimeValue t; bool start; BufferId g; };
  std::vector<Event> events;
  events.reserve(2 * mb.size());
  for (const Buffer& b : mb) {
    if (b.size == 0) continue;
    events.push_back({b.start, true, b.id});
    events.push_back({b.end, false, b.id});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.t != b.t) return a.t < b.t;
    if (a.start != b.start) return !a.start;
    return a.g < b.g;
  });
  std::map<Offset, BufferId> live;  // offset -> group
  auto name = [&](BufferId g) { return problem.buffers[merged.members[g].front()].name; };
  for (const Event& e : events) {
    const Offset o = offsets[merged.members[e.g].front()];
    if (!e.start) {
      live.erase(o);
      continue;
    }
    const Bytes size = mb[e.g].size;
    auto next = live.lower_bound(o);
    if (next != live.end() && next->first < o + size)
      return fmt::format("buffers '{}' and '{}' overlap in time and bytes (at {} and {})",
                         name(e.g), name(next->second), o, next->first);
    if (next != live.begin()) {
      auto prev = std::prev(next);
      if (prev->first + mb[prev->second].size > o)
        return fmt::format("buffers '{}' and '{}' overlap in time and bytes (at {} and {})",
                           name(e.g), name(prev->second), o, prev->first);
    }
    live.emplace(o, e.g);
  }
  return {};
}

std::string checkPlacementExact(const PoolProblem& problem, const std::vector<Offset>& offsets) {
  const std::size_t n = problem.buffers.size();
  if (offsets.size() != n) return fmt::format("{} offsets for {} buffers", offsets.size(), n);
  MergedProblem merged;
  try {
    merged = mergeInplace(problem);
  } catch (const InputError& e) {
    return e.what();
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    if (offsets[i] % std::max<Bytes>(1, b.alignment) != 0)
      return fmt::format("buffer {} ('{}') at {} is not aligned", i, b.name, offsets[i]);
    if (offsets[i] < problem.reserved)
      return fmt::format("buffer {} ('{}') is inside the reserved prefix", i, b.name);
    if (b.fixed_offset && *b.fixed_offset != offsets[i])
      return fmt::format("buffer {} ('{}') is not at its pin", i, b.name);
    if (b.inplace_base != kNone && offsets[b.inplace_base] != offsets[i])
      return fmt::format("buffer {} ('{}') is not at its in-place base", i, b.name);
  }
  struct Event { TimeValue t; bool start; BufferId b; };
  std::vector<Event> events;
  for (const Buffer& b : problem.buffers) {
    if (b.size == 0 || b.end <= b.start) continue;
    events.push_back({b.start, true, b.id});
    events.push_back({b.end, false, b.id});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.t != b.t) return a.t < b.t;
    if (a.start != b.start) return !a.start;
    return a.b < b.b;
  });
  std::vector<BufferId> live;
  std::vector<std::size_t> slot(n, 0);
  for (const Event& e : events) {
    if (!e.start) {
      const std::size_t k = slot[e.b];
      live[k] = live.back();
      slot[live[k]] = k;
      live.pop_back();
      continue;
    }
    const Buffer& x = problem.buffers[e.b];
    for (BufferId y : live) {
      if (merged.group_of[y] == merged.group_of[e.b]) continue;
      const Buffer& o = problem.buffers[y];
      if (offsets[e.b] < offsets[y] + o.size && offsets[y] < offsets[e.b] + x.size)
        return fmt::format("buffers '{}' and '{}' overlap in time and bytes", x.name, o.name);
    }
    slot[e.b] = live.size();
    live.push_back(e.b);
  }
  return {};
}

PoolSolution makeSolution(const PoolProblem& problem, std::vector<Offset> offsets,
                          std::string algorithm, Bytes lower_bound, std::uint64_t work) {
  PoolSolution s;
  s.size = poolSize(problem, offsets);
  s.offsets = std::move(offsets);
  s.mem_obj_ids.assign(problem.buffers.size(), 0);
  s.algorithm = std::move(algorithm);
  s.proven_optimal = s.size <= lower_bound;
  s.work = work;
  return s;
}

}  // namespace memplan::pool

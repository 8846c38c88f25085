// A spec's lifetime cut by its gaps into pieces: the steps and the bytes
// (relative to its offset) it holds in each. The verifier checks pieces
// for overlap; the replay writes each piece when it starts and checks it
// when it ends. Sharing this one definition keeps their verdicts equal.
#pragma once

#include <vector>

#include "memplan/specs.h"

namespace memplan::piece {

struct Piece {
  TimeValue first = 0, last = 0;  // closed steps
  Bytes begin = 0, end = 0;       // bytes [begin, end) from the spec's offset
};

// Pieces of a spec holding `size` bytes over [first, last]: the steps
// outside its gaps hold [0, size); a gap's steps hold its window, or
// nothing. Gaps are clipped to the lifetime and to `size`; out of order or
// overlapping gaps are taken in order, each starting where the last ended.
// Empty pieces are left out. Without gaps: one piece.
inline void piecesOf(const Spec& s, Bytes size, std::vector<Piece>& out) {
  out.clear();
  TimeValue cur = s.first;
  for (const Gap& g : s.gaps) {
    const TimeValue start = std::max(g.start, cur);
    const TimeValue end = std::min(g.end, s.last + 1);
    if (start >= end) continue;
    if (start > cur) out.push_back({cur, start - 1, 0, size});
    if (g.window) {
      const Bytes lo = std::min(g.window->first, size), hi = std::min(g.window->second, size);
      if (lo < hi) out.push_back({start, end - 1, lo, hi});
    }
    cur = end;
  }
  if (cur <= s.last) out.push_back({cur, s.last, 0, size});
}

}  // namespace memplan::piece

// The fixed side of the exact search, drawn at the top of exact_search.h:
// a merged pool's items, their spans over time sections, their neighbours
// and pinned obstacles, and the sections' item lists. Built once per pool,
// read by every decision the search makes.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/exact_search.h"

namespace memplan::exact {

using ItemIdx = std::int32_t;     // a searched item (a merged buffer with bytes)
using SectionIdx = std::int32_t;  // a section: time between two events

constexpr Offset kUnplaced = ~Offset{0};
constexpr ItemIdx kNoItem = -1;

// [begin, end) of a flattened list: each item's (or section's) entries
// are contiguous in one vector.
struct IndexRange {
  std::int32_t begin = 0, end = 0;
};

// Sections [first_section, end_section) in which the item holds bytes
// [window_lo, window_hi) of its own (a buffer with gaps has several).
struct Span {
  SectionIdx first_section, end_section;
  Bytes window_lo, window_hi;
};

// `item` shares time with the item owning this entry: placed above it,
// item's offset is at least the owner's offset + clearance. Packed (12
// bytes, not 16): a window of thousands of items live at once has millions.
struct __attribute__((packed)) Neighbour {
  ItemIdx item;
  Bytes clearance;
};

// A pinned item as an obstacle for another item of size s: offset x is
// clear iff x + s <= lo or x >= hi.
struct PinObstacle {
  Offset lo, hi;
};

// What an item is, fixed for every capacity searched.
struct Item {
  std::size_t buffer = 0;  // its merged buffer
  Bytes size = 0, alignment = 1;
  Offset pin = kUnplaced;  // kUnplaced: free to move
  TimeValue start = 0, end = 0;
  // The hull of its spans: sections [first_section, end_section).
  SectionIdx first_section = 0, end_section = 0;
  IndexRange spans;       // into SearchLayout::spans
  IndexRange neighbours;  // into SearchLayout::neighbours
  IndexRange obstacles;   // into SearchLayout::obstacles, sorted by lo
  IndexRange slots;       // into SearchLayout::slot_position: one per section it holds bytes in
  // The identical item before it (same size, alignment and spans,
  // unpinned), which symmetry breaking places first; kNoItem if none.
  ItemIdx identical_before = kNoItem;
};

inline Offset alignUpSat(Offset v, Bytes a) {
  const auto r = alignUp(v, a);
  return r ? *r : kUnplaced;
}

struct SearchLayout {
  std::vector<Offset> bytesless_offsets;  // per merged buffer: where those without bytes go
  std::vector<Item> items;
  std::vector<Span> spans;                // items' spans, item by item
  std::vector<Neighbour> neighbours;      // items' neighbours, item by item
  std::vector<PinObstacle> obstacles;     // items' obstacles, item by item (with pin_obstacles)
  std::vector<TimeValue> event_times;     // section s is [event_times[s], event_times[s + 1])
  SectionIdx num_sections = 0;
  std::vector<Bytes> section_bytes;       // per section: every item's window bytes
  std::vector<std::int32_t> spanning_at_start;  // per boundary: items crossing it
  // Section s's items are section_items[section_begin[s] .. section_begin[s + 1]).
  std::vector<std::int32_t> section_begin;
  std::vector<ItemIdx> section_items;
  // An item's slot k (its k-th section) sits at section_items[slot_position[k]];
  // slot_at_position is the inverse. The search reorders both lists.
  std::vector<std::int32_t> slot_position, slot_at_position;
  bool complete = true;       // no window starts above its offset: a kNotFound is a proof
  bool pins_collide = false;  // two pinned items overlap: nothing fits
};

SearchLayout buildSearchLayout(const PoolProblem& merged, const ExactParams& params);

}  // namespace memplan::exact

// Domain types shared by every stage of memplan.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>
#include <utility>

namespace memplan {

using Bytes = std::uint64_t;      // a size in bytes
using Offset = std::uint64_t;     // a byte offset inside a pool
using TimeValue = std::int64_t;   // a step in a graph's execution order
using TensorId = std::int32_t;    // index into Model::tensors
using NodeId = std::int32_t;      // index into Graph::nodes
using GraphId = std::int32_t;     // index into Model::graphs (0 = main graph)
using SpecId = std::int32_t;      // index into a graph's planning specs
using MemId = std::int32_t;       // pool id; 0 is reserved for constants
using BufferId = std::int32_t;    // index into a PoolProblem's buffers

inline constexpr std::int32_t kNone = -1;

// One-line messages, as every memplan error is worded.
// Text from input files as it may appear in a message: valid, printable
// UTF-8 is kept; control characters and bytes that are not valid UTF-8
// become \xNN (a garbage header cannot garble a terminal). Cut after `max`
// input bytes with "...".
std::string printable(std::string_view s, std::size_t max = 200);
// The candidate closest to `word` by edit distance, if close enough to be
// what was meant (a typo, a missing or doubled letter); "" otherwise.
std::string closest(std::string_view word, const std::vector<std::string>& candidates);

// How memplan writes a byte count: "512 B", "1.5 KiB", "12.3 MiB", "2.0 GiB"
// (1 decimal, binary units); with `exact`, the exact count follows:
// "12.3 MiB (12896256 B)".
std::string formatBytes(Bytes bytes, bool exact = false);

// A window of a buffer's lifetime in which it holds fewer bytes (MiniMalloc's
// gaps): half-open steps [start, end) inside the buffer's own lifetime; with
// no `window` it holds none, otherwise only bytes [window->first,
// window->second) counted from its own offset. A buffer's gaps are sorted
// and disjoint; readers check that.
struct Gap {
  TimeValue start = 0;
  TimeValue end = 0;
  std::optional<std::pair<Bytes, Bytes>> window;
  friend bool operator==(const Gap&, const Gap&) = default;
};
// Largest size memplan accepts for one tensor or pool: leaves head room so
// offset + size never overflows 64 bits.
inline constexpr Bytes kMaxBytes = Bytes{1} << 62;

// Input that cannot be planned: bad file, bad option, inconsistent graph.
// `what()` is one line naming the file and the place. Maps to exit code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Planning is impossible as asked. Maps to exit code 2: the request, not
// the tool, is wrong.
class PlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The plan does not fit: a pool's capacity cannot be met (with no pool left
// to spill to). Maps to exit code 3 ("does not fit"), apart from bad input.
class CapacityError : public PlanError {
 public:
  using PlanError::PlanError;
};

// Overflow-checked arithmetic; nullopt when the result exceeds kMaxBytes.
inline std::optional<Bytes> checkedAdd(Bytes a, Bytes b) {
  if (a > kMaxBytes || b > kMaxBytes - a) return std::nullopt;
  return a + b;
}
// a + b, or kMaxBytes when that overflows (sums that are only compared).
inline Bytes saturatingAdd(Bytes a, Bytes b) { return checkedAdd(a, b).value_or(kMaxBytes); }
inline std::optional<Bytes> checkedMul(Bytes a, Bytes b) {
  if (a == 0 || b == 0) return Bytes{0};
  if (a > kMaxBytes / b) return std::nullopt;
  return a * b;
}
// Rounds `value` up to a multiple of `alignment` (alignment >= 1).
inline std::optional<Bytes> alignUp(Bytes value, Bytes alignment) {
  if (alignment <= 1) return value;
  const Bytes rem = value % alignment;
  if (rem == 0) return value;
  return checkedAdd(value, alignment - rem);
}

}  // namespace memplan

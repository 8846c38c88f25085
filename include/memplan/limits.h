// memplan's limits: sizes and counts a valid input never reaches. Readers
// refuse inputs beyond them (with the field that exceeds them) before they
// allocate anything for them, so hostile files cannot exhaust memory, and
// sums of sizes and offsets never overflow 64 bits.
#pragma once

#include <cstddef>

#include "memplan/types.h"

namespace memplan::limits {

inline constexpr Bytes kMaxSize = kMaxBytes;            // one tensor, one pool: 2^62 bytes
inline constexpr Bytes kMaxAlignment = Bytes{1} << 30;  // bytes
inline constexpr MemId kMaxMemId = 4096;                // bufsizes has one entry per mem_id
inline constexpr std::size_t kMaxPools = std::size_t{kMaxMemId} + 1;
inline constexpr TimeValue kMaxTime = TimeValue{1} << 62;  // steps of a lifetime
// Counts, set by the memory budget: a `memplan plan -o plan.json` run at
// these limits stays under 8 GiB. A run costs ~1.7 KB a tensor of graph
// JSON (file, model, specs, plan and its file together), ~1.1 KB a CSV
// row and ~1.4 KB a spec-list entry (bench/readers, docs/reliability.md):
// 2^22 of them need at most ~7 GB. (TFLite's importer has the same cap.)
inline constexpr std::size_t kMaxTensors = std::size_t{1} << 22;
inline constexpr std::size_t kMaxGraphs = std::size_t{1} << 20;
inline constexpr std::size_t kMaxNodes = std::size_t{1} << 22;   // a graph's
inline constexpr std::size_t kMaxSpecs = std::size_t{1} << 22;   // spec-list entries, CSV rows
inline constexpr std::size_t kMaxRank = 64;               // dimensions of a shape
inline constexpr std::size_t kMaxJsonDepth = 32;          // nesting of a JSON document
inline constexpr std::size_t kMaxControlFlowDepth = 64;   // bodies inside bodies

}  // namespace memplan::limits

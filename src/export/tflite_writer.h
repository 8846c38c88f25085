// TensorFlow Lite Micro's offline plan and operator order written into a
// .tflite (docs/runtime.md); the analysis behind them is plan/tflm_analysis.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/algorithm.h"
#include "memplan/import.h"
#include "memplan/plan.h"

namespace memplan {

// A copy of the .tflite `bytes` whose metadata carries `offsets` as the
// offline plan, replacing an existing one (its buffer is reused when no
// tensor refers to it, else a buffer is appended). Everything else keeps
// its meaning: same tensors, buffers (byte for byte), operators,
// subgraphs, signatures. The new root table and plan are written in front
// of the original flatbuffer, which follows whole (FlatBuffers offsets are
// relative and point forward, so it stays valid; offsets of buffers stored
// after the flatbuffer are moved by the same amount). Throws InputError on
// a file memplan cannot rewrite safely (Model fields newer than memplan
// knows, a wrong offset count).
std::string writeTfliteOfflinePlan(std::string_view bytes, const std::string& source_name,
                                   const std::vector<std::int32_t>& offsets);

// The check writeTfliteOfflinePlan makes of its result before returning it
// (callable on any bytes, so that a test can hand it a corrupted result):
// `written` must carry `offsets` as its offline plan, every buffer but the
// plan's must hold the same bytes under the same index, every other
// metadata entry must be the same, and the original flatbuffer must follow
// (or be) the written file unchanged where the Model's other fields point
// (operator codes, subgraphs and operators, description, signature defs) --
// only the old plan's own bytes and the offsets of buffers stored outside
// the flatbuffer may differ. Throws PlanError naming the first difference.
void checkTfliteRewrite(std::string_view original, std::string_view written,
                        const std::string& source_name, const std::vector<std::int32_t>& offsets);

// A copy of the .tflite `bytes` whose subgraphs run their operators in a new
// order: orders[g] lists, for graph g of `model` (importTflite of the same
// bytes), the operators' old indices in the new run order (an empty list
// keeps a graph's order). TFLite runs a subgraph's operator list in order,
// so this is the order a runtime executes. Only the operator vectors'
// entries change (same size, everything else byte for byte). Throws
// InputError when a list does not fit its subgraph.
std::string reorderTfliteOperators(std::string_view bytes, const std::string& source_name,
                                   const Model& model,
                                   const std::vector<std::vector<NodeId>>& orders);

}  // namespace memplan

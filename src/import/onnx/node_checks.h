// Checks of what ONNX shape inference gives a node against what the node
// can legally produce. Inference trusts its inputs: an integer Range whose
// element count overflows int64 or whose delta is 0, and a Reshape to
// another element count, come out typed [0] or with the wrong size. Planned
// at that size they would be memory corruption in a runtime, so the
// importer refuses such nodes instead.
#pragma once

#include <set>
#include <string>

#include "import/onnx/proto_util.h"

namespace memplan::onnx_import {

// The first node of `g` or its bodies (those in `dead` excepted: they never
// run for the bound shapes) whose inferred output it cannot produce, as
// "node 'r' (Range) in graph 'b': ...". Empty when there is none. `g` is
// the scratch copy after shape inference and folding: values are those of
// its initializers and Constant nodes, types those of its value_info.
std::string checkInferredShapes(const ox::GraphProto& g,
                                const std::set<const ox::GraphProto*>& dead);

}  // namespace memplan::onnx_import

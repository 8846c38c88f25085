// ShapeFolder: evaluates small integer tensors whose inputs are known
// (constants, or shapes already inferred) and hands the values to ONNX shape
// inference as Constant nodes in a scratch copy of the model; the import
// itself keeps the original nodes. The importer alternates ONNX shape
// inference and fold() for a few rounds, each sizing more tensors.
//
// Besides the per-op rules (fold_rules.h) it
//   - passes on the live branch's output types of an If whose condition is
//     known (ONNX merges both branches and loses the shape when they differ)
//     and records the dead branch, which needs no storage;
//   - types the outputs of nodes sized by memplan's own opset rule
//     (opset_compat.h).
// Budgets bound the work: elements per tensor (kMaxFoldElements) and in
// total (kFoldBudget).
#pragma once

#include <cstddef>
#include <set>
#include <string>

#include "import/onnx/fold_rules.h"

namespace memplan::onnx_import {

// Elements folded in a whole model.
constexpr std::size_t kFoldBudget = std::size_t{1} << 20;

class ShapeFolder {
 public:
  // Folds what it can in `g` (and its bodies); returns how many nodes became
  // Constant nodes or gained a type.
  std::size_t fold(ox::GraphProto* g, const FoldScope* outer, int depth);

  // Branches of an If whose condition is known not to hold: they never run
  // for the bound shapes (filled by the last fold()).
  std::set<const ox::GraphProto*> dead;

 private:
  bool remember(FoldScope& scope, const std::string& name, IntTensor t);
  std::size_t selectBranch(ox::GraphProto* g, const ox::NodeProto& n, FoldScope& scope);
  std::size_t newerOpTypes(ox::GraphProto* g, const ox::NodeProto& n, FoldScope& scope);

  std::size_t budget_ = kFoldBudget;
};

}  // namespace memplan::onnx_import

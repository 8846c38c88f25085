// Pinned tensors: offsets fixed by the input (graph JSON `offset`, a
// TensorFlow Lite Micro offline plan read from a .tflite).
//
// A pin must be a multiple of its tensor's alignment, and two pinned
// tensors alive at the same step must not share a byte -- unless
// PlanOptions::allow_pinned_overlap: TFLite Micro lets an offline plan
// overlap tensors on purpose (its OfflinePlannerOverlappingAllocation test
// places two live inputs at one offset). Then the pinned tensors stay where
// they are and every other tensor is planned around the bytes they cover.
#pragma once

#include "memplan/plan.h"

namespace memplan {

// Checks every pinned tensor of every graph. Throws InputError, one line
// naming the model and the tensor(s): a misaligned pin, or (unless
// options.allow_pinned_overlap) two pinned tensors that share bytes while
// both alive. O(n log n) per graph.
void checkPins(const Model& model, const PlanOptions& options);

// planModel after checkPins. With allow_pinned_overlap and pins that do
// overlap, each group of overlapping pinned tensors is taken out of the
// problem and replaced by obstacles covering exactly the bytes they hold at
// each step (disjoint pinned rectangles); the algorithm plans the rest
// around them and the group's tensors keep their pins. Not with per_device.
Plan planModelWithPins(const Model& model, const PlanRequest& request);

}  // namespace memplan

// TensorFlow Lite Micro: the plan its runtime would make, and memplan's plan
// handed to it as an offline memory plan (docs/runtime.md).
//
// TFLM keeps one arena; its head holds every tensor it allocates: the
// tensors that are not constants, not variables (kept in its persistent
// section) and not empty. An offline plan is a model metadata entry named
// "OfflineMemoryAllocation" whose buffer holds little-endian int32s
// [version, subgraphs, n, offset_0 .. offset_n-1]: one byte offset from the
// head's start per tensor of all subgraphs concatenated in file order, -1
// where TFLM plans the tensor itself at run time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/algorithm.h"
#include "memplan/import.h"
#include "memplan/plan.h"

namespace memplan {

// The buffers TFLM's allocator hands its GreedyMemoryPlanner for `model`
// (a model imported from a .tflite): the tensors it allocates, in tensor
// order, each with its size rounded up to 16 bytes and its lifetime as
// TFLM's AllocationInfoBuilder marks it -- one allocation scope per
// operator and per control-flow body entered, subgraph inputs and outputs
// from the start of their invocation, outputs to its end -- all subgraphs
// on one time line. A tensor's pin (Tensor::offset, e.g. read from an
// offline plan) is its offline offset. Kernels' scratch buffers are not
// known before run time and are not included.
struct TflmBuffers {
  PoolProblem problem;               // alignment 1: TFLM aligns sizes, not offsets
  std::vector<TensorId> tensors;     // buffer -> tensor
};
TflmBuffers tflmBuffers(const Model& model);

// The arena head TFLM's GreedyMemoryPlanner (memplan's "tflm_greedy")
// computes for those buffers: its high-water mark, in bytes.
Bytes tflmArenaBytes(const Model& model);

// What to set TFLM's kTensorArenaSize to when the tensors' plan (the
// arena's head) takes `head` bytes: the head, plus the tail TFLM's
// allocator takes for itself, estimated from the model for TFLM's reference
// kernels on a 64-bit host (a 32-bit target's structures are smaller, so the
// estimate is above what it needs). Measured: 0.4-0.5% above the smallest
// arena TFLM's interpreter accepts on the example models, 1 KiB on a small
// one (docs/runtime.md).
// Scratch buffers of optimized kernels (CMSIS-NN, ...) are not included.
struct TflmArenaEstimate {
  Bytes head = 0;          // the plan's head, aligned to 16
  Bytes eval_tensors = 0;  // 24 B per tensor of every subgraph (TfLiteEvalTensor)
  Bytes nodes = 0;         // 64 B per operator (NodeAndRegistration)
  Bytes io_tensors = 0;    // 64 B per input and output of the main graph (TfLiteTensor)
  Bytes kernel_data = 0;   // 128 B per operator, + 8 B per output channel of CONV_2D,
                           // DEPTHWISE_CONV_2D, TRANSPOSE_CONV (per-channel multipliers and
                           // shifts, allocated whatever the type) and of quantized
                           // FULLY_CONNECTED
  Bytes tables = 0;        // 1 KiB + 8 B per tensor: the allocator's own tables
  Bytes total = 0;         // the sum, rounded up to 16 (MicroArenaBufferAlignment)
};
TflmArenaEstimate tflmArenaEstimate(const Model& model, Bytes head);

// memplan's plan as an offline plan: one entry per tensor numbered by
// `index` (tfliteTensorIndex of the same file), the tensor's offset in pool
// 1, or -1 for tensors TFLM does not allocate in the head (constants,
// variables, empty tensors) or that the plan leaves unplanned. Throws
// InputError when the plan uses any pool but 1 or an offset above 2^31 - 1.
std::vector<std::int32_t> tfliteOfflineOffsets(const Model& model, const Plan& plan,
                                               const TfliteTensorIndex& index);

// The plan a model's pins make on their own (a .tflite read with its
// offline plan): every planned spec with a pin is allocated there, pool 1
// (or its preset pool); specs without a pin are left to the runtime
// (unplanned). bufsizes are the pins' high-water marks. For `memplan
// verify` / `replay` of a model that carries its plan.
Plan pinnedPlan(const Model& model, const PlanOptions& options);

// Pinned tensors that share bytes while alive together on TFLM's single
// time line (all subgraphs; catches a body's tensors over its caller's),
// as one line each naming both tensors; at most `max` lines.
std::vector<std::string> tflmPinConflicts(const Model& model, std::size_t max = 16);

}  // namespace memplan

// Model importers: real model files -> graph IR.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/graph.h"

namespace memplan {

struct ImportOptions {
  // ONNX: --input-shape NAME=1x3x224x224 (repeatable)
  std::map<std::string, std::vector<std::int64_t>> input_shapes;
  // ONNX: --dim SYMBOL=VALUE (repeatable)
  std::map<std::string, std::int64_t> dims;
  // Reshape/Flatten/Squeeze/Unsqueeze/Identity results alias their input.
  bool alias_views = false;
  // Plan tensors of unknown size at this many bytes (0 = error instead).
  Bytes unknown_size_bytes = 0;
  // TFLite: a model carrying TensorFlow Lite Micro's offline plan
  // (metadata "OfflineMemoryAllocation") has its offsets pinned; true
  // ignores the plan (the model is planned afresh).
  bool ignore_offline_plan = false;
};

// ONNX (.onnx). `bytes` is the whole file; `source_name` names it in errors.
Model importOnnx(std::string_view bytes, const std::string& source_name,
                 const ImportOptions& options);

// TFLite (.tflite flatbuffer).
Model importTflite(std::string_view bytes, const std::string& source_name,
                   const ImportOptions& options);

// How TensorFlow Lite Micro numbers the tensors of a .tflite file: all
// subgraphs concatenated in file order, unreachable ones included.
// `index[t]` is that number for each TensorId of the model importTflite
// makes of the same bytes; `total` counts every subgraph's tensors.
struct TfliteTensorIndex {
  std::vector<std::int64_t> index;
  std::size_t total = 0;
};
TfliteTensorIndex tfliteTensorIndex(std::string_view bytes, const std::string& source_name);

// ExecuTorch programs (.pte): see memplan/pte.h (readPte). Which reader a
// file needs: memplan/formats.h.

}  // namespace memplan

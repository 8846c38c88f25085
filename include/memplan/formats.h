// The input formats memplan reads: one registry row each
// (src/import/formats.cpp), built like the algorithm registry. A row says
// what the format is called, which file extensions it claims, how to tell
// it from its content, how to read it and which import options apply.
// Adding a format is its reader, its row and its tests.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "memplan/import.h"
#include "memplan/io.h"
#include "memplan/pte.h"

namespace memplan {

// What an input holds once read: a model, an ExecuTorch spec list, a
// MiniMalloc buffer list, or an ExecuTorch program (its methods are the
// graphs of its model; plan, verify and replay go through memplan/pte.h).
using InputContent = std::variant<Model, SpecList, BufferList, std::shared_ptr<const PteProgram>>;

// ImportOptions fields, as the bits of InputFormat::import_options.
enum ImportOption : unsigned {
  kImportInputShapes = 1u << 0,        // input_shapes
  kImportDims = 1u << 1,               // dims
  kImportAliasViews = 1u << 2,         // alias_views
  kImportUnknownSizeBytes = 1u << 3,   // unknown_size_bytes
  kImportIgnoreOfflinePlan = 1u << 4,  // ignore_offline_plan
};

// What an input of a format can do beyond being planned, as the bits of
// InputFormat::abilities: the library and the shells ask the row, never the
// format's name.
enum InputAbility : unsigned {
  kCarriesPlan = 1u << 0,        // may carry a plan of its own (pins, an offline or embedded plan):
                                 // `memplan verify|replay MODEL` without a PLAN file
  kWritesTflite = 1u << 1,       // a copy with memplan's plan can be written (writeTflite)
  kWritesPte = 1u << 2,          // a copy with memplan's plan can be written (writePte)
  kRunsOnTfliteMicro = 1u << 3,  // its models run on TensorFlow Lite Micro: its planner is
                                 // there to compare with, and its subgraphs share one time line
};

struct InputFormat {
  std::string_view name;          // "tflite": Python's Input.kind
  std::string_view description;   // "a TFLite model", for messages
  std::string_view plural;        // "TFLite models"
  std::vector<std::string_view> extensions;  // lower case, with the dot
  // True when a file's bytes are of this format (text formats skip a BOM
  // and leading space themselves); null: never guessed from content.
  bool (*sniff)(std::string_view bytes) = nullptr;
  // Reads a whole file; throws InputError naming `name` and the place.
  // Null for a file that is not an input (a plan): refused with `refusal`.
  InputContent (*read)(std::string_view bytes, const std::string& name,
                       const ImportOptions& options) = nullptr;
  unsigned import_options = 0;    // the ImportOption bits that apply
  unsigned abilities = 0;         // the InputAbility bits
  std::string_view refusal;       // why a file that is not an input is refused

  bool can(InputAbility ability) const { return (abilities & ability) != 0; }
};

// Every format, in the order their content tests are tried.
const std::vector<InputFormat>& inputFormats();
// The row named `name`; null if none.
const InputFormat* findInputFormat(std::string_view name);

// The format of a file: the one its extension names when only one claims
// it, else the first whose content test accepts it (among those claiming
// the extension: the last of them when none does; without a known
// extension: among all). Throws InputError naming `path` on an empty file
// or a format it cannot tell.
const InputFormat& detectInputFormat(const std::string& path, std::string_view bytes);

// Throws InputError (one line: the ImportOptions field, what it applies to
// and what `path` is) when `options` set a field `format` does not read.
void checkImportOptions(const InputFormat& format, const ImportOptions& options,
                        const std::string& path);

// The formats whose import_options have `bit`, as a phrase for messages
// ("ONNX models", "ONNX and TFLite models").
std::string formatsReading(ImportOption bit);

}  // namespace memplan

// Fuzzes the TFLite importer; accepted models are planned and checked.
#include "fuzz_common.h"
#include "memplan/import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memplan;
  Model model;
  try {
    ImportOptions options;
    options.unknown_size_bytes = 64;
    model = importTflite(fuzz::asText(data, size), "fuzz.tflite", options);
  } catch (const InputError&) {
    return 0;
  }
  fuzz::planAndCheck(model);
  return 0;
}

// Fuzzes the graph JSON reader; accepted models are planned and checked.
#include "fuzz_common.h"
#include "memplan/io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memplan;
  Model model;
  try {
    model = readGraphJson(fuzz::asText(data, size), "fuzz.json");
  } catch (const InputError&) {
    return 0;
  }
  fuzz::planAndCheck(model);
  // What the reader accepted, the writer must write and the reader re-read.
  try {
    const Model again = readGraphJson(writeGraphJson(model), "rewritten.json");
    if (writeGraphJson(again) != writeGraphJson(model))
      fuzz::bug("graph JSON round trip", "written file reads back differently");
  } catch (const InputError& e) {
    fuzz::bug("graph JSON round trip", e.what());
  }
  return 0;
}

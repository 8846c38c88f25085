// Fuzzes the ExecuTorch program reader, planner and writer; see
// fuzz_checks.h for what is checked.
#include <cstdio>
#include <cstdlib>

#include "fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string problem =
      memplan::fuzz::checkPte({reinterpret_cast<const char*>(data), size});
  if (!problem.empty()) {
    std::fprintf(stderr, "memplan fuzz: %s\n", problem.c_str());
    std::abort();
  }
  return 0;
}

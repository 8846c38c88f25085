// Fuzzes the ExecuTorch spec-list reader; accepted cases are planned with
// their own algorithm and with best_fit, then verified and replayed.
#include "fuzz_common.h"
#include "memplan/io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memplan;
  SpecListCase c;
  try {
    c = readSpecListJson(fuzz::asText(data, size), "fuzz.json");
  } catch (const InputError&) {
    return 0;
  }
  if (c.specs.specs.size() > fuzz::kMaxTensors) return 0;
  for (const std::string& algorithm : {c.algorithm, std::string("best_fit")}) {
    PlanRequest request;
    request.algorithm = algorithm;
    request.options.alignment = c.alignment;
    request.extra_padding = c.extra_padding;
    request.params = fuzz::smallEffort();
    GraphPlan plan;
    try {
      plan = planSpecs(c.specs, request, c.input_mem_buffer_sizes);
    } catch (const InputError&) {
      continue;
    } catch (const PlanError&) {
      continue;
    }
    // ExecuTorch's own algorithms keep its in-place defect: check those
    // cases only when no spec reuses another's allocation.
    bool inplace = false;
    for (const Spec& s : plan.specs.specs) inplace |= s.inplace_base != kNone;
    if (inplace && algorithm != "best_fit") continue;
    const VerifyResult v = verifyGraphPlan(plan, request.options, 1);
    if (!v.ok()) fuzz::bug("verifier rejected a plan", algorithm + ": " + v.violations[0].message);
    ReplayOptions o;
    o.max_dense_bytes = std::uint64_t{64} << 20;
    const ReplayResult r = replaySpecs(plan, o);
    if (!r.ok()) fuzz::bug("replay rejected a plan", algorithm + ": " + r.message);
  }
  return 0;
}

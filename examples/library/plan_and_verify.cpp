// memplan as a library: read a model, plan it, prove the plan, read the
// offsets, write the plan file.
//
//   plan_and_verify MODEL [PLAN.json]
//
// MODEL is any input memplan reads (.tflite, .onnx, graph .json, ExecuTorch
// spec list .json, MiniMalloc .csv). Exit 0 when the plan verifies and
// replays clean, 1 otherwise, 2 on bad input.
#include <cstdio>
#include <exception>

#include "memplan/memplan.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [PLAN.json]\n", argv[0]);
    return 2;
  }
  try {
    // 1. Read: the reader is chosen by extension and content.
    memplan::ImportOptions import;            // e.g. import.input_shapes["x"] = {1, 3, 224, 224};
    const memplan::Input input = memplan::readInput(argv[1], import);

    // 2. Plan: "auto" by default (smallest arenas, lower bound reported).
    memplan::PlanRequest request;
    request.options.alignment = 16;
    request.options.alloc_graph_input = true;  // ExecuTorch's alloc_graph_input
    const memplan::Plan plan = memplan::plan(input, request);

    // 3. Prove it: the O(n log n) verifier, then the replay on shadow arenas.
    const memplan::VerifyResult verdict = memplan::verify(input, plan);
    const memplan::ReplayResult replayed = memplan::replay(input, plan);
    if (!verdict.ok() || !replayed.ok()) {
      std::fprintf(stderr, "%s\n", verdict.ok() ? replayed.message.c_str()
                                                : verdict.violations.front().message.c_str());
      return 1;
    }

    // 4. Read the result: pools, then every tensor's pool and offset.
    const memplan::GraphPlan& main_graph = plan.main();
    for (const memplan::PoolInfo& pool : main_graph.pools)
      std::printf("pool %d: %llu bytes, lower bound %llu%s\n", pool.mem_id,
                  static_cast<unsigned long long>(pool.size),
                  static_cast<unsigned long long>(pool.lower_bound),
                  pool.proven_optimal ? " (optimal)" : "");
    for (const memplan::Allocation& a : main_graph.allocations) {
      const memplan::Spec& spec = main_graph.specs.specs[a.spec];
      std::printf("  %-24s pool %d offset %8llu size %8llu steps [%lld, %lld]\n",
                  spec.name.c_str(), a.mem_id, static_cast<unsigned long long>(a.offset),
                  static_cast<unsigned long long>(a.size), static_cast<long long>(spec.first),
                  static_cast<long long>(spec.last));
    }

    // 5. Write the plan file (atomically); `memplan verify MODEL PLAN.json`
    //    checks it later without retyping any option.
    if (argc > 2) memplan::writePlan(argv[2], plan, input);
    return 0;
  } catch (const memplan::InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const memplan::PlanError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}

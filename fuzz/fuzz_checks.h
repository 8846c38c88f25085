// One check per reader, shared by the libFuzzer targets (which abort on a
// problem) and tests/regressions_test.cpp (which replays saved inputs).
//
// A reader may refuse input with InputError; anything it accepts must plan
// (or be refused with PlanError), and the plan must pass the verifier and
// the replay. Any other exception escapes: the fuzzer reports it as a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "memplan/import.h"
#include "memplan/io.h"
#include "memplan/plan.h"
#include "memplan/pte.h"
#include "verify/replay.h"
#include "memplan/verify.h"

namespace memplan::fuzz {

// Small limits keep each input fast: the readers are the target here.
inline constexpr std::size_t kMaxTensors = 4096;
inline constexpr std::size_t kMaxNodes = 4096;

inline AlgorithmParams smallEffort() {
  AlgorithmParams p;
  p.effort = 0.01;
  return p;
}

inline ReplayOptions smallReplay() {
  ReplayOptions o;
  o.max_dense_bytes = std::uint64_t{64} << 20;
  return o;
}

// Plans an accepted model with a fast algorithm; "" when all is well.
inline std::string checkModel(const Model& model) {
  std::size_t nodes = 0;
  for (const Graph& g : model.graphs) nodes += g.nodes.size();
  if (model.tensors.size() > kMaxTensors || nodes > kMaxNodes) return "";
  PlanRequest request;
  request.algorithm = "best_fit";
  request.params = smallEffort();
  Plan plan;
  try {
    plan = planModel(model, request);
  } catch (const InputError&) {
    return "";
  } catch (const PlanError&) {
    return "";
  }
  const VerifyResult v = verifyPlan(plan, 1);
  if (!v.ok()) return "verifier rejected a plan: " + v.violations[0].message;
  const ReplayResult r = replayPlan(model, plan, smallReplay());
  if (!r.ok()) return "replay rejected a plan: " + r.message;
  return "";
}

inline std::string checkGraphJson(std::string_view bytes) {
  Model model;
  try {
    model = readGraphJson(bytes, "fuzz.json");
  } catch (const InputError&) {
    return "";
  }
  if (std::string problem = checkModel(model); !problem.empty()) return problem;
  // What the reader accepted, the writer must write and the reader re-read.
  try {
    const std::string written = writeGraphJson(model);
    if (writeGraphJson(readGraphJson(written, "rewritten.json")) != written)
      return "graph JSON round trip: the written file reads back differently";
  } catch (const InputError& e) {
    return std::string("graph JSON round trip: ") + e.what();
  }
  return "";
}

inline std::string checkOnnx(std::string_view bytes) {
  ImportOptions options;
  options.unknown_size_bytes = 64;  // plan what cannot be sized
  try {
    return checkModel(importOnnx(bytes, "fuzz.onnx", options));
  } catch (const InputError&) {
    return "";
  }
}

inline std::string checkTflite(std::string_view bytes) {
  ImportOptions options;
  options.unknown_size_bytes = 64;
  try {
    return checkModel(importTflite(bytes, "fuzz.tflite", options));
  } catch (const InputError&) {
    return "";
  }
}

// Spec lists are planned with their own algorithm and with best_fit.
inline std::string checkSpecList(std::string_view bytes) {
  SpecList c;
  try {
    c = readSpecListJson(bytes, "fuzz.json");
  } catch (const InputError&) {
    return "";
  }
  if (c.specs.specs.size() > kMaxTensors) return "";
  for (const std::string& algorithm : {c.algorithm, std::string("best_fit")}) {
    PlanRequest request;
    request.algorithm = algorithm;
    request.options.alignment = c.alignment;
    request.extra_padding = c.extra_padding;
    request.params = smallEffort();
    GraphPlan plan;
    try {
      plan = planSpecs(c.specs, request, c.input_mem_buffer_sizes);
    } catch (const InputError&) {
      continue;
    } catch (const PlanError&) {
      continue;
    }
    // ExecuTorch's own algorithms keep its in-place defect (results placed
    // last): check them only when no spec reuses another's allocation.
    bool inplace = false;
    for (const Spec& s : plan.specs.specs) inplace |= s.inplace_base != kNone;
    if (inplace && algorithm != "best_fit") continue;
    const VerifyResult v = verifyGraphPlan(plan, request.options, 1);
    if (!v.ok()) return algorithm + ": verifier rejected a plan: " + v.violations[0].message;
    const ReplayResult r = replaySpecs(plan, smallReplay());
    if (!r.ok()) return algorithm + ": replay rejected a plan: " + r.message;
  }
  return "";
}

// Buffer lists are solved by best_fit; pinned offsets and alignment must
// hold and the solution must replay as a one-pool spec plan.
inline std::string checkCsv(std::string_view bytes) {
  BufferList list;
  try {
    list = readMiniMallocCsv(bytes, "fuzz.csv");
  } catch (const InputError&) {
    return "";
  }
  const PoolProblem& problem = list.problem;
  if (problem.buffers.size() > kMaxTensors) return "";
  PoolSolution solution;
  try {
    solution = makeAlgorithm("best_fit")->solve(problem, smallEffort());
  } catch (const PlanError&) {
    return "";
  } catch (const InputError&) {
    return "";
  }
  if (solution.offsets.size() != problem.buffers.size()) return "best_fit: offsets missing";
  GraphPlan plan;
  plan.bufsizes = {0, solution.size};
  PoolInfo pool;
  pool.mem_id = 1;
  pool.reserved = problem.reserved;
  plan.pools.push_back(pool);
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    const Offset off = solution.offsets[i];
    if (b.fixed_offset && *b.fixed_offset != off) return "best_fit moved a pinned offset";
    if (b.alignment > 1 && off % b.alignment != 0) return "best_fit: misaligned offset";
    Spec s;
    s.id = static_cast<SpecId>(i);
    s.name = b.name;
    s.nbytes = b.size;
    s.first = b.start;
    s.last = b.end - 1;  // half-open -> closed
    s.alignment = b.alignment;
    s.planned = true;
    plan.specs.specs.push_back(s);
    plan.allocations.push_back({s.id, 1, 0, off, b.size});
  }
  const ReplayResult r = replaySpecs(plan, smallReplay());
  if (!r.ok()) return "replay rejected a plan: " + r.message;
  return "";
}

// ExecuTorch programs: the file's own plan is checked (any verdict, no
// crash); memplan's plan must verify and replay; written back, the program
// must read back (the writer's own check may refuse a hostile layout).
inline std::string checkPte(std::string_view bytes) {
  PteProgram p;
  try {
    p = readPte(std::string(bytes), "fuzz.pte");
  } catch (const InputError&) {
    return "";
  }
  std::size_t nodes = 0;
  for (const Graph& g : p.model.graphs) nodes += g.nodes.size();
  if (p.model.tensors.size() > kMaxTensors || nodes > kMaxNodes) return "";
  const Plan embedded = embeddedPlan(p);
  (void)verifyPte(p, embedded, true);
  (void)replayPte(p, embedded, smallReplay());
  try {  // lists every field: stricter than reading, may refuse what reads
    (void)describePte(bytes, "fuzz.pte", true);
  } catch (const InputError&) {
  }
  PlanRequest request;
  request.algorithm = "best_fit";
  request.params = smallEffort();
  Plan plan;
  try {
    plan = planPte(p, request);
  } catch (const InputError&) {
    return "";
  } catch (const PlanError&) {
    return "";
  }
  const VerifyResult v = verifyPte(p, plan);
  if (!v.ok()) return "verifier rejected memplan's plan: " + v.violations[0].message;
  const ReplayResult r = replayPte(p, plan, smallReplay());
  if (!r.ok()) return "replay rejected memplan's plan: " + r.message;
  std::string written;
  try {
    written = writePte(p, plan);
  } catch (const InputError&) {
    return "";
  } catch (const PlanError&) {
    return "";
  }
  try {
    const PteProgram back = readPte(written, "rewritten.pte");
    if (back.methods.size() != p.methods.size()) return "writer: the methods changed";
  } catch (const InputError& e) {
    return std::string("writer: the written program does not read: ") + e.what();
  }
  return "";
}

}  // namespace memplan::fuzz

// Shared by the libFuzzer targets: whatever a reader accepts must plan,
// verify and replay cleanly; only InputError/PlanError may stop it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "memplan/plan.h"
#include "memplan/replay.h"
#include "memplan/verify.h"

namespace memplan::fuzz {

// Small limits keep each input fast: the readers are the target here.
inline constexpr std::size_t kMaxTensors = 4096;
inline constexpr std::size_t kMaxNodes = 4096;

[[noreturn]] inline void bug(const char* what, const std::string& detail) {
  std::fprintf(stderr, "memplan fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

inline AlgorithmParams smallEffort() {
  AlgorithmParams p;
  p.effort = 0.01;
  return p;
}

// Plans a model that a reader accepted with a fast algorithm and checks the
// plan twice: verifier and replay.
inline void planAndCheck(const Model& model) {
  std::size_t nodes = 0;
  for (const Graph& g : model.graphs) nodes += g.nodes.size();
  if (model.tensors.size() > kMaxTensors || nodes > kMaxNodes) return;
  PlanRequest request;
  request.algorithm = "best_fit";
  request.params = smallEffort();
  Plan plan;
  try {
    plan = planModel(model, request);
  } catch (const InputError&) {
    return;
  } catch (const PlanError&) {
    return;
  }
  const VerifyResult v = verifyPlan(plan, 1);
  if (!v.ok()) bug("verifier rejected a plan", v.violations[0].message);
  ReplayOptions o;
  o.max_dense_bytes = std::uint64_t{64} << 20;
  const ReplayResult r = replayPlan(model, plan, o);
  if (!r.ok()) bug("replay rejected a plan", r.message);
}

inline std::string_view asText(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace memplan::fuzz

// A user's program against the installed memplan: builds a small graph,
// plans it, verifies the plan and checks the exact arena. Also calls the
// model readers, so the link pulls in what they need (ONNX, protobuf).
#include <memplan/graph.h>
#include <memplan/import.h>
#include <memplan/plan.h>
#include <memplan/verify.h>

#include <cstdio>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "consumer: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

// x -> a -> b -> y, float32 tensors of 1000, 2000, 3000 and 4000 bytes:
// the largest pair alive together is (b, y): 3008 + 4000 with 16-byte
// alignment, so the best arena is 7008 bytes.
memplan::Model chain() {
  memplan::Model m;
  m.name = "chain";
  m.graphs.resize(1);
  memplan::Graph& g = m.graphs[0];
  g.name = "main";
  const char* names[] = {"x", "a", "b", "y"};
  for (int i = 0; i < 4; ++i) {
    memplan::Tensor t;
    t.name = names[i];
    t.dtype = memplan::DType::Float32;
    t.shape = {250 * (i + 1)};
    t.nbytes = *memplan::denseBytes(t.shape, t.dtype);
    m.tensors.push_back(t);
  }
  g.inputs = {0};
  g.outputs = {3};
  for (int i = 0; i < 3; ++i) {
    memplan::Node n;
    n.name = "op" + std::to_string(i);
    n.op = "Relu";
    n.inputs = {i};
    n.outputs = {i + 1};
    g.nodes.push_back(n);
  }
  return m;
}

}  // namespace

int main() {
  const memplan::Model model = chain();
  memplan::validateModel(model);
  memplan::PlanRequest request;  // "auto", defaults
  const memplan::Plan plan = memplan::planModel(model, request);
  const memplan::GraphPlan& main = plan.main();
  check(main.bufsizes.size() == 2, "one pool");
  check(main.bufsizes.size() == 2 && main.bufsizes[1] == 7008,
        "arena of 7008 bytes, got " + std::to_string(main.bufsizes.size() > 1 ? main.bufsizes[1] : 0));
  check(main.allocations.size() == 4, "four allocations");
  check(!main.pools.empty() && main.pools[0].lower_bound == 7008, "lower bound 7008");
  const memplan::VerifyResult verdict = memplan::verifyPlan(plan);
  check(verdict.ok() && verdict.checked_allocations == 4, "the verifier accepts the plan");

  // A plan the verifier must refuse: b moved onto y.
  memplan::Plan broken = plan;
  const memplan::Allocation* y = broken.graphs[0].find(broken.graphs[0].specs.tensor_spec[3]);
  for (auto& a : broken.graphs[0].allocations)
    if (y && a.spec == broken.graphs[0].specs.tensor_spec[2]) a.offset = y->offset;
  check(!memplan::verifyPlan(broken).ok(), "the verifier refuses overlapping tensors");

  // The model readers reject garbage with InputError.
  for (const char* kind : {"onnx", "tflite"}) {
    try {
      const std::string junk = "not a model";
      if (std::string(kind) == "onnx") memplan::importOnnx(junk, "junk.onnx", {});
      else memplan::importTflite(junk, "junk.tflite", {});
      check(false, std::string(kind) + " reader accepted junk");
    } catch (const memplan::InputError& e) {
      check(std::string(e.what()).find("junk.") == 0, std::string(kind) + " error names the file");
    }
  }
  if (failures) return 1;
  std::printf("consumer: arena %llu bytes, plan verified\n",
              static_cast<unsigned long long>(main.bufsizes[1]));
  return 0;
}

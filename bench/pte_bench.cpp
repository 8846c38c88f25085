// ExecuTorch programs at scale: builds programs of N kernel calls (each
// reads the previous result and the one four steps back; sizes vary),
// places them with ExecuTorch's greedy as the exporter would, then times
// what a user runs: read, verify the file's plan, plan again, write. Prints
// one row per size with the arenas (greedy's, memplan's, the lower bound).
//
//   pte_bench [-a ALGORITHM] [N...]   (default: auto; 1000 10000 100000 1000000)
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../tests/pte_builder.h"
#include "memplan/pte.h"

using namespace memplan;

namespace {

std::string program(std::size_t n) {
  test::PteMethodSpec m;
  std::vector<std::int32_t> t;
  std::uint64_t end = 256;  // no reuse at first: every tensor its own bytes
  t.push_back(m.tensor({64}, 1, 0));
  m.inputs = {t[0]};
  for (std::size_t i = 1; i <= n; ++i) {
    const auto elems = static_cast<std::int32_t>(16 * (1 + (i * 7919) % 64));
    t.push_back(m.tensor({elems}, 1, end));
    end += 4 * static_cast<std::uint64_t>(elems);
    const std::int32_t back = t[i >= 4 ? i - 4 : 0];
    m.kernel("aten::add", {t[i - 1], back}, {t[i]});
  }
  m.outputs = {t.back()};
  m.buffer_sizes = std::vector<std::int64_t>{0, static_cast<std::int64_t>(end)};
  test::PteProgramSpec spec;
  spec.methods.push_back(std::move(m));
  return test::buildPte(spec);
}

// CPU milliseconds (the machine may be shared: wall time is noisy).
double since(std::clock_t t0) { return 1000.0 * static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC; }

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes = {1000, 10000, 100000, 1000000};
  std::string algorithm = "auto";
  int first = 1;
  if (argc > 2 && std::string(argv[1]) == "-a") {
    algorithm = argv[2];
    first = 3;
  }
  if (argc > first) {
    sizes.clear();
    for (int i = first; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  }
  std::printf("algorithm %s; CPU milliseconds\n", algorithm.c_str());
  std::printf("%9s %10s %9s %9s %9s %9s %12s %12s %12s\n", "tensors", "file", "read ms",
              "verify ms", "plan ms", "write ms", "greedy", "memplan", "lower bound");
  for (std::size_t n : sizes) {
    // The exporter's plan: ExecuTorch's greedy on the chain's lifetimes.
    const PteProgram unplanned = readPte(program(n), "bench.pte");
    PlanRequest greedy;
    greedy.algorithm = "greedy";
    const std::string file = writePte(unplanned, planPte(unplanned, greedy));

    auto t0 = std::clock();
    const PteProgram p = readPte(file, "bench.pte");
    const double read_ms = since(t0);
    t0 = std::clock();
    const Plan embedded = embeddedPlan(p);
    const bool ok = verifyPte(p, embedded, true).ok();
    const double verify_ms = since(t0);
    t0 = std::clock();
    PlanRequest request;
    request.algorithm = algorithm;
    const Plan plan = planPte(p, request);
    const double plan_ms = since(t0);
    t0 = std::clock();
    const std::string out = writePte(p, plan);
    const double write_ms = since(t0);
    std::printf("%9zu %9.1fM %9.1f %9.1f %9.1f %9.1f %12llu %12llu %12llu%s\n", n + 1,
                static_cast<double>(file.size()) / 1e6, read_ms, verify_ms, plan_ms, write_ms,
                static_cast<unsigned long long>(p.methods[0].buffer_sizes[1]),
                static_cast<unsigned long long>(plan.graphs[0].bufsizes[1]),
                static_cast<unsigned long long>(plan.graphs[0].pools[0].lower_bound),
                ok ? "" : "  (file's plan fails verification)");
  }
  return 0;
}

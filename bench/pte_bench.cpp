// ExecuTorch programs at scale: builds programs of N kernel calls (each
// reads the previous result and the one four steps back; sizes vary),
// places them with ExecuTorch's greedy as the exporter would, then times
// what a user runs: read, verify the file's plan, plan again, write. Prints
// one row per size with the arenas (greedy's, memplan's, the lower bound).
// With --cond the middle third of the calls is a torch.cond laid out as
// ExecuTorch emits it (two branches of a sixth each, a move per branch),
// which the reader analyses path by path.
//
//   pte_bench [-a ALGORITHM] [--cond] [N...]   (default: auto; 1000 10000 100000 1000000)
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../tests/pte_builder.h"
#include "memplan/pte.h"

using namespace memplan;

namespace {

std::string program(std::size_t n, bool cond) {
  test::PteMethodSpec m;
  std::vector<std::int32_t> t;
  std::uint64_t end = 256;  // no reuse at first: every tensor its own bytes
  t.push_back(m.tensor({64}, 1, 0));
  m.inputs = {t[0]};
  const auto fresh = [&](std::size_t i) {
    const auto elems = static_cast<std::int32_t>(16 * (1 + (i * 7919) % 64));
    t.push_back(m.tensor({elems}, 1, end));
    end += 4 * static_cast<std::uint64_t>(elems);
    return t.back();
  };
  // Calls [first, last]: each reads the previous result and the one four
  // back (not before `floor`, where a branch starts).
  const auto calls = [&](std::size_t first, std::size_t last, std::size_t floor) {
    for (std::size_t i = first; i <= last; ++i) {
      const std::size_t prev = t.size() - 1;
      const std::int32_t back = t[prev >= floor + 3 ? prev - 3 : floor];
      const std::int32_t before = t[prev];
      m.kernel("aten::add", {before, back}, {fresh(i)});
    }
  };
  if (!cond || n < 12) {
    calls(1, n, 0);
  } else {
    const std::size_t a = n / 3, b = n / 2, c = 2 * n / 3;
    calls(1, a, 0);
    const std::size_t split = t.size() - 1;
    const std::int32_t pred = m.tensor({}, 1, end, 11);
    end += 16;
    const std::int32_t result = m.tensor({64}, 1, end);
    end += 256;
    const std::int32_t skip = m.boolean(false);
    m.kernel("aten::gt", {t[split]}, {pred});
    const auto jump_false = static_cast<std::int32_t>(m.instructions.size());
    m.jump(pred, 0);  // destination set below
    calls(a + 1, b, split);
    m.kernel("aten::relu", {t.back()}, {fresh(b)});
    m.move(t.back(), result);
    const auto jump_over = static_cast<std::int32_t>(m.instructions.size());
    m.jump(skip, 0);
    m.instructions[static_cast<std::size_t>(jump_false)].b = static_cast<std::int32_t>(m.instructions.size());
    t.push_back(t[split]);
    calls(b + 1, c, t.size() - 1);
    m.kernel("aten::neg", {t.back()}, {fresh(c)});
    m.move(t.back(), result);
    m.instructions[static_cast<std::size_t>(jump_over)].b = static_cast<std::int32_t>(m.instructions.size());
    t.push_back(result);
    calls(c + 1, n, t.size() - 1);
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
  bool cond = false;
  int first = 1;
  for (bool more = true; more;) {
    more = false;
    if (argc > first + 1 && std::string(argv[first]) == "-a") {
      algorithm = argv[first + 1];
      first += 2;
      more = true;
    } else if (argc > first && std::string(argv[first]) == "--cond") {
      cond = true;
      ++first;
      more = true;
    }
  }
  if (argc > first) {
    sizes.clear();
    for (int i = first; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  }
  std::printf("algorithm %s%s; CPU milliseconds\n", algorithm.c_str(), cond ? "; a torch.cond in the middle" : "");
  std::printf("%9s %10s %9s %9s %9s %9s %12s %12s %12s\n", "tensors", "file", "read ms",
              "verify ms", "plan ms", "write ms", "greedy", "memplan", "lower bound");
  for (std::size_t n : sizes) {
    // The exporter's plan: ExecuTorch's greedy on the chain's lifetimes.
    const PteProgram unplanned = readPte(program(n, cond), "bench.pte");
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

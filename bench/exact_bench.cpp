// Exact search on the MiniMalloc challenging instances and real traces.
// Prints one row per instance: buffers, lower bound, the starting height
// (best-fit), the height reached, whether it is proven optimal, search
// nodes, wall and CPU seconds of exact search and wall seconds of the
// starting heuristic.
//
//   exact_bench [node_limit] [file...]   (default: the benchmark lists in tests/data)
#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "algorithms/exact_search.h"
#include "algorithms/pool_util.h"
#include "memplan/algorithm.h"
#include "memplan/io.h"

namespace fs = std::filesystem;
using namespace memplan;

namespace {

// Quick upper bound: best fit by size, lowest gap.
std::vector<Offset> quickPlacement(const PoolProblem& p) {
  std::vector<std::size_t> order(p.buffers.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return p.buffers[a].size != p.buffers[b].size ? p.buffers[a].size > p.buffers[b].size
                                                  : a < b;
  });
  std::vector<Offset> off(p.buffers.size(), 0);
  std::vector<std::size_t> placed;
  std::vector<std::pair<Offset, Offset>> busy;
  for (std::size_t b : order) {
    busy.clear();
    for (std::size_t o : placed)
      if (p.buffers[b].overlaps(p.buffers[o])) busy.push_back({off[o], off[o] + p.buffers[o].size});
    std::sort(busy.begin(), busy.end());
    Offset x = 0;
    for (const auto& [lo, hi] : busy) {
      if (x + p.buffers[b].size <= lo) break;
      x = std::max(x, hi);
    }
    off[b] = x;
    placed.push_back(b);
  }
  return off;
}

}  // namespace

int main(int argc, char** argv) {
  exact::ExactParams params;
  int first_file = 1;
  if (argc > 1 && std::isdigit(static_cast<unsigned char>(argv[1][0]))) {
    params.node_limit = std::strtoull(argv[1], nullptr, 10);
    first_file = 2;
  }
  if (const char* v = std::getenv("EXACT_UNALLOCATED_FLOOR")) params.unallocated_floor = v[0] == '1';
  if (const char* v = std::getenv("EXACT_JITTER")) params.restart_jitter = std::atof(v);
  std::vector<fs::path> files;
  for (int i = first_file; i < argc; ++i) files.emplace_back(argv[i]);
  if (files.empty()) {
    const fs::path data = MEMPLAN_DATA_DIR;
    for (const char* c : {"A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K"})
      files.push_back(data / "minimalloc-challenging" / (std::string(c) + ".1048576.csv"));
    files.push_back(data / "traces/resnet50.csv");
    files.push_back(data / "traces/G_1.csv");
  }
  std::printf("%-22s %7s %14s %14s %14s %7s %10s %8s %8s %8s\n", "instance", "buffers", "LB",
              "start height", "height", "proven", "nodes", "seconds", "cpu s", "start s");
  for (const fs::path& f : files) {
    if (!fs::exists(f)) {
      std::printf("%-22s missing\n", f.filename().c_str());
      continue;
    }
    const BufferList list = readMiniMallocCsv(readFile(f), f.string());
    const PoolProblem& p = list.problem;
    // Incumbent: the registered best-fit heuristic when present.
    const auto t_start = std::chrono::steady_clock::now();
    std::vector<Offset> start;
    if (const auto bf = makeAlgorithm("best_fit")) {
      start = bf->solve(p, {}).offsets;
    } else {
      start = quickPlacement(p);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    const double start_secs = std::chrono::duration<double>(t0 - t_start).count();
    const Bytes lb = lowerBound(p);
    const exact::ExactResult r = exact::minimizeHeight(p, start, lb, params);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // CPU seconds too: on a shared machine the wall clock also counts
    // other processes' time slices.
    const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    const std::string err = pool::checkPlacement(p, r.offsets);
    std::printf("%-22s %7zu %14llu %14llu %14llu %7s %10llu %8.3f %8.3f %8.3f%s%s\n",
                f.filename().c_str(), p.buffers.size(), static_cast<unsigned long long>(lb),
                static_cast<unsigned long long>(pool::placementHeight(p, start)),
                static_cast<unsigned long long>(r.height), r.proven_optimal ? "yes" : "no",
                static_cast<unsigned long long>(r.nodes), secs, cpu, start_secs,
                err.empty() ? "" : "  INVALID: ", err.c_str());
    std::fflush(stdout);
  }
  return 0;
}

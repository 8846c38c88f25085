// The MiniMalloc benchmark: the eleven challenging instances and the real
// traces (tests/data), planned as the CLI plans them (default: "auto" at
// default settings). Prints a markdown table: buffers, lower bound, height,
// ratio, the proven lower bound, proven optimal or not, wall and CPU
// seconds; then the total time. Every plan is checked independently.
//
//   exact_bench [--algorithm NAME] [--effort X] [--time-limit S]
//               [--capacity C] [file...]
//
// --capacity C runs the decision search alone (exact::solveWithinCapacity)
// at that capacity, as MiniMalloc runs: found / infeasible / undecided and
// its time (node limit scaled by --effort).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "algorithms/exact_search.h"
#include "algorithms/pool_util.h"
#include "memplan/algorithm.h"
#include "memplan/io.h"

namespace fs = std::filesystem;
using namespace memplan;

namespace {

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace

int main(int argc, char** argv) {
  std::string algorithm = "auto";
  AlgorithmParams params;
  std::optional<Bytes> capacity;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--algorithm") && i + 1 < argc) algorithm = argv[++i];
    else if (!std::strcmp(argv[i], "--effort") && i + 1 < argc) params.effort = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--time-limit") && i + 1 < argc)
      params.time_limit_seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--capacity") && i + 1 < argc)
      capacity = std::strtoull(argv[++i], nullptr, 10);
    else if (argv[i][0] == '-') {
      std::fprintf(stderr,
                   "usage: exact_bench [--algorithm A] [--effort X] [--time-limit S] "
                   "[--capacity C] [file...]\n");
      return 2;
    } else {
      files.emplace_back(argv[i]);
    }
  }
  if (files.empty()) {
    const fs::path data = MEMPLAN_DATA_DIR;
    for (const char* c : {"A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K"})
      files.push_back(data / "minimalloc-challenging" / (std::string(c) + ".1048576.csv"));
    for (const char* t : {"resnet50", "G_1", "S_1"})
      files.push_back(data / "traces" / (std::string(t) + ".csv"));
  }
  const auto algo = makeAlgorithm(algorithm);
  if (!algo) {
    std::fprintf(stderr, "unknown algorithm %s\n", algorithm.c_str());
    return 2;
  }
  if (capacity)
    fmt::print("| instance | buffers | capacity | result | nodes | wall s | cpu s |\n"
               "|---|---:|---:|---|---:|---:|---:|\n");
  else
    fmt::print("| instance | buffers | LB | {} | / LB | proven bound | optimal | wall s | cpu s |\n"
               "|---|---:|---:|---:|---:|---:|---|---:|---:|\n",
               algorithm);
  double total_wall = 0, total_cpu = 0;
  int bad = 0;
  for (const fs::path& f : files) {
    if (!fs::exists(f)) {
      fmt::print("| {} | missing |\n", f.filename().string());
      continue;
    }
    const BufferList list = readMiniMallocCsv(readFile(f), f.string());
    const PoolProblem& p = list.problem;
    const std::string name = f.stem().string();
    const double c0 = cpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    if (capacity) {
      exact::ExactParams ep;
      ep.node_limit = static_cast<std::uint64_t>(params.effort * static_cast<double>(ep.node_limit));
      ep.time_limit_seconds = params.time_limit_seconds;
      const exact::ExactResult r = exact::solveWithinCapacity(p, *capacity, ep);
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double cpu = cpuSeconds() - c0;
      total_wall += wall;
      total_cpu += cpu;
      std::string result = r.found ? fmt::format("fits, height {}", r.height)
                           : r.proven_infeasible ? std::string("infeasible")
                                                 : std::string("undecided");
      if (r.found && !pool::checkPlacement(p, r.offsets).empty()) {
        result += " INVALID";
        ++bad;
      }
      fmt::print("| {} | {} | {} | {} | {} | {:.3f} | {:.3f} |\n", name, p.buffers.size(),
                 *capacity, result, r.nodes, wall, cpu);
    } else {
      const PoolSolution s = algo->solve(p, params);
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double cpu = cpuSeconds() - c0;
      total_wall += wall;
      total_cpu += cpu;
      const Bytes lb = lowerBound(p);
      const std::string err = pool::checkPlacement(p, s.offsets);
      if (!err.empty()) {
        ++bad;
        std::fprintf(stderr, "INVALID %s: %s\n", name.c_str(), err.c_str());
      }
      fmt::print("| {} | {} | {} | {}{} | {:.4f} | {} | {} | {:.3f} | {:.3f} |\n", name,
                 p.buffers.size(), lb, s.size, err.empty() ? "" : " INVALID",
                 static_cast<double>(s.size) / static_cast<double>(std::max<Bytes>(1, lb)),
                 s.lower_bound, s.proven_optimal ? "yes" : "no", wall, cpu);
    }
    std::fflush(stdout);
  }
  fmt::print("\nTotal: {:.2f} s wall, {:.2f} s CPU\n", total_wall, total_cpu);
  return bad ? 1 : 0;
}

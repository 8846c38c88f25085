// Planning at scale: synthetic lists of 10k to 1M buffers (bench/synthetic.h).
// Kinds: "sparse" (logUniform: sizes 64 B..1 MiB, lengths 1..1000 steps,
// ~145 live at once), "dense" (dense: ~1,600 live, sizes 16 B..16 MiB,
// short and long lifetimes, like training traces), "dense10k" (~10,000
// live), and issue 27's small hostile lists: "stairs" (buffer i lives
// [i, i + n/2)), "stairs200" (width 200) and "random" (random intervals,
// ~n/8 live). Prints a markdown table: per kind, size and algorithm the height
// against the lower bound, wall and CPU seconds and peak RSS, then the
// growth exponent of each algorithm's CPU time between consecutive sizes.
//
//   scale [--kinds sparse,dense,dense10k,stairs,stairs200,random]
//         [--sizes 10000,100000,1000000]
//         [--algorithms auto,best_fit,...] [--seed S]
//
// Every (size, algorithm) runs in its own child process, so the peak RSS is
// that run's alone (list generation included).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "algorithms/pool_util.h"
#include "synthetic.h"

namespace {

using namespace memplan;

struct Row {
  Bytes lb = 0, height = 0;
  std::size_t live = 0;
  std::uint64_t work = 0;
  double wall = 0, cpu = 0, rss_mb = 0;
  bool valid = false;
};

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

PoolProblem makeList(const std::string& kind, std::size_t n, std::uint64_t seed) {
  if (kind == "dense") return bench::dense(n, 1600, seed);
  if (kind == "dense10k") return bench::dense(n, 10000, seed);
  if (kind == "stairs") return bench::stairs(n, n / 2);
  if (kind == "stairs200") return bench::stairs(n, 200);
  if (kind == "random") return bench::randomIntervals(n, seed);
  return bench::logUniform(n, seed);
}

Row runChild(const std::string& kind, std::size_t n, const std::string& algorithm,
             std::uint64_t seed) {
  int fd[2];
  if (pipe(fd) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    Row r;
    const PoolProblem p = makeList(kind, n, seed);
    r.lb = lowerBound(p);
    r.live = bench::maxLive(p);
    auto algo = makeAlgorithm(algorithm);
    if (algo) {
      const double c0 = cpuSeconds();
      const auto t0 = std::chrono::steady_clock::now();
      const PoolSolution s = algo->solve(p, {});
      r.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      r.cpu = cpuSeconds() - c0;
      r.height = s.size;
      r.work = s.work;
      r.valid = algo->info().executorch_exact || pool::checkPlacement(p, s.offsets).empty();
    }
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    r.rss_mb = static_cast<double>(u.ru_maxrss) / 1024.0;
    if (write(fd[1], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  Row r;
  if (read(fd[0], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) r = Row{};
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes = {10000, 100000, 1000000};
  std::vector<std::string> algos = {"auto", "best_fit", "first_fit", "greedy"};
  std::vector<std::string> kinds = {"sparse"};
  std::uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--sizes") && i + 1 < argc) {
      sizes.clear();
      for (const auto& s : bench::split(argv[++i])) sizes.push_back(std::stoull(s));
    } else if (!std::strcmp(argv[i], "--kinds") && i + 1 < argc) {
      kinds = bench::split(argv[++i]);
    } else if (!std::strcmp(argv[i], "--algorithms") && i + 1 < argc) {
      algos = bench::split(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
      seed = std::stoull(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: scale [--kinds sparse,dense,dense10k,stairs,stairs200,random] "
                   "[--sizes a,b] "
                   "[--algorithms x,y] [--seed S]\n");
      return 2;
    }
  }
  fmt::print("| list | buffers | most live | LB | algorithm | height | / LB | work units | wall s | "
             "cpu s | peak RSS MB |\n");
  fmt::print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
  std::map<std::string, std::vector<std::pair<std::size_t, double>>> cpu;
  int bad = 0;
  for (const auto& kind : kinds) {
    for (std::size_t n : sizes) {
      for (const auto& a : algos) {
        const Row r = runChild(kind, n, a, seed);
        if (!r.valid) ++bad;
        fmt::print("| {} | {} | {} | {} | {} | {}{} | {:.4f} | {} | {:.3f} | {:.3f} | {:.0f} |\n",
                   kind, n, r.live, r.lb, a, r.height, r.valid ? "" : " INVALID",
                   r.lb ? static_cast<double>(r.height) / static_cast<double>(r.lb) : 0.0, r.work,
                   r.wall, r.cpu, r.rss_mb);
        std::fflush(stdout);
        cpu[kind + " " + a].emplace_back(n, r.cpu);
      }
    }
  }
  fmt::print("\nGrowth exponent of CPU time (log ratio of times / log ratio of sizes):\n\n");
  for (const auto& [a, pts] : cpu)
    for (std::size_t k = 1; k < pts.size(); ++k)
      if (pts[k - 1].second > 0 && pts[k].second > 0)
        fmt::print("- {} {}->{}: n^{:.2f}\n", a, pts[k - 1].first, pts[k].first,
                   std::log(pts[k].second / pts[k - 1].second) /
                       std::log(static_cast<double>(pts[k].first) /
                                static_cast<double>(pts[k - 1].first)));
  return bad ? 1 : 0;
}

// The default command on dense lists (docs/benchmarks.md, "Dense lists"):
// `memplan plan LIST.csv` as a user runs it, on lists written as MiniMalloc
// CSV, against ExecuTorch's greedy (`-a greedy`) on the same file.
// Generators (bench/synthetic.h):
//   dense       bench::dense: ~1,600 live, sizes 16 B..16 MiB, short and long
//               lifetimes mixed (bench/scale's dense lists)
//   loguniform  bench::logUniformDense: ~1,600 live, sizes 64 B..1 MiB and
//               lengths 1..1,000 steps, both log-uniform
//   trace:NAME  bench::resampled from tests/data/traces/NAME.csv
// Each run is its own process (CPU time user + system and peak RSS from
// wait4); the height is read back from the plan the run wrote, which is
// checked with the independent placement check. Lists are
// generated and plans read in child processes, so a run's peak RSS is its
// own.
//
//   dense_lists --memplan PATH [--generators dense,loguniform,trace:S_1]
//               [--sizes 1000,10000,100000,1000000] [--algorithms auto,greedy]
//               [--dir DIR] [--seed S]

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "memplan/algorithm.h"
#include "memplan/io.h"
#include "process.h"
#include "synthetic.h"

namespace {

using namespace memplan;

PoolProblem makeList(const std::string& gen, std::size_t n, std::uint64_t seed) {
  if (gen == "dense") return bench::dense(n, 1600, seed);
  if (gen == "loguniform") return bench::logUniformDense(n, 1600, seed);
  if (gen.rfind("trace:", 0) == 0) {
    const std::filesystem::path f =
        std::filesystem::path(MEMPLAN_DATA_DIR) / "traces" / (gen.substr(6) + ".csv");
    return bench::resampled(readMiniMallocCsv(readFile(f), f.string()).problem, n, seed);
  }
  throw std::runtime_error("unknown generator " + gen);
}

struct ListFacts {
  Bytes lb = 0;
  std::size_t live = 0;
  bool ok = false;
};

// Writes the list to `file` (in a child process) and returns its lower
// bound, as read back the way the command reads it (the CSV's alignment is
// 1), and the most buffers live at once.
ListFacts writeList(const std::string& gen, std::size_t n, std::uint64_t seed,
                    const std::string& file) {
  return bench::inChild([&] {
    ListFacts facts;
    const PoolProblem p = makeList(gen, n, seed);
    BufferList list;
    list.problem = p;
    for (std::size_t i = 0; i < p.buffers.size(); ++i) list.ids.push_back(std::to_string(i));
    const std::string text = writeMiniMallocCsv(list, {});
    std::FILE* f = std::fopen(file.c_str(), "wb");
    if (f && std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fclose(f) == 0) {
      facts.lb = lowerBound(readMiniMallocCsv(readFile(file), file).problem);
      facts.live = bench::maxLive(p);
      facts.ok = true;
    }
    return facts;
  });
}

struct Run {
  double cpu = 0, rss_mb = 0;
  Bytes height = 0;
  bool ok = false;
};

Run run(const std::string& memplan, const std::string& list, const std::string& algorithm,
        const std::string& out) {
  Run r;
  const bench::Measured m =
      bench::spawnMeasured({memplan, "plan", list, "-a", algorithm, "-q", "-o", out});
  if (!m.exited_ok) return r;
  r.cpu = m.cpu;
  r.rss_mb = m.rss_mb;
  const bench::ReadBack plan = bench::readBack(list, out);
  r.height = plan.height;
  r.ok = plan.ok;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes = {1000, 10000, 100000, 1000000};
  std::vector<std::string> gens = {"dense", "loguniform", "trace:resnet101ish_train"};
  std::vector<std::string> algos = {"auto", "greedy"};
  std::string memplan, dir = std::filesystem::temp_directory_path().string();
  std::uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--memplan") memplan = argv[++i];
    else if (a == "--generators") gens = bench::split(argv[++i]);
    else if (a == "--sizes") {
      sizes.clear();
      for (const auto& s : bench::split(argv[++i])) sizes.push_back(std::stoull(s));
    } else if (a == "--algorithms") algos = bench::split(argv[++i]);
    else if (a == "--dir") dir = argv[++i];
    else if (a == "--seed") seed = std::stoull(argv[++i]);
    else {
      std::fprintf(stderr, "usage: dense_lists --memplan PATH [--generators g,..] [--sizes n,..] "
                           "[--algorithms a,..] [--dir DIR] [--seed S]\n");
      return 2;
    }
  }
  if (memplan.empty()) {
    std::fprintf(stderr, "dense_lists: --memplan PATH (the memplan command to run) is required\n");
    return 2;
  }
  fmt::print("| list | buffers | most live | algorithm | height / LB | vs greedy | CPU s | "
             "peak RSS MB |\n|---|---:|---:|---|---:|---:|---:|---:|\n");
  std::map<std::string, std::vector<std::pair<std::size_t, double>>> cpu;
  int bad = 0;
  for (const auto& gen : gens) {
    for (std::size_t n : sizes) {
      const std::string file = (std::filesystem::path(dir) / fmt::format("dense_lists_{}.csv", n)).string();
      const std::string out = (std::filesystem::path(dir) / "dense_lists_plan.csv").string();
      const ListFacts facts = writeList(gen, n, seed, file);
      if (!facts.ok) return 1;
      const Bytes lb = facts.lb;
      const std::size_t live = facts.live;
      Bytes greedy_height = 0;
      std::vector<std::pair<std::string, Run>> runs;
      for (const auto& a : algos) {
        runs.emplace_back(a, run(memplan, file, a, out));
        if (a == "greedy") greedy_height = runs.back().second.height;
      }
      for (const auto& [a, r] : runs) {
        if (!r.ok) ++bad;
        fmt::print("| {} | {} | {} | {} | {:.4f}{} | {} | {:.2f} | {:.0f} |\n", gen, n, live, a,
                   lb ? static_cast<double>(r.height) / static_cast<double>(lb) : 0.0,
                   r.ok ? "" : " FAILED",
                   greedy_height ? fmt::format("{:.4f}", static_cast<double>(r.height) /
                                                             static_cast<double>(greedy_height))
                                 : "-",
                   r.cpu, r.rss_mb);
        std::fflush(stdout);
        cpu[gen + " " + a].emplace_back(n, r.cpu);
      }
      std::filesystem::remove(file);
      std::filesystem::remove(out);
    }
  }
  fmt::print("\nGrowth exponent of CPU time (log ratio of times / log ratio of sizes):\n\n");
  for (const auto& [a, pts] : cpu) {
    std::string line = "- " + a + ":";
    for (std::size_t k = 1; k < pts.size(); ++k)
      if (pts[k - 1].second > 0 && pts[k].second > 0)
        line += fmt::format(" {}->{} n^{:.2f}", pts[k - 1].first, pts[k].first,
                            std::log(pts[k].second / pts[k - 1].second) /
                                std::log(static_cast<double>(pts[k].first) /
                                         static_cast<double>(pts[k - 1].first)));
    fmt::print("{}\n", line);
  }
  return bad ? 1 : 0;
}

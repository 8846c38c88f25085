// The default command beside its peers, in one run (docs/benchmarks.md,
// "Issue 28's targets, measured in one run"): for each buffer list (MiniMalloc CSV),
// `memplan plan LIST.csv` (auto), ExecuTorch's greedy (`-a greedy`) and,
// when given, Google's MiniMalloc solver told auto's height as its
// capacity (MiniMalloc decides whether a capacity is enough; it does not
// minimize), each its own process: height / lower bound, CPU seconds (user
// + system) and peak RSS from wait4. Every plan read back is checked with
// the independent placement check; MiniMalloc runs past --timeout seconds
// of wall time are killed and reported as such.
//
//   peers --memplan PATH [--minimalloc PATH] [--timeout S] [--dir DIR] LIST.csv...
//
// MiniMalloc's command line: --capacity=C --input=LIST --output=OUT.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "memplan/algorithm.h"
#include "memplan/io.h"
#include "process.h"

namespace {

using namespace memplan;
namespace fs = std::filesystem;

// What a child process read of a list: plain data (bench::inChild), so
// that this process never holds a list and the runs' peak RSS is their own.
struct ListFacts {
  std::size_t buffers = 0;
  Bytes lb = 0;
};
struct Run {
  bench::Measured m;
  bench::ReadBack plan;
};

Run run(const std::vector<std::string>& args, const std::string& file, const std::string& out,
        double timeout = 0) {
  std::filesystem::remove(out);
  Run r;
  r.m = bench::spawnMeasured(args, timeout);
  if (r.m.exited_ok) r.plan = bench::readBack(file, out);
  else if (!r.m.timed_out) std::snprintf(r.plan.error, sizeof r.plan.error, "did not exit 0");
  return r;
}

std::string cell(const Run& r, Bytes lb) {
  if (r.m.timed_out) return fmt::format("none in time | {:.1f} | {:.0f}", r.m.cpu, r.m.rss_mb);
  if (!r.plan.ok) return fmt::format("FAILED ({}) | - | -", r.plan.error);
  return fmt::format("{:.5f} | {:.2f} | {:.0f}",
                     static_cast<double>(r.plan.height) / static_cast<double>(lb), r.m.cpu,
                     r.m.rss_mb);
}

}  // namespace

int main(int argc, char** argv) {
  std::string memplan, minimalloc, dir = fs::temp_directory_path().string();
  double timeout = 60;
  std::vector<std::string> lists;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool option = a.rfind("--", 0) == 0;
    if (option && i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--memplan") memplan = argv[++i];
    else if (a == "--minimalloc") minimalloc = argv[++i];
    else if (a == "--timeout") timeout = std::stod(argv[++i]);
    else if (a == "--dir") dir = argv[++i];
    else if (option) {
      std::fprintf(stderr, "usage: peers --memplan PATH [--minimalloc PATH] [--timeout S] "
                           "[--dir DIR] LIST.csv...\n");
      return 2;
    } else lists.push_back(a);
  }
  if (memplan.empty() || lists.empty()) {
    std::fprintf(stderr, "peers: --memplan PATH and at least one LIST.csv are required\n");
    return 2;
  }
  const std::string out = (fs::path(dir) / "peers_plan.csv").string();
  fmt::print("| list | buffers | lower bound | auto | auto / LB | CPU s | RSS MB | greedy / LB | CPU s | "
             "RSS MB |{}\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|{}\n",
             minimalloc.empty() ? "" : " MiniMalloc at auto's height | CPU s | RSS MB |",
             minimalloc.empty() ? "" : "---|---:|---:|");
  int bad = 0;
  double totals[3] = {0, 0, 0};
  for (const auto& file : lists) {
    const ListFacts facts = bench::inChild([&] {
      const PoolProblem list = readMiniMallocCsv(readFile(file), file).problem;
      return ListFacts{list.buffers.size(), std::max<Bytes>(1, lowerBound(list))};
    });
    if (!facts.buffers) {
      std::fprintf(stderr, "peers: cannot read %s\n", file.c_str());
      return 2;
    }
    const Run a = run({memplan, "plan", file, "-q", "-o", out}, file, out);
    const Run g = run({memplan, "plan", file, "-a", "greedy", "-q", "-o", out}, file, out);
    bad += !a.plan.ok + !g.plan.ok;
    totals[0] += a.m.cpu;
    totals[1] += g.m.cpu;
    std::string mm;
    if (!minimalloc.empty() && a.plan.ok) {
      Run m = run({minimalloc, fmt::format("--capacity={}", a.plan.height), "--input=" + file,
                   "--output=" + out},
                  file, out, timeout);
      if (m.plan.ok && m.plan.height > a.plan.height) {
        m.plan.ok = false;
        std::snprintf(m.plan.error, sizeof m.plan.error, "above its capacity");
      }
      totals[2] += m.m.cpu;
      mm = " " + cell(m, facts.lb) + " |";
    }
    fmt::print("| {} | {} | {} | {} | {} | {} |{}\n", fs::path(file).stem().string(),
               facts.buffers, facts.lb, a.plan.height, cell(a, facts.lb), cell(g, facts.lb), mm);
    std::fflush(stdout);
  }
  fmt::print("\nCPU seconds in total: auto {:.1f}, greedy {:.1f}{}\n", totals[0], totals[1],
             minimalloc.empty() ? "" : fmt::format(", MiniMalloc {:.1f}", totals[2]));
  fs::remove(out);
  return bad ? 1 : 0;
}

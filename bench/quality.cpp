// Plan quality: a markdown table of heights against the lower bound, over
// the MiniMalloc benchmark lists and real traces (tests/data) and
// synthetic model-like lists.
//
//   quality [--filter SUBSTRING] [--effort X] [--algorithms a,b,...]
//
// The first listed algorithm (default "auto") gets the time and "proven"
// columns; every plan is checked with an independent placement check.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "algorithms/pool_util.h"
#include "memplan/io.h"
#include "synthetic.h"

namespace {

using namespace memplan;

struct Instance {
  std::string name;
  PoolProblem problem;
};

std::vector<Instance> instances(const std::string& filter) {
  std::vector<Instance> out;
  auto want = [&](const std::string& n) { return filter.empty() || n.find(filter) != std::string::npos; };
  const std::filesystem::path data = MEMPLAN_DATA_DIR;
  for (const char* dir : {"minimalloc-challenging", "traces"}) {
    std::vector<std::filesystem::path> files;
    if (!std::filesystem::exists(data / dir)) continue;
    for (const auto& e : std::filesystem::directory_iterator(data / dir))
      if (e.path().extension() == ".csv") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      const std::string name = std::string(dir) + "/" + f.stem().string();
      if (!want(name)) continue;
      auto list = readMiniMallocCsv(readFile(f), f.filename().string());
      out.push_back({name, std::move(list.problem)});
    }
  }
  auto add = [&](std::string name, PoolProblem p) {
    if (want(name)) out.push_back({std::move(name), std::move(p)});
  };
  add("synthetic/transformer-7b-like-decode", bench::transformer(32, 2048, 4096, 32, 1));
  add("synthetic/transformer-small-prefill", bench::transformer(12, 512, 768, 12, 8));
  add("synthetic/unet-6", bench::unet(6, Bytes{1} << 22));
  add("synthetic/model-like-1k", bench::modelLike(1000, 1));
  add("synthetic/model-like-10k", bench::modelLike(10000, 2));
  add("synthetic/model-like-100k", bench::modelLike(100000, 3));
  return out;
}

// 1234567 -> "1,234,567".
std::string thousands(Bytes v) {
  char digits[32];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  std::string out;
  out.reserve(40);
  for (int i = n - 1; i >= 0; --i) {
    out.push_back(digits[i]);
    if (i > 0 && i % 3 == 0) out.push_back(',');
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string filter;
  double effort = 1.0;
  std::vector<std::string> algos = {"auto", "best_fit", "greedy"};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
    else if (!std::strcmp(argv[i], "--effort") && i + 1 < argc) effort = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--algorithms") && i + 1 < argc) {
      algos.clear();
      std::string s = argv[++i];
      for (std::size_t p = 0; p <= s.size();) {
        const std::size_t q = std::min(s.find(',', p), s.size());
        algos.push_back(s.substr(p, q - p));
        p = q + 1;
      }
    } else {
      std::fprintf(stderr, "usage: quality [--filter S] [--effort X] [--algorithms a,b]\n");
      return 2;
    }
  }
  fmt::print("| instance | buffers | LB |");
  for (const auto& a : algos) fmt::print(" {} |", a);
  fmt::print(" {0} / LB | {0} ms | proven |\n|---|---:|---:|", algos.front());
  for (std::size_t k = 0; k < algos.size(); ++k) fmt::print("---:|");
  fmt::print("---:|---:|---|\n");
  AlgorithmParams params;
  params.effort = effort;
  int bad = 0;
  for (auto& inst : instances(filter)) {
    const Bytes lb = lowerBound(inst.problem);
    fmt::print("| {} | {} | {} |", inst.name, inst.problem.buffers.size(), thousands(lb));
    double ms0 = 0;
    Bytes h0 = 0;
    bool proven0 = false;
    for (std::size_t k = 0; k < algos.size(); ++k) {
      auto algo = makeAlgorithm(algos[k]);
      if (!algo) {
        fmt::print(" n/a |");
        continue;
      }
      const auto t0 = std::chrono::steady_clock::now();
      PoolSolution s;
      try {
        s = algo->solve(inst.problem, params);
      } catch (const std::exception& e) {
        fmt::print(" error |");
        std::fprintf(stderr, "%s on %s: %s\n", algos[k].c_str(), inst.name.c_str(), e.what());
        continue;
      }
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const std::string err = algo->info().executorch_exact ? std::string()
                                                      : pool::checkPlacement(inst.problem, s.offsets);
      if (!err.empty()) {
        ++bad;
        std::fprintf(stderr, "INVALID %s on %s: %s\n", algos[k].c_str(), inst.name.c_str(), err.c_str());
      }
      fmt::print(" {}{} |", thousands(s.size), err.empty() ? "" : " INVALID");
      if (k == 0) {
        ms0 = ms;
        h0 = s.size;
        proven0 = s.proven_optimal;
      }
    }
    fmt::print(" {:.4f} | {:.1f} | {} |\n", lb ? static_cast<double>(h0) / static_cast<double>(lb) : 1.0,
               ms0, proven0 ? "yes" : "no");
    std::fflush(stdout);
  }
  return bad ? 1 : 0;
}

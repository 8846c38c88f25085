// The default command beside its peers, in one run (docs/benchmarks.md,
// "Issue 28's targets in one run"): for each buffer list (MiniMalloc CSV),
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
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "algorithms/pool_util.h"
#include "memplan/algorithm.h"
#include "memplan/io.h"

namespace {

using namespace memplan;
namespace fs = std::filesystem;

struct Run {
  double cpu = 0, rss_mb = 0;
  Bytes height = 0;
  bool ok = false;         // exited 0 and wrote a valid plan
  bool timed_out = false;
  std::string error;
};

// Runs argv to completion (or kills it after timeout_s of wall time, 0 =
// none); CPU seconds and peak RSS of the child.
Run spawn(const std::vector<std::string>& args, double timeout_s) {
  Run r;
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The peers' own output (MiniMalloc prints its time) would break the table.
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &quiet, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&quiet);
  if (spawned != 0) {
    r.error = "cannot run " + args[0];
    return r;
  }
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  rusage u{};
  for (;;) {
    const pid_t done = wait4(pid, &status, WNOHANG, &u);
    if (done == pid) break;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeout_s > 0 && waited > timeout_s && !r.timed_out) {
      kill(pid, SIGKILL);
      r.timed_out = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.cpu = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
          1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  r.rss_mb = static_cast<double>(u.ru_maxrss) / 1024.0;
  if (!r.timed_out && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    r.error = "exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return r;
}

// The height of the plan in `out` (a MiniMalloc CSV with offsets), after
// checking it places every buffer of `list` without overlap.
void readBack(const PoolProblem& list, const std::string& out, Run& r) {
  if (r.timed_out || !r.error.empty()) return;
  try {
    const BufferList plan = readMiniMallocCsv(readFile(out), out);
    if (plan.problem.buffers.size() != list.buffers.size()) throw std::runtime_error("buffer count");
    std::vector<Offset> offsets(list.buffers.size());
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      if (!plan.offsets[i]) throw std::runtime_error("buffer without an offset");
      offsets[i] = *plan.offsets[i];
      r.height = std::max(r.height, offsets[i] + list.buffers[i].size);
    }
    const std::string bad = pool::checkPlacement(list, offsets);
    if (!bad.empty()) throw std::runtime_error(bad);
    r.ok = true;
  } catch (const std::exception& e) {
    r.error = e.what();
  }
}

std::string cell(const Run& r, Bytes lb) {
  if (r.timed_out) return fmt::format("none in time | {:.1f} | {:.0f}", r.cpu, r.rss_mb);
  if (!r.ok) return fmt::format("FAILED ({}) | - | -", r.error);
  return fmt::format("{:.5f} | {:.2f} | {:.0f}",
                     static_cast<double>(r.height) / static_cast<double>(lb), r.cpu, r.rss_mb);
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
    const PoolProblem list = readMiniMallocCsv(readFile(file), file).problem;
    const Bytes lb = std::max<Bytes>(1, lowerBound(list));
    Run a = spawn({memplan, "plan", file, "-q", "-o", out}, 0);
    readBack(list, out, a);
    Run g = spawn({memplan, "plan", file, "-a", "greedy", "-q", "-o", out}, 0);
    readBack(list, out, g);
    bad += !a.ok + !g.ok;
    totals[0] += a.cpu;
    totals[1] += g.cpu;
    std::string mm;
    if (!minimalloc.empty() && a.ok) {
      fs::remove(out);
      Run m = spawn({minimalloc, fmt::format("--capacity={}", a.height), "--input=" + file,
                     "--output=" + out},
                    timeout);
      readBack(list, out, m);
      if (m.ok && m.height > a.height) m.error = "above its capacity", m.ok = false;
      totals[2] += m.cpu;
      mm = " " + cell(m, lb) + " |";
    }
    fmt::print("| {} | {} | {} | {} | {} | {} |{}\n", fs::path(file).stem().string(),
               list.buffers.size(), lb, a.height, cell(a, lb), cell(g, lb), mm);
    std::fflush(stdout);
  }
  fmt::print("\nCPU seconds in total: auto {:.1f}, greedy {:.1f}{}\n", totals[0], totals[1],
             minimalloc.empty() ? "" : fmt::format(", MiniMalloc {:.1f}", totals[2]));
  fs::remove(out);
  return bad ? 1 : 0;
}

// Memory and time of memplan's own readers at scale: graph JSON (a chain of
// N tensors, one node each, ~130 bytes of JSON a tensor), MiniMalloc CSV
// (N rows) and ExecuTorch spec lists (N specs), from 10^5 to 2*10^6. Prints a markdown table: per format
// and size the file size, the reader's CPU seconds and the memory it adds
// on top of the file's bytes (peak RSS, bytes per tensor), then the same
// for a whole `memplan plan -o plan.json` run (read, plan, verify, write;
// peak RSS with the file's bytes, per tensor). docs/reliability.md states
// the budget these numbers must stay under.
//
//   readers [--sizes 100000,500000,1000000,2000000] [--formats json,csv,spec]
//           [--algorithm best_fit] [--skip-plan]
//
// Every (format, size) runs in its own child process, so a peak RSS is that
// run's alone.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "memplan/memplan.h"

namespace {

using namespace memplan;

std::string graphJson(std::size_t n) {
  std::string s = "{\"format\":\"memplan-graph\",\"version\":1,\"tensors\":[\n";
  for (std::size_t i = 0; i < n; ++i)
    s += fmt::format("{}{{\"name\":\"t{}\",\"shape\":[1,64],\"dtype\":\"float32\"}}", i ? ",\n" : "", i);
  s += fmt::format("],\"graphs\":[{{\"name\":\"main\",\"inputs\":[\"t0\"],\"outputs\":[\"t{}\"],\"nodes\":[\n", n - 1);
  for (std::size_t i = 0; i + 1 < n; ++i)
    s += fmt::format("{}{{\"name\":\"n{}\",\"op\":\"Relu\",\"inputs\":[\"t{}\"],\"outputs\":[\"t{}\"]}}",
                     i ? ",\n" : "", i, i, i + 1);
  s += "]}]}\n";
  return s;
}

std::string specList(std::size_t n) {
  std::string s = "{\"name\":\"chain\",\"algorithm\":\"greedy\",\"alignment\":16,\"specs\":[\n";
  for (std::size_t i = 0; i < n; ++i)
    s += fmt::format("{}{{\"id\":{},\"nbytes\":{},\"lifetime\":[{},{}]}}", i ? ",\n" : "", i,
                     64 * (1 + i % 16), i, i + 1);
  return s + "]}\n";
}

std::string csv(std::size_t n) {
  std::string s = "id,lower,upper,size\n";
  for (std::size_t i = 0; i < n; ++i) s += fmt::format("b{},{},{},{}\n", i, i, i + 2, 64 * (1 + i % 16));
  return s;
}

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double peakMb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

double currentMb() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

struct Row {
  double file_mb = 0, read_cpu = 0, read_extra_mb = 0;
  double run_cpu = 0, run_peak_mb = 0;
  bool ok = false;
  char error[200] = {};
};

Row measure(const std::string& format, std::size_t n, const std::string& algorithm, bool plan_too) {
  Row r;
  std::string text = format == "json" ? graphJson(n) : format == "spec" ? specList(n) : csv(n);
  const std::string name = format == "csv" ? "chain.csv" : "chain.json";
  r.file_mb = static_cast<double>(text.size()) / (1024.0 * 1024.0);
  text.shrink_to_fit();
  try {
    const double before = currentMb();
    const double c0 = cpuSeconds();
    Input in = readInput(text, name);
    r.read_cpu = cpuSeconds() - c0;
    r.read_extra_mb = peakMb() - before;
    if (plan_too) {
      PlanRequest request;
      request.algorithm = algorithm;
      const double c1 = cpuSeconds();
      const Plan p = plan(in, request);
      const VerifyResult v = verify(in, p);
      const std::string out = writePlan(p, in);
      r.run_cpu = r.read_cpu + cpuSeconds() - c1;
      r.run_peak_mb = peakMb();
      if (!v.ok()) throw PlanError("the plan failed verification");
      if (out.empty()) throw PlanError("empty plan file");
    }
    r.ok = true;
  } catch (const std::exception& e) {
    std::snprintf(r.error, sizeof r.error, "%s", e.what());
  }
  return r;
}

Row runChild(const std::string& format, std::size_t n, const std::string& algorithm, bool plan_too) {
  int fd[2];
  if (pipe(fd) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    const Row r = measure(format, n, algorithm, plan_too);
    const ssize_t put = write(fd[1], &r, sizeof r);
    _exit(put == static_cast<ssize_t>(sizeof r) ? 0 : 1);
  }
  close(fd[1]);
  Row r;
  const ssize_t got = read(fd[0], &r, sizeof r);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != static_cast<ssize_t>(sizeof r)) std::snprintf(r.error, sizeof r.error, "child died");
  return r;
}

std::string withCommas(std::size_t n) {
  std::string s = std::to_string(n);
  for (std::size_t i = s.size(); i > 3; i -= 3) s.insert(i - 3, ",");
  return s;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes = {100000, 500000, 1000000, 2000000};
  std::vector<std::string> formats = {"json", "csv", "spec"};
  std::string algorithm = "best_fit";
  bool plan_too = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool more = i + 1 < argc;
    if (a == "--sizes" && more) {
      sizes.clear();
      for (const std::string& s : split(argv[++i])) sizes.push_back(std::stoull(s));
    } else if (a == "--formats" && more) {
      formats = split(argv[++i]);
    } else if (a == "--algorithm" && more) {
      algorithm = argv[++i];
    } else if (a == "--skip-plan") {
      plan_too = false;
    } else {
      std::fprintf(stderr, "usage: readers [--sizes N,...] [--formats json,csv,spec] [--algorithm A] [--skip-plan]\n");
      return 2;
    }
  }
  std::printf("| format | tensors | file MB | read CPU s | reader MB | reader B/tensor | plan run CPU s | "
              "plan run peak MB | plan run B/tensor |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const std::string& format : formats)
    for (std::size_t n : sizes) {
      const Row r = runChild(format, n, algorithm, plan_too);
      if (!r.ok) {
        std::printf("| %s | %zu | failed: %s |\n", format.c_str(), n, r.error);
        continue;
      }
      const double mb = 1024.0 * 1024.0;
      std::printf("| %s | %s | %.1f | %.2f | %.0f | %.0f | %s | %s | %s |\n", format.c_str(),
                  withCommas(n).c_str(), r.file_mb, r.read_cpu, r.read_extra_mb,
                  r.read_extra_mb * mb / static_cast<double>(n),
                  plan_too ? fmt::format("{:.2f}", r.run_cpu).c_str() : "-",
                  plan_too ? fmt::format("{:.0f}", r.run_peak_mb).c_str() : "-",
                  plan_too ? fmt::format("{:.0f}", r.run_peak_mb * mb / static_cast<double>(n)).c_str() : "-");
      std::fflush(stdout);
    }
  return 0;
}

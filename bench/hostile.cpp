// Hostile inputs that once made memplan quadratic (issue 21), at two sizes
// each: CPU seconds and peak RSS per run, the growth exponent between the
// sizes (1: linear, 2: quadratic), and the budget the larger run must stay
// under (docs/reliability.md). Then the small files of tests/data/hostile-replay
// that once made the replay cost their tensors' bytes or wrap its counters:
// the replay's CPU seconds, the run's peak RSS and the counts. Then JSON
// documents and streams the readers must refuse, early and within a small
// multiple of their size. Exit code 1 when a run fails or is over its budget.
//
//   hostile [--scale X]     sizes times X (default 1)
//
// Every run is a child process: its peak RSS is its own.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "memplan/c_header.h"
#include "memplan/memplan.h"
#include "memplan/report.h"

namespace {

using namespace memplan;

// A chain: t0 made by a node, each further tensor an alias of the one
// before (view, inplace or share) made by its own node.
std::string aliasChain(std::size_t n, const char* kind) {
  std::string s = "{\"format\":\"memplan-graph\",\"version\":1,\"tensors\":[{\"name\":\"t0\",\"shape\":[16],"
                  "\"dtype\":\"float32\"}";
  for (std::size_t i = 1; i < n; ++i)
    s += fmt::format(",\n{{\"name\":\"t{}\",\"shape\":[16],\"dtype\":\"float32\",\"alias\":{{\"kind\":\"{}\","
                     "\"of\":{}}}}}",
                     i, kind, i - 1);
  s += fmt::format("],\"graphs\":[{{\"name\":\"main\",\"outputs\":[{}],\"nodes\":[{{\"op\":\"Make\",\"outputs\":[0]}}",
                   n - 1);
  for (std::size_t i = 1; i < n; ++i)
    s += fmt::format(",\n{{\"op\":\"View\",\"inputs\":[{}],\"outputs\":[{}]}}", i - 1, i);
  return s + "]}]}\n";
}

// n tensors all named "x", a chain of nodes.
std::string sameName(std::size_t n) {
  std::string s = "{\"format\":\"memplan-graph\",\"version\":1,\"tensors\":[";
  for (std::size_t i = 0; i < n; ++i) s += fmt::format("{}{{\"name\":\"x\",\"nbytes\":16}}", i ? ",\n" : "");
  s += fmt::format("],\"graphs\":[{{\"name\":\"main\",\"outputs\":[{}],\"nodes\":[", n - 1);
  for (std::size_t i = 0; i < n; ++i)
    s += fmt::format("{}{{\"op\":\"f\",\"inputs\":[{}],\"outputs\":[{}]}}", i ? ",\n" : "",
                     i ? std::to_string(i - 1) : "", i);
  return s + "]}]}\n";
}

struct Case {
  std::string name;
  std::size_t small, large;
  std::function<std::string(std::size_t)> make;
  // What a user runs on it.
  enum Run { PlanVerifyReplay, PlanCHeader } run;
  double budget_cpu_s;   // at `large`
  double budget_mb;
};

struct Result {
  double cpu = 0, peak_mb = 0;
  bool ok = false;
  char error[160] = {};
};

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

Result measure(const Case& c, std::size_t n) {
  Result r;
  try {
    const std::string text = c.make(n);
    const double c0 = cpuSeconds();
    const Input in = readInput(text, "hostile.json");
    PlanRequest request;
    request.algorithm = c.run == Case::PlanCHeader ? "naive" : "best_fit";
    const Plan p = plan(in, request);
    if (!verify(in, p).ok()) throw PlanError("the plan failed verification");
    if (c.run == Case::PlanVerifyReplay) {
      if (!replay(in, p).ok()) throw PlanError("the plan failed the replay");
      (void)writePlan(p, in);
    } else {
      (void)writeCHeader(p, in.modelOrNull(), {});
    }
    r.cpu = cpuSeconds() - c0;
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    r.peak_mb = static_cast<double>(u.ru_maxrss) / 1024.0;
    r.ok = true;
  } catch (const std::exception& e) {
    std::snprintf(r.error, sizeof r.error, "%s", e.what());
  }
  return r;
}

// A file of tests/data/hostile-replay, planned as `memplan plan` does
// (alignment given for graph JSON made with --alignment 1), then replayed.
struct ReplayCase {
  std::string file;
  std::optional<Bytes> alignment;
  double budget_cpu_s, budget_mb;
};

struct ReplayRun {
  Result result;
  std::uint64_t writes = 0, reads = 0, steps = 0;
};

ReplayRun measureReplay(const ReplayCase& c) {
  ReplayRun run;
  Result& r = run.result;
  try {
    const Input in = readInput(std::filesystem::path(MEMPLAN_DATA_DIR) / "hostile-replay" / c.file);
    PlanRequest request;
    if (c.alignment) request.options.alignment = *c.alignment;
    const Plan p = plan(in, request);
    const double c0 = cpuSeconds();
    const ReplayResult replayed = replay(in, p);
    r.cpu = cpuSeconds() - c0;
    if (!replayed.ok()) throw PlanError("the plan failed the replay: " + replayed.message);
    run.writes = replayed.writes;
    run.reads = replayed.reads;
    run.steps = replayed.steps;
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    r.peak_mb = static_cast<double>(u.ru_maxrss) / 1024.0;
    r.ok = true;
  } catch (const std::exception& e) {
    std::snprintf(r.error, sizeof r.error, "%s", e.what());
  }
  return run;
}

// Runs `measure` in a child process: the peak RSS is its own.
template <typename T>
T inChild(const std::function<T()>& measure) {
  int fd[2];
  if (pipe(fd) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    const T r = measure();
    const ssize_t put = write(fd[1], &r, sizeof r);
    _exit(put == static_cast<ssize_t>(sizeof r) ? 0 : 1);
  }
  close(fd[1]);
  T r;
  if (read(fd[0], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) r = T{};
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return r;
}

Result inChild(const Case& c, std::size_t n) {
  Result r = inChild<Result>([&] { return measure(c, n); });
  if (!r.ok && !r.error[0]) std::snprintf(r.error, sizeof r.error, "child died");
  return r;
}

std::string withCommas(std::size_t n) {
  std::string s = std::to_string(n);
  for (std::size_t i = s.size(); i > 3; i -= 3) s.insert(i - 3, ",");
  return s;
}

// ---- readers: documents that cost far more than their size, endless streams ----

// A document or stream memplan must refuse: `read` throws InputError. The
// peak RSS includes the document, made in the child.
struct ReaderCase {
  std::string name;
  std::size_t bytes;  // of the document (0: a stream)
  std::function<void(std::size_t)> read;
  double budget_cpu_s, budget_mb;
};

// `head`, then `key` holding `bytes` of empty objects: 3 bytes of text,
// ~100 bytes of a JSON tree each.
std::string emptyObjects(const std::string& head, const std::string& key, std::size_t bytes) {
  std::string s = head + ",\"" + key + "\":[";
  s.reserve(bytes + s.size() + 4);
  while (s.size() < bytes) s += "{},";
  s += "{}]}";
  return s;
}

Result measureReader(const ReaderCase& c) {
  Result r;
  const double c0 = cpuSeconds();
  try {
    c.read(c.bytes);
    std::snprintf(r.error, sizeof r.error, "accepted");
    return r;
  } catch (const InputError& e) {
    std::snprintf(r.error, sizeof r.error, "%s", e.what());  // the refusal, shown
  }
  r.cpu = cpuSeconds() - c0;
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  r.peak_mb = static_cast<double>(u.ru_maxrss) / 1024.0;
  r.ok = true;
  return r;
}

std::vector<ReaderCase> readerCases(double scale) {
  const auto mb = [scale](double n) { return static_cast<std::size_t>(n * scale * 1048576); };
  const auto graph = [](std::size_t n) {
    (void)readInput(emptyObjects(R"({"format":"memplan-graph","version":1)", "x", n), "g.json");
  };
  const auto plan = [](std::size_t n) {
    (void)readPlanProvenance(emptyObjects(R"({"format":"memplan-plan","version":4)", "x", n), "p.json");
  };
  const auto planItems = [](std::size_t n) {
    (void)readPlanProvenance(emptyObjects(R"({"format":"memplan-plan","version":4)", "allocations", n), "p.json");
  };
  const auto specs = [](std::size_t n) { (void)readInput(emptyObjects(R"({"name":"s")", "specs", n), "s.json"); };
  return {
      {"graph JSON, unknown key holding {} x 35M", mb(100), graph, 1, 100 * scale + 64},
      {"plan JSON, unknown key holding {} x 17M", mb(50), plan, 1, 50 * scale + 64},
      // The document and at most 16 bytes of tree a byte of it.
      {"plan JSON, allocations of {} x 17M", mb(50), planItems, 5, 17 * 50 * scale + 64},
      {"spec list, specs of {} x 17M", mb(50), specs, 5, 17 * 50 * scale + 64},
      {"/dev/zero", 0, [](std::size_t) { (void)readInput(std::filesystem::path("/dev/zero")); }, 1, 100},
  };
}

int runReaderCases(double scale) {
  std::printf("\n| refused input | size | CPU s | peak RSS MB | message | budget |\n");
  std::printf("|---|---:|---:|---:|---|---|\n");
  int status = 0;
  for (const ReaderCase& c : readerCases(scale)) {
    const Result r = inChild<Result>([&] { return measureReader(c); });
    if (!r.ok) {
      std::printf("| %s | failed: %s |\n", c.name.c_str(), r.error[0] ? r.error : "child died");
      status = 1;
      continue;
    }
    const bool within = r.cpu <= c.budget_cpu_s && r.peak_mb <= c.budget_mb;
    status |= within ? 0 : 1;
    std::printf("| %s | %s | %.2f | %.0f | %.70s | %s %.0f s, %.0f MB |\n", c.name.c_str(),
                c.bytes ? (withCommas(c.bytes) + " B").c_str() : "stream", r.cpu, r.peak_mb, r.error,
                within ? "within" : "OVER", c.budget_cpu_s, c.budget_mb);
    std::fflush(stdout);
  }
  return status;
}

// ---- models whose memory once grew as graphs x tensors (issue 27) ----
// Each run plans, verifies, replays and reports one model, as the CLI
// does; peak RSS is the run's. Budget: linear in the model.

// genbodies: main runs n one-tensor bodies through call nodes.
std::string manyBodies(std::size_t n) {
  std::string s = "{\"format\":\"memplan-graph\",\"version\":1,\"tensors\":[{\"name\":\"x\",\"nbytes\":16,"
                  "\"graph\":0},{\"name\":\"y\",\"nbytes\":16,\"graph\":0}";
  for (std::size_t i = 0; i < n; ++i) s += fmt::format(",{{\"name\":\"\",\"nbytes\":16,\"graph\":{}}}", i + 1);
  s += "],\"graphs\":[{\"name\":\"m\",\"inputs\":[0],\"outputs\":[1],\"nodes\":[";
  for (std::size_t i = 0; i < n; ++i) s += fmt::format("{{\"kind\":\"call\",\"inputs\":[0],\"subgraphs\":[{}]}},", i + 1);
  s += "{\"op\":\"f\",\"inputs\":[0],\"outputs\":[1]}]}";
  for (std::size_t i = 0; i < n; ++i) s += fmt::format(",{{\"nodes\":[{{\"inputs\":[0],\"outputs\":[{}]}}]}}", i + 2);
  return s + "]}";
}

struct ModelCase {
  std::string name;
  std::function<Input()> read;
  double budget_cpu_s, budget_mb;
};

Result measureModel(const ModelCase& c) {
  Result r;
  try {
    const double c0 = cpuSeconds();
    const Input in = c.read();
    const Plan p = plan(in, PlanRequest{});
    if (!verify(in, p).ok()) throw PlanError("the plan failed verification");
    if (!replay(in, p).ok()) throw PlanError("the plan failed the replay");
    (void)writePlan(p, in);
    (void)formatReport(p, in.modelOrNull(), ReportOptions{});
    r.cpu = cpuSeconds() - c0;
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    r.peak_mb = static_cast<double>(u.ru_maxrss) / 1024.0;
    r.ok = true;
  } catch (const std::exception& e) {
    std::snprintf(r.error, sizeof r.error, "%s", e.what());
  }
  return r;
}

int modelCases(double scale) {
  const auto bodies = [scale](std::size_t n) {
    const auto scaled = static_cast<std::size_t>(static_cast<double>(n) * scale);
    return ModelCase{fmt::format("{} one-tensor bodies (graph JSON)", withCommas(scaled)),
                     [scaled] { return readInput(manyBodies(scaled), "bodies.json"); }, 10, 256};
  };
  const auto shared = std::filesystem::path(MEMPLAN_DATA_DIR) / "hostile-models" / "q_1500_500.tflite";
  const std::vector<ModelCase> cases = {
      {"q_1500_500.tflite: 1,500 bodies sharing one table of 500 tensors (62 KB)",
       [shared] { return readInput(shared); }, 30, 2048},
      bodies(5000), bodies(10000), bodies(20000)};
  std::printf("\n| model (plan, verify, replay, report) | CPU s | peak RSS MB | budget |\n");
  std::printf("|---|---:|---:|---|\n");
  int status = 0;
  for (const ModelCase& c : cases) {
    Result r = inChild<Result>([&] { return measureModel(c); });
    if (!r.ok) {
      std::printf("| %s | failed: %s |\n", c.name.c_str(), r.error[0] ? r.error : "child died");
      status = 1;
      continue;
    }
    const bool within = r.cpu <= c.budget_cpu_s && r.peak_mb <= c.budget_mb;
    status |= within ? 0 : 1;
    std::printf("| %s | %.2f | %.0f | %s %.0f s, %.0f MB |\n", c.name.c_str(), r.cpu, r.peak_mb,
                within ? "within" : "OVER", c.budget_cpu_s, c.budget_mb);
    std::fflush(stdout);
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  double scale = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--scale" && i + 1 < argc) {
      scale = std::stod(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: hostile [--scale X]\n");
      return 2;
    }
  }
  const auto chain = [](const char* kind) {
    return [kind](std::size_t n) { return aliasChain(n, kind); };
  };
  const std::vector<Case> cases = {
      {"views, one chain", 50000, 200000, chain("view"), Case::PlanVerifyReplay, 20, 2048},
      {"in-place results, one chain", 50000, 200000, chain("inplace"), Case::PlanVerifyReplay, 20, 2048},
      {"shares (out-variants), one chain", 50000, 200000, chain("share"), Case::PlanVerifyReplay, 30, 2048},
      {"tensors of one name, --emit-c", 40000, 160000, sameName, Case::PlanCHeader, 20, 2048},
  };
  std::printf("| input | size | CPU s | peak RSS MB | size | CPU s | peak RSS MB | growth exponent | budget |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
  int status = 0;
  for (const Case& c : cases) {
    const auto small = static_cast<std::size_t>(static_cast<double>(c.small) * scale);
    const auto large = static_cast<std::size_t>(static_cast<double>(c.large) * scale);
    const Result a = inChild(c, small), b = inChild(c, large);
    if (!a.ok || !b.ok) {
      std::printf("| %s | failed: %s |\n", c.name.c_str(), a.ok ? b.error : a.error);
      status = 1;
      continue;
    }
    const double exponent = std::log(std::max(b.cpu, 1e-3) / std::max(a.cpu, 1e-3)) /
                            std::log(static_cast<double>(large) / static_cast<double>(small));
    const bool within = b.cpu <= c.budget_cpu_s && b.peak_mb <= c.budget_mb;
    status |= within ? 0 : 1;
    std::printf("| %s | %s | %.2f | %.0f | %s | %.2f | %.0f | %.2f | %s %.0f s, %.0f MB |\n", c.name.c_str(),
                withCommas(small).c_str(), a.cpu, a.peak_mb, withCommas(large).c_str(), b.cpu, b.peak_mb,
                exponent, within ? "within" : "OVER", c.budget_cpu_s, c.budget_mb);
    std::fflush(stdout);
  }
  std::printf("\n| replay of | file size | replay CPU s | peak RSS MB | writes, reads, steps | budget |\n");
  std::printf("|---|---:|---:|---:|---|---|\n");
  const std::vector<ReplayCase> replays = {
      {"slow.csv", std::nullopt, 1, 256},
      {"rs200.json", Bytes{1}, 1, 256},
      {"manyreads1000.tflite", std::nullopt, 1, 256},
      {"cd32.json", std::nullopt, 1, 256},
      {"if_dag_40.tflite", std::nullopt, 1, 256},
  };
  for (const ReplayCase& c : replays) {
    const ReplayRun run = inChild<ReplayRun>([&] { return measureReplay(c); });
    const Result& r = run.result;
    if (!r.ok) {
      std::printf("| %s | failed: %s |\n", c.file.c_str(), r.error[0] ? r.error : "child died");
      status = 1;
      continue;
    }
    const bool within = r.cpu <= c.budget_cpu_s && r.peak_mb <= c.budget_mb;
    status |= within ? 0 : 1;
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(std::filesystem::path(MEMPLAN_DATA_DIR) / "hostile-replay" / c.file, ec);
    std::printf("| %s | %s B | %.2f | %.0f | %llu, %llu, %llu | %s %.0f s, %.0f MB |\n", c.file.c_str(),
                withCommas(ec ? 0 : static_cast<std::size_t>(bytes)).c_str(), r.cpu, r.peak_mb,
                static_cast<unsigned long long>(run.writes), static_cast<unsigned long long>(run.reads),
                static_cast<unsigned long long>(run.steps), within ? "within" : "OVER", c.budget_cpu_s, c.budget_mb);
    std::fflush(stdout);
  }
  status |= runReaderCases(scale);
  status |= modelCases(scale);
  return status;
}

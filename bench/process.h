// Running a benchmark's subject as its own process, so that its CPU time
// and peak RSS are its own, and reading the plan it wrote back in another
// (bench/dense_lists.cpp, bench/peers.cpp).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/pool_util.h"
#include "memplan/io.h"

namespace memplan::bench {

// fn() run in a child process, its result (plain data) sent back: this
// process never holds a large list, so the peak RSS that a run started from
// it inherits (the kernel keeps the larger of the parent's and the run's
// own) is the run's.
template <class Fn>
auto inChild(Fn fn) -> decltype(fn()) {
  using T = decltype(fn());
  int fd[2];
  if (pipe(fd) != 0) return T{};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    const T value = fn();
    if (write(fd[1], &value, sizeof value) != static_cast<ssize_t>(sizeof value)) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  T value{};
  if (read(fd[0], &value, sizeof value) != static_cast<ssize_t>(sizeof value)) value = T{};
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return value;
}

struct Measured {
  double cpu = 0;       // user + system seconds
  double rss_mb = 0;    // peak RSS
  bool exited_ok = false;
  bool timed_out = false;
};

// Runs args (args[0] a path) to completion, its output to /dev/null, or
// kills it after timeout_s seconds of wall time (0 = no limit).
inline Measured spawnMeasured(const std::vector<std::string>& args, double timeout_s = 0) {
  Measured m;
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &quiet, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&quiet);
  if (spawned != 0) return m;
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  rusage u{};
  while (wait4(pid, &status, timeout_s > 0 ? WNOHANG : 0, &u) != pid) {
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeout_s > 0 && waited > timeout_s && !m.timed_out) {
      kill(pid, SIGKILL);
      m.timed_out = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  m.cpu = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
          1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  m.rss_mb = static_cast<double>(u.ru_maxrss) / 1024.0;
  m.exited_ok = !m.timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return m;
}

// A plan read back: plain data, so that a child process can send it.
struct ReadBack {
  Bytes height = 0;
  bool ok = false;  // every buffer placed, none overlapping
  char error[120] = {};
};

// The height of the plan in `plan_file` (a MiniMalloc CSV with offsets),
// after checking that it places every buffer of `list_file`'s list without
// overlap (the independent placement check), read in a child process.
inline ReadBack readBack(const std::string& list_file, const std::string& plan_file) {
  return inChild([&] {
    ReadBack r;
    try {
      const PoolProblem list = readMiniMallocCsv(readFile(list_file), list_file).problem;
      const BufferList plan = readMiniMallocCsv(readFile(plan_file), plan_file);
      if (plan.problem.buffers.size() != list.buffers.size())
        throw std::runtime_error("buffer count");
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
      std::snprintf(r.error, sizeof r.error, "%s", e.what());
    }
    return r;
  });
}

}  // namespace memplan::bench

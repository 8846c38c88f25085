// When a search must end before its work budget runs out: the optional
// wall-clock limit and the optional stop flag of AlgorithmParams (the CLI
// sets the flag on Ctrl-C). Work budgets make plans repeatable; these two
// do not, and a plan they cut short says so (PoolSolution::stopped).
#pragma once

#include <atomic>
#include <chrono>
#include <string>

namespace memplan {

class StopWatch {
 public:
  using Clock = std::chrono::steady_clock;
  StopWatch() = default;
  StopWatch(double limit_seconds, const std::atomic<bool>* flag)
      : flag_(flag), limited_(limit_seconds > 0) {
    if (limited_)
      deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(limit_seconds));
  }
  // True once the limit has passed or the flag is set; stays true. Reads
  // the clock: callers ask every so many steps.
  bool due() {
    if (!reason_.empty()) return true;
    if (flag_ && flag_->load(std::memory_order_relaxed)) reason_ = "interrupted";
    else if (limited_ && Clock::now() >= deadline_) reason_ = "time limit";
    return !reason_.empty();
  }
  // "" while not due, else "time limit" or "interrupted".
  const std::string& reason() const { return reason_; }
  // Seconds left before the limit (0 when none is set or it has passed).
  double remaining() const {
    if (!limited_) return 0;
    const double s = std::chrono::duration<double>(deadline_ - Clock::now()).count();
    return s > 1e-3 ? s : 1e-3;
  }
  bool limited() const { return limited_; }
  const std::atomic<bool>* flag() const { return flag_; }

 private:
  const std::atomic<bool>* flag_ = nullptr;
  bool limited_ = false;
  Clock::time_point deadline_{};
  std::string reason_;
};

}  // namespace memplan

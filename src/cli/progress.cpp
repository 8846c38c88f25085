// The progress line: throttled, delayed, terminal only; see progress.h.
#include "progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <mutex>

#include "memplan/report.h"

namespace memplan {

std::string progressStatus(Bytes best, Bytes lower_bound) {
  std::string s = "best " + formatBytes(best);
  if (lower_bound == 0) return s;
  if (best <= lower_bound) return s + ", at the bound";
  const double over = (static_cast<double>(best) - static_cast<double>(lower_bound)) * 100.0 /
                      static_cast<double>(lower_bound);
  return s + fmt::format(", +{:.1f}% over bound", over);
}

struct ProgressLine::State {
  std::mutex mutex;
  ProgressOptions options;
  bool enabled = false;
  bool finished = false;
  bool shown = false;                // a line is on screen
  double start = 0;
  double last = 0;                   // time of the last line shown
};

ProgressLine::ProgressLine(ProgressOptions options) : state_(std::make_shared<State>()) {
  if (!options.clock) {
    options.clock = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  }
  if (!options.write) {
    const int fd = options.fd;
    options.write = [fd](std::string_view s) {
      // Best effort: a status line that cannot be written is not an error.
      while (!s.empty()) {
        const ssize_t n = ::write(fd, s.data(), s.size());
        if (n <= 0) return;
        s.remove_prefix(static_cast<std::size_t>(n));
      }
    };
  }
  state_->enabled = options.force || (options.fd >= 0 && ::isatty(options.fd) == 1);
  state_->start = options.clock();
  state_->options = std::move(options);
}

ProgressLine::~ProgressLine() { finish(); }

std::function<void(std::string_view)> ProgressLine::callback() const {
  std::weak_ptr<State> weak = state_;
  return [weak](std::string_view status) {
    const std::shared_ptr<State> s = weak.lock();
    if (!s || !s->enabled) return;
    std::lock_guard<std::mutex> lock(s->mutex);
    if (s->finished) return;
    const double now = s->options.clock();
    const double elapsed = now - s->start;
    if (elapsed < s->options.delay_seconds) return;
    if (s->shown && now - s->last < s->options.interval_seconds) return;
    s->last = now;
    s->shown = true;
    // \r returns to the line start, ESC[K erases what a longer line left.
    s->options.write(fmt::format("\r[memplan] {}, {:.1f} s\x1b[K", status, elapsed));
  };
}

void ProgressLine::finish() {
  if (!state_) return;
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->finished) return;
  state_->finished = true;
  if (state_->shown) state_->options.write("\r\x1b[K");
}

}  // namespace memplan

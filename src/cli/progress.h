// A status line for long searches, on stderr:
//
//   [memplan] best 1.23 MiB, +0.4% over bound, 2.1 s
//
// Algorithms call AlgorithmParams::progress with their status text
// (progressStatus() formats the usual one); ProgressLine decides whether and
// when it is shown: only when stderr is a terminal, only after the search has
// run for `delay_seconds`, at most once per `interval_seconds`, each time
// overwriting the previous line, which is cleared when the ProgressLine ends.
// Display only: it never changes what the search does, so plans stay
// deterministic.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "memplan/types.h"

namespace memplan {

// "best 1.2 MiB, +0.4% over bound"; "best 1.2 MiB, at the bound"; without a
// bound (0): "best 1.2 MiB".
std::string progressStatus(Bytes best, Bytes lower_bound);

struct ProgressOptions {
  int fd = 2;                        // shown only if isatty(fd) ...
  bool force = false;                // ... or when forced (tests)
  double delay_seconds = 1.0;        // quiet for short searches
  double interval_seconds = 0.25;    // at most ~4 lines a second
  std::function<double()> clock;     // seconds; default: steady clock
  std::function<void(std::string_view)> write;  // default: write(fd)
};

class ProgressLine {
 public:
  explicit ProgressLine(ProgressOptions options = {});
  ~ProgressLine();  // finish()
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // For AlgorithmParams::progress. Thread-safe; may outlive this object
  // (it then does nothing).
  std::function<void(std::string_view)> callback() const;
  // Clears the line if one was shown. Later callbacks are ignored.
  void finish();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace memplan

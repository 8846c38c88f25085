#include "support/temp_files.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>

namespace memplan::tempfiles {
namespace {

// A run writes a handful of outputs; more temporaries at once than this
// (many threads writing) are still removed by their owners.
constexpr int kSlots = 64;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
constexpr int kNumSignals = static_cast<int>(std::size(kSignals));

// Heap copies of the paths. A handler takes them with exchange(), which is
// lock-free and so async-signal-safe; it never frees them (free() is not).
static_assert(std::atomic<char*>::is_always_lock_free);
std::atomic<char*> g_paths[kSlots];

// Everything else is changed under the mutex, never taken in a handler.
std::mutex g_mutex;
int g_live = 0;
bool g_signal_cleanup = false;
bool g_atexit_registered = false;
bool g_installed[kNumSignals] = {};
struct sigaction g_previous[kNumSignals];

extern "C" void onFatalSignal(int sig) {
  const int saved_errno = errno;
  unlinkAll();
  // Then die of the signal, as without this handler: with the default
  // action back, the raised signal is delivered when the handler returns.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
  errno = saved_errno;
}

extern "C" void atExit() { unlinkAll(); }

void installLocked() {
  struct sigaction ours {};
  ours.sa_handler = onFatalSignal;
  sigemptyset(&ours.sa_mask);
  for (int s : kSignals) sigaddset(&ours.sa_mask, s);  // one cleanup at a time
  for (int i = 0; i < kNumSignals; ++i) {
    g_installed[i] = false;
    if (::sigaction(kSignals[i], nullptr, &g_previous[i]) != 0) continue;
    // A signal the program ignores (nohup, SIGPIPE turned into EPIPE) stays ignored.
    if (!(g_previous[i].sa_flags & SA_SIGINFO) && g_previous[i].sa_handler == SIG_IGN) continue;
    g_installed[i] = ::sigaction(kSignals[i], &ours, nullptr) == 0;
  }
}

void restoreLocked() {
  for (int i = 0; i < kNumSignals; ++i) {
    if (!g_installed[i]) continue;
    g_installed[i] = false;
    // Put the previous handler back unless the program has set another since.
    struct sigaction now {};
    if (::sigaction(kSignals[i], nullptr, &now) == 0 && !(now.sa_flags & SA_SIGINFO) &&
        now.sa_handler == onFatalSignal)
      ::sigaction(kSignals[i], &g_previous[i], nullptr);
  }
}

bool anyInstalled() {
  for (bool b : g_installed)
    if (b) return true;
  return false;
}

}  // namespace

void unlinkAll() noexcept {
  for (std::atomic<char*>& slot : g_paths)
    if (char* path = slot.exchange(nullptr)) ::unlink(path);
}

int add(const std::string& path) {
  char* copy = ::strdup(path.c_str());
  if (!copy) return -1;
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_atexit_registered) g_atexit_registered = std::atexit(atExit) == 0;
  for (int i = 0; i < kSlots; ++i) {
    if (g_paths[i].load() != nullptr) continue;
    g_paths[i].store(copy);
    ++g_live;
    if (g_signal_cleanup && !anyInstalled()) installLocked();
    return i;
  }
  std::free(copy);
  return -1;
}

void remove(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  const std::lock_guard<std::mutex> lock(g_mutex);
  std::free(g_paths[slot].exchange(nullptr));
  if (--g_live <= 0) {
    g_live = 0;
    restoreLocked();
  }
}

void setSignalCleanup(bool on) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_signal_cleanup = on;
  if (on && g_live > 0 && !anyInstalled()) installLocked();
  if (!on) restoreLocked();
}

}  // namespace memplan::tempfiles

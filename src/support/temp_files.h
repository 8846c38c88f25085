// The temporary files memplan has open, so that they are removed on every
// way out: the owner removes its own (normally or on an exception), exit()
// runs an atexit cleanup, and, once a program asks for it, a fatal signal
// (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE) removes them before the
// process dies of it.
//
// The signal handlers are installed only while temporaries exist and the
// previous ones are put back when the last goes, so a handler the program
// keeps for the rest of its run (e.g. Ctrl-C stopping a search) is left
// alone outside those moments.
#pragma once

#include <string>

namespace memplan::tempfiles {

// Records a temporary file; returns its slot (or -1 when all slots are
// taken: the file is then only removed by its owner).
int add(const std::string& path);
// Forgets a temporary file (renamed or removed by its owner).
void remove(int slot);
// Whether fatal signals remove the temporaries (off by default: a library
// leaves signal handling to its program).
void setSignalCleanup(bool on);
// Unlinks every recorded temporary; async-signal-safe.
void unlinkAll() noexcept;

}  // namespace memplan::tempfiles

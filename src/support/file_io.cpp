// Whole-file reads with a size cap, and the writing of a run's outputs:
//
//   check the target -> temporary file beside it (written, synced)
//   -> commit: streams written in place, then every temporary renamed over
//      its target, fatal signals held back meanwhile
//
// so that a crash, a full disk, a failed run or Ctrl-C never leaves half a
// file, a stray temporary, or some outputs of a run without the others; and
// an output never destroys what is not a plain file the user may write: an
// input of the run, a device, a FIFO, a symlink, a read-only file.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "support/temp_files.h"
#include "memplan/io.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;

std::string errnoText(int err) { return std::strerror(err); }

// Closes a descriptor on every exit path.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  friend bool operator==(const FileId&, const FileId&) = default;
};

// Where the bytes for an output path go.
struct OutputTarget {
  enum Kind { NewFile, Regular, Stream } kind = NewFile;
  fs::path path;     // symlinks followed
  struct stat st {};  // Regular, Stream
  bool append = false;  // a file reached through /proc/self/fd (a shell redirection)
};

[[noreturn]] void refuse(const std::string& name, const std::string& why) {
  throw InputError(name + ": " + why);
}

// /proc/self/fd/N and the like: links the kernel resolves to open files
// (pipes, terminals), not to paths; opened as they are.
bool isProcPath(const fs::path& p) {
  const std::string s = p.lexically_normal().string();
  return s.rfind("/proc/", 0) == 0;
}

OutputTarget streamThroughProc(const std::string& name, const fs::path& p) {
  OutputTarget t;
  t.path = p;
  if (::stat(p.c_str(), &t.st) != 0) refuse(name, "cannot write: " + errnoText(errno));
  if (S_ISDIR(t.st.st_mode)) refuse(name, "cannot write: is a directory");
  t.kind = OutputTarget::Stream;
  t.append = S_ISREG(t.st.st_mode);  // after what the program wrote there itself
  return t;
}

// Follows symlinks to the file the user means; refuses what is not a
// regular file, a character device or a FIFO.
OutputTarget resolveTarget(const fs::path& given) {
  const std::string name = given.string();
  if (name.empty() || given.filename().empty()) refuse(name, "cannot write: not a file name");
  constexpr int kMaxLinks = 40;  // as the kernel's ELOOP
  fs::path p = given;
  for (int hops = 0;; ++hops) {
    if (isProcPath(p)) return streamThroughProc(name, p);
    OutputTarget t;
    t.path = p;
    if (::lstat(p.c_str(), &t.st) != 0) {
      const int err = errno;
      if (err == ENOENT) return t;  // a new file
      refuse(name, "cannot write: " + errnoText(err));
    }
    const mode_t mode = t.st.st_mode;
    if (S_ISLNK(mode)) {
      if (hops == kMaxLinks) refuse(name, "cannot write: too many levels of symbolic links");
      std::string link(static_cast<std::size_t>(std::max<off_t>(t.st.st_size, 0)) + 256, '\0');
      const ssize_t n = ::readlink(p.c_str(), link.data(), link.size());
      if (n < 0) refuse(name, "cannot write: " + errnoText(errno));
      link.resize(static_cast<std::size_t>(n));
      const fs::path next(link);
      p = next.is_absolute() ? next : p.parent_path() / next;
      continue;
    }
    if (S_ISREG(mode)) {
      t.kind = OutputTarget::Regular;
      return t;
    }
    if (S_ISCHR(mode) || S_ISFIFO(mode)) {
      t.kind = OutputTarget::Stream;
      return t;
    }
    if (S_ISDIR(mode)) refuse(name, "cannot write: is a directory");
    refuse(name, std::string("cannot write: is a ") + (S_ISBLK(mode) ? "block device" : "socket") +
                     " (memplan writes regular files, character devices and FIFOs)");
  }
}

void writeAll(int fd, std::string_view data, const std::string& name) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t put = ::write(fd, data.data() + done, data.size() - done);
    if (put < 0) {
      if (errno == EINTR) continue;
      refuse(name, "write failed: " + errnoText(errno));
    }
    done += static_cast<std::size_t>(put);
  }
}

// A temporary's name beside the target: hidden, unique within this process
// (counter) and across processes (pid), short enough for NAME_MAX.
fs::path temporaryBeside(const fs::path& target) {
  static std::atomic<unsigned> counter{0};
  std::string stem = target.filename().string();
  if (stem.size() > 200) stem.resize(200);
  std::string tmp(1, '.');
  tmp.append(stem).append(".tmp.").append(std::to_string(::getpid()));
  tmp.append(".").append(std::to_string(counter.fetch_add(1)));
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  fs::path absolute = fs::absolute(dir / tmp, ec);  // still right after a chdir
  return ec ? dir / tmp : absolute;
}

thread_local OutputTransaction* t_current = nullptr;

}  // namespace

struct OutputTransaction::Impl {
  struct Output {
    std::string name;          // as given, for messages
    OutputTarget target;
    std::string data;          // streams: written at commit
    fs::path temp;             // files: the staged bytes
    int slot = -1;             // in the temporary-file registry
    std::optional<FileId> id;  // an existing file
    std::string key;           // a new file: its absolute, normal path
  };
  std::vector<std::pair<FileId, std::string>> inputs;
  std::vector<Output> outputs;
  OutputTransaction* previous = nullptr;
  bool done = false;

  void dropTemp(Output& o) {
    if (o.temp.empty()) return;
    ::unlink(o.temp.c_str());
    tempfiles::remove(o.slot);
    o.temp.clear();
    o.slot = -1;
  }
};

OutputTransaction::OutputTransaction() : impl_(std::make_unique<Impl>()) {
  impl_->previous = t_current;
  t_current = this;
}

OutputTransaction::~OutputTransaction() {
  for (Impl::Output& o : impl_->outputs) impl_->dropTemp(o);
  if (t_current == this) t_current = impl_->previous;
}

std::size_t OutputTransaction::pending() const { return impl_->done ? 0 : impl_->outputs.size(); }

void OutputTransaction::protect(const fs::path& input) {
  struct stat st {};
  if (::stat(input.c_str(), &st) == 0 && S_ISREG(st.st_mode))
    impl_->inputs.emplace_back(FileId{st.st_dev, st.st_ino}, input.string());
}

void OutputTransaction::stage(const fs::path& path, std::string_view data) {
  if (impl_->done) throw std::logic_error("OutputTransaction: stage() after commit()");
  Impl::Output o;
  o.name = path.string();
  o.target = resolveTarget(path);
  const OutputTarget& t = o.target;
  if (t.kind == OutputTarget::Regular) {
    o.id = FileId{t.st.st_dev, t.st.st_ino};
    for (const auto& [id, input] : impl_->inputs)
      if (id == *o.id)
        refuse(o.name, input == o.name ? "is an input of this command; not overwritten"
                                       : "is the same file as the input " + input + "; not overwritten");
    // The user cannot write it (0444, or another user's): leave it alone,
    // although replacing it by a rename would succeed.
    if ((t.st.st_mode & 0222) == 0 || ::access(t.path.c_str(), W_OK) != 0)
      refuse(o.name, "is read-only; not replaced (make it writable to allow it)");
  } else if (t.kind == OutputTarget::NewFile) {
    std::error_code ec;
    o.key = fs::absolute(t.path, ec).lexically_normal().string();
  }
  for (const Impl::Output& other : impl_->outputs) {
    const bool same = (o.id && other.id && *o.id == *other.id) || (!o.key.empty() && o.key == other.key);
    if (same) refuse(o.name, "is also written as " + other.name + " by this command");
  }

  if (t.kind == OutputTarget::Stream) {
    o.data.assign(data);
    impl_->outputs.push_back(std::move(o));
    return;
  }
  o.temp = temporaryBeside(t.path);
  // Recorded before it exists, so that no signal can leave it behind.
  o.slot = tempfiles::add(o.temp.string());
  Fd f;
  f.fd = ::open(o.temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (f.fd < 0) {
    const int err = errno;
    tempfiles::remove(o.slot);
    refuse(o.name, "cannot write: " + errnoText(err));
  }
  try {
    if (t.kind == OutputTarget::Regular) {
      // The replacement keeps the file's permissions and, where allowed, owner.
      ::fchmod(f.fd, t.st.st_mode & 07777);
      if ((t.st.st_uid != ::geteuid() || t.st.st_gid != ::getegid()) &&
          ::fchown(f.fd, t.st.st_uid, t.st.st_gid) != 0) {
        // Not allowed (not root): the file becomes the user's, as with cp.
      }
    }
    writeAll(f.fd, data, o.name);
    if (::fsync(f.fd) != 0) refuse(o.name, "fsync failed: " + errnoText(errno));
    const int fd = f.fd;
    f.fd = -1;
    if (::close(fd) != 0) refuse(o.name, "close failed: " + errnoText(errno));
  } catch (...) {
    impl_->dropTemp(o);
    throw;
  }
  impl_->outputs.push_back(std::move(o));
}

void OutputTransaction::commit() {
  if (impl_->done) return;
  // Streams first: one that fails (a full device, a closed pipe) leaves
  // every file output as it was.
  for (Impl::Output& o : impl_->outputs) {
    if (o.target.kind != OutputTarget::Stream) continue;
    Fd f;
    int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY;
    if (o.target.append) flags |= O_APPEND;
    f.fd = ::open(o.target.path.c_str(), flags);
    if (f.fd < 0) refuse(o.name, "cannot write: " + errnoText(errno));
    writeAll(f.fd, o.data, o.name);
    const int fd = f.fd;
    f.fd = -1;
    if (::close(fd) != 0) refuse(o.name, "close failed: " + errnoText(errno));
    o.data.clear();
  }
  // Then the renames, all of them: a signal arriving meanwhile is handled
  // after the last one.
  sigset_t fatal, old;
  sigemptyset(&fatal);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) sigaddset(&fatal, s);
  ::pthread_sigmask(SIG_BLOCK, &fatal, &old);
  std::string failure;
  std::vector<fs::path> dirs;
  for (Impl::Output& o : impl_->outputs) {
    if (o.temp.empty()) continue;
    if (::rename(o.temp.c_str(), o.target.path.c_str()) != 0) {
      failure = o.name + ": cannot write: " + errnoText(errno);
      break;
    }
    tempfiles::remove(o.slot);
    o.temp.clear();
    o.slot = -1;
    fs::path dir = o.target.path.parent_path();
    dirs.push_back(dir.empty() ? fs::path(".") : dir);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!failure.empty()) throw InputError(failure);
  impl_->done = true;
  // Make the renames durable; best effort (some file systems refuse).
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  for (const fs::path& dir : dirs) {
    Fd d;
    d.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d.fd >= 0) ::fsync(d.fd);
  }
}

void removeTemporariesOnSignals(bool on) { tempfiles::setSignalCleanup(on); }

namespace {

// Streams (pipes, FIFOs, devices) report no size: they are read up to this
// far lower cap (a model piped in; a shell redirection from a file is a
// regular file and has the file cap), into one buffer reserved at the cap,
// whose pages only the bytes read occupy: no regrowth doubling the peak.
constexpr std::uint64_t kMaxStreamBytes = std::uint64_t{256} << 20;

// No format memplan reads starts with a zero byte (JSON and CSV are text,
// TFLite and ExecuTorch files a non-zero root offset, ONNX a protobuf field
// key, never 0): a stream that does (/dev/zero) is refused at once.
void refuseZeroStart(const std::string& name, std::string_view first) {
  if (!first.empty() && first.front() == '\0')
    throw InputError(name + ": byte 0: starts with a zero byte, which no input memplan reads "
                            "does (JSON, CSV, TFLite, ExecuTorch or ONNX)");
}

}  // namespace

std::string readFile(const fs::path& path, std::uint64_t max_bytes) {
  const std::string name = path.string();
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw InputError(name + ": no such file");
    throw InputError(name + ": cannot open: " + errnoText(err));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw InputError(name + ": cannot stat: " + errnoText(errno));
  if (S_ISDIR(st.st_mode)) throw InputError(name + ": is a directory, expected a file");
  const bool regular = S_ISREG(st.st_mode);
  if (regular && t_current) t_current->impl_->inputs.emplace_back(FileId{st.st_dev, st.st_ino}, name);
  if (regular && static_cast<std::uint64_t>(st.st_size) > max_bytes)
    throw InputError(name + ": file is " + std::to_string(st.st_size) +
                     " bytes, above the limit of " + std::to_string(max_bytes) + " bytes");
  if (!regular) max_bytes = std::min(max_bytes, kMaxStreamBytes);

  std::string data;
  // One allocation: the known size, or the stream's cap (+1 to see a byte past it).
  data.reserve(static_cast<std::size_t>(regular ? static_cast<std::uint64_t>(st.st_size) : max_bytes) + 1);
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  for (;;) {
    const std::size_t old = data.size();
    const std::uint64_t room = max_bytes - old;
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, room + 1));
    // Within the reservation while it lasts (a file that grows meanwhile regrows).
    if (data.capacity() > old) want = std::min(want, data.capacity() - old);
    data.resize(old + want);
    const ssize_t got = ::read(f.fd, data.data() + old, want);
    if (got < 0) {
      if (errno == EINTR) {
        data.resize(old);
        continue;
      }
      const int err = errno;
      if (err == EISDIR) throw InputError(name + ": is a directory, expected a file");
      throw InputError(name + ": read failed: " + errnoText(err));
    }
    data.resize(old + static_cast<std::size_t>(got));
    if (got == 0) break;
    if (!regular && old == 0) refuseZeroStart(name, data);
    if (data.size() > max_bytes)
      throw InputError(name + ": " + (regular ? "file" : "stream (not a regular file)") +
                       " is above the limit of " + std::to_string(max_bytes) + " bytes");
  }
  return data;
}

void writeFileAtomic(const fs::path& path, std::string_view data) {
  if (t_current) {
    t_current->stage(path, data);
    return;
  }
  OutputTransaction one;
  one.stage(path, data);
  one.commit();
}

}  // namespace memplan

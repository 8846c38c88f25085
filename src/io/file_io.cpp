// Whole-file reads with a size cap, and atomic writes (temp file beside the
// target, fsync, rename): a crash or a full disk never leaves half a plan.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "memplan/io.h"

namespace memplan {
namespace {

std::string errnoText(int err) { return std::strerror(err); }

// Closes a descriptor on every exit path.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string readFile(const std::filesystem::path& path, std::uint64_t max_bytes) {
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
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > max_bytes)
    throw InputError(name + ": file is " + std::to_string(st.st_size) +
                     " bytes, above the limit of " + std::to_string(max_bytes) + " bytes");

  std::string data;
  // Regular files: one allocation of the known size. Pipes and devices report
  // no size: grow in chunks, still refusing to pass the cap.
  if (S_ISREG(st.st_mode)) data.reserve(static_cast<std::size_t>(st.st_size));
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  for (;;) {
    const std::size_t old = data.size();
    const std::uint64_t room = max_bytes - old;
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, room + 1));
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
    if (data.size() > max_bytes)
      throw InputError(name + ": file is above the limit of " + std::to_string(max_bytes) +
                       " bytes");
  }
  return data;
}

void writeFileAtomic(const std::filesystem::path& path, std::string_view data) {
  const std::string name = path.string();
  if (path.filename().empty()) throw InputError(name + ": cannot write: not a file name");
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";

  // Unique within this process (counter) and across processes (pid).
  static std::atomic<unsigned> counter{0};
  std::string tmp_name(1, '.');
  tmp_name.append(path.filename().string());
  tmp_name.append(".tmp.").append(std::to_string(::getpid()));
  tmp_name.append(".").append(std::to_string(counter.fetch_add(1)));
  const std::filesystem::path tmp = dir / tmp_name;

  struct stat existing {};
  const bool had_file = ::stat(path.c_str(), &existing) == 0;
  if (had_file && S_ISDIR(existing.st_mode))
    throw InputError(name + ": cannot write: is a directory");

  Fd f;
  f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (f.fd < 0) throw InputError(name + ": cannot write: " + errnoText(errno));

  auto fail = [&](const std::string& what, int err) {
    ::close(f.fd);
    f.fd = -1;
    ::unlink(tmp.c_str());
    throw InputError(name + ": " + what + ": " + errnoText(err));
  };

  // Keep the permissions of the file being replaced.
  if (had_file && S_ISREG(existing.st_mode)) ::fchmod(f.fd, existing.st_mode & 07777);

  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t put = ::write(f.fd, data.data() + done, data.size() - done);
    if (put < 0) {
      if (errno == EINTR) continue;
      fail("write failed", errno);
    }
    done += static_cast<std::size_t>(put);
  }
  if (::fsync(f.fd) != 0) fail("fsync failed", errno);
  if (::close(f.fd) != 0) {
    f.fd = -1;
    const int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(name + ": close failed: " + errnoText(err));
  }
  f.fd = -1;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(name + ": cannot write: " + errnoText(err));
  }
  // Make the rename itself durable; best effort (some file systems refuse).
  Fd d;
  d.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d.fd >= 0) ::fsync(d.fd);
}

}  // namespace memplan

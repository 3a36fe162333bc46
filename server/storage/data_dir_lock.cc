#include "server/storage/data_dir_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace shard::storage {
namespace {

absl::Status ErrnoStatus(const char* what, const std::string& path) {
  const int saved = errno;
  return absl::UnavailableError(
      absl::StrCat(what, " ", path, ": ", std::strerror(saved)));
}

// The pid the holder wrote into the lock file, or "unknown".
std::string HolderPid(int fd) {
  char buffer[32] = {};
  const ssize_t got = pread(fd, buffer, sizeof(buffer) - 1, 0);
  int pid = 0;
  if (got > 0 &&
      absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::string_view(buffer)),
                       &pid)) {
    return absl::StrCat(pid);
  }
  return "unknown";
}

}  // namespace

DataDirLock::DataDirLock(DataDirLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

DataDirLock& DataDirLock::operator=(DataDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

DataDirLock::~DataDirLock() {
  if (fd_ >= 0) close(fd_);  // Closing the descriptor releases the flock.
}

absl::StatusOr<DataDirLock> LockDataDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus("cannot create data directory", dir);
  }
  const std::string path = absl::StrCat(dir, "/LOCK");
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("cannot open lock file", path);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int saved = errno;
    const std::string holder = HolderPid(fd);
    close(fd);
    if (saved == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat("data directory ", dir, " is in use by pid ", holder,
                       "; stop that shardd first"));
    }
    errno = saved;
    return ErrnoStatus("cannot lock", path);
  }
  DataDirLock lock(fd);
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) !=
                                   static_cast<ssize_t>(pid.size())) {
    return ErrnoStatus("cannot write lock file", path);
  }
  return lock;
}

}  // namespace shard::storage

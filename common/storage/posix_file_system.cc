#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/storage/file_system.h"

namespace shard::storage {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  const int saved = errno;
  const std::string message =
      absl::StrCat(what, " ", path, ": ", std::strerror(saved));
  if (saved == ENOENT) return absl::NotFoundError(message);
  return absl::InternalError(message);
}

absl::Status WriteAll(int fd, absl::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t written = ::write(fd, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write", path);
    }
    data.remove_prefix(static_cast<size_t>(written));
  }
  return absl::OkStatus();
}

absl::Status FsyncPath(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return ErrnoError("open", path);
  absl::Status status =
      ::fsync(fd) == 0 ? absl::OkStatus() : ErrnoError("fsync", path);
  ::close(fd);
  return status;
}

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

class PosixAppendableFile : public AppendableFile {
 public:
  PosixAppendableFile(int fd, std::string path)
      : fd_(fd), path_(std::move(path)) {}
  ~PosixAppendableFile() override { ::close(fd_); }

  absl::Status Append(absl::string_view data) override {
    return WriteAll(fd_, data, path_);
  }
  absl::Status Sync() override {
    return ::fdatasync(fd_) == 0 ? absl::OkStatus()
                                 : ErrnoError("fdatasync", path_);
  }

 private:
  int fd_;
  std::string path_;
};

class Posix : public FileSystem {
 public:
  absl::StatusOr<std::unique_ptr<AppendableFile>> OpenAppendable(
      const std::string& path) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return ErrnoError("open", path);
    // The new directory entry must be durable too.
    if (absl::Status s = FsyncPath(DirOf(path), O_RDONLY | O_DIRECTORY);
        !s.ok()) {
      ::close(fd);
      return s;
    }
    return std::unique_ptr<AppendableFile>(
        std::make_unique<PosixAppendableFile>(fd, path));
  }

  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return ErrnoError("open", path);
    std::string contents;
    char buffer[1 << 16];
    while (true) {
      const ssize_t got = ::read(fd, buffer, sizeof(buffer));
      if (got < 0) {
        if (errno == EINTR) continue;
        absl::Status status = ErrnoError("read", path);
        ::close(fd);
        return status;
      }
      if (got == 0) break;
      contents.append(buffer, static_cast<size_t>(got));
    }
    ::close(fd);
    return contents;
  }

  absl::Status WriteFileAtomically(const std::string& path,
                                   absl::string_view contents) override {
    const std::string temporary = path + ".tmp";
    const int fd =
        ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return ErrnoError("open", temporary);
    absl::Status status = WriteAll(fd, contents, temporary);
    if (status.ok() && ::fsync(fd) != 0)
      status = ErrnoError("fsync", temporary);
    ::close(fd);
    if (status.ok() && ::rename(temporary.c_str(), path.c_str()) != 0) {
      status = ErrnoError("rename to", path);
    }
    if (!status.ok()) {
      // A full disk must not keep a partial copy taking its room.
      ::unlink(temporary.c_str());
      return status;
    }
    return FsyncPath(DirOf(path), O_RDONLY | O_DIRECTORY);
  }

  absl::Status Truncate(const std::string& path, uint64_t size) override {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) {
      return ErrnoError("truncate", path);
    }
    return FsyncPath(path, O_WRONLY);
  }

  absl::StatusOr<std::vector<std::string>> ListDir(
      const std::string& dir) override {
    DIR* handle = ::opendir(dir.c_str());
    if (handle == nullptr) return ErrnoError("opendir", dir);
    std::vector<std::string> names;
    while (dirent* entry = ::readdir(handle)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(handle);
    return names;
  }

  absl::Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return ErrnoError("unlink", path);
    return absl::OkStatus();
  }

  absl::Status CreateDir(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoError("mkdir", dir);
    }
    return absl::OkStatus();
  }
};

}  // namespace

FileSystem* PosixFileSystem() {
  static FileSystem* const file_system = new Posix();
  return file_system;
}

}  // namespace shard::storage

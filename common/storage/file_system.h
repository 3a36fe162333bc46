// The file operations durable state needs, behind an interface so tests can
// inject faults (failed fsync, lost unsynced data) without a real crash.
// Errors are absl::Status with the path and errno text. Implementations are
// thread-compatible: callers serialise access to one file.
#ifndef COMMON_STORAGE_FILE_SYSTEM_H_
#define COMMON_STORAGE_FILE_SYSTEM_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shard::storage {

// A file opened for appending.
class AppendableFile {
 public:
  virtual ~AppendableFile() = default;
  virtual absl::Status Append(absl::string_view data) = 0;
  // Makes everything appended so far durable (fsync).
  virtual absl::Status Sync() = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Creates the file if needed and opens it for appending at its end.
  virtual absl::StatusOr<std::unique_ptr<AppendableFile>> OpenAppendable(
      const std::string& path) = 0;
  // NOT_FOUND if the file does not exist.
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path) = 0;
  // Replaces `path` with `contents` so that a crash leaves the old or the
  // new contents: temporary file, fsync, rename, fsync of the directory.
  virtual absl::Status WriteFileAtomically(const std::string& path,
                                           absl::string_view contents) = 0;
  virtual absl::Status Truncate(const std::string& path, uint64_t size) = 0;
  // Names (not paths) of the entries of `dir`.
  virtual absl::StatusOr<std::vector<std::string>> ListDir(
      const std::string& dir) = 0;
  virtual absl::Status Remove(const std::string& path) = 0;
  virtual absl::Status CreateDir(const std::string& dir) = 0;
};

// The real file system. Never deleted.
FileSystem* PosixFileSystem();

}  // namespace shard::storage

#endif  // COMMON_STORAGE_FILE_SYSTEM_H_

// Exclusive ownership of a data directory for the life of a process.
//
// Two coordinators on one journal would each acknowledge writes the other
// never sees. LockDataDir takes an advisory flock(2) on <dir>/LOCK before
// anything in the directory is read, and records the holder's pid in that
// file. The lock belongs to the file, not to the path, so the same
// directory reached through a symlink (or a bind mount) is refused too; the
// kernel drops it when the process dies, even by kill -9, so a LOCK file
// left by a dead process never blocks a restart.
//
// Errors: FAILED_PRECONDITION naming the directory and the holder's pid when
// another process holds the lock; the errno error when the directory or the
// file cannot be created or opened. Thread-safety: a DataDirLock is a value
// owned by one thread; moving it moves the lock.
#ifndef SERVER_STORAGE_DATA_DIR_LOCK_H_
#define SERVER_STORAGE_DATA_DIR_LOCK_H_

#include <string>

#include "absl/status/statusor.h"

namespace shard::storage {

class DataDirLock {
 public:
  DataDirLock(DataDirLock&& other) noexcept;
  DataDirLock& operator=(DataDirLock&& other) noexcept;
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;
  // Releases the lock (the LOCK file stays; it is harmless once unlocked).
  ~DataDirLock();

 private:
  friend absl::StatusOr<DataDirLock> LockDataDir(const std::string& dir);
  explicit DataDirLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Creates `dir` if missing, then locks it (see the file comment).
absl::StatusOr<DataDirLock> LockDataDir(const std::string& dir);

}  // namespace shard::storage

#endif  // SERVER_STORAGE_DATA_DIR_LOCK_H_

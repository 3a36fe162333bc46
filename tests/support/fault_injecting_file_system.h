// A FileSystem over the real one that can fail fsyncs and simulate a crash:
// SimulateCrash() cuts every file written through it back to the length it
// had at its last successful Sync (what a power loss may leave).
// Thread-compatible, for tests.
#ifndef TESTS_SUPPORT_FAULT_INJECTING_FILE_SYSTEM_H_
#define TESTS_SUPPORT_FAULT_INJECTING_FILE_SYSTEM_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/storage/file_system.h"

namespace shard::testing {

class FaultInjectingFileSystem : public storage::FileSystem {
 public:
  // The next `count` Sync calls fail with INTERNAL.
  void FailSyncs(int count) ABSL_LOCKS_EXCLUDED(mu_);
  // Every Sync from now on first sleeps this long.
  void DelaySyncs(absl::Duration delay) ABSL_LOCKS_EXCLUDED(mu_);
  // Sync calls so far.
  int syncs() const ABSL_LOCKS_EXCLUDED(mu_);
  // Drops every byte appended after the last successful Sync of its file.
  void SimulateCrash() ABSL_LOCKS_EXCLUDED(mu_);

  absl::StatusOr<std::unique_ptr<storage::AppendableFile>> OpenAppendable(
      const std::string& path) override;
  absl::StatusOr<std::string> ReadFile(const std::string& path) override;
  absl::Status WriteFileAtomically(const std::string& path,
                                   absl::string_view contents) override;
  absl::Status Truncate(const std::string& path, uint64_t size) override;
  absl::StatusOr<std::vector<std::string>> ListDir(
      const std::string& dir) override;
  absl::Status Remove(const std::string& path) override;
  absl::Status CreateDir(const std::string& dir) override;

 private:
  friend class TrackedFile;
  storage::FileSystem* const real_ = storage::PosixFileSystem();
  mutable absl::Mutex mu_;
  int failing_syncs_ ABSL_GUARDED_BY(mu_) = 0;
  int syncs_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration sync_delay_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> synced_bytes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> written_bytes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_FAULT_INJECTING_FILE_SYSTEM_H_

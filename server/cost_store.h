// The per-sample costs of balanced-batch jobs (JobSpec.batches), by digest.
//
// PutCosts pieces arrive in order and are staged in memory; once all are
// in, their SHA-256 must match the name they were uploaded under (else the
// upload is dropped: DATA_LOSS, start over), they are written durably when
// the store has a directory (<dir>/<sha256>.u32, atomically: temporary
// file, fsync, rename, fsync of the directory) and kept resident as a
// CostTable (2 or 4 bytes a sample). A job is created only over complete
// costs (CheckComplete), so a journal record never names costs the disk
// lacks. After a restart Get() reads a job's costs back on first use and
// checks their digest: a damaged or missing file is reported (DATA_LOSS /
// NOT_FOUND naming the file), never served.
//
// Memory: staged uploads (4 bytes a sample) and resident tables together
// stay under `max_bytes`; a piece that would pass it is refused with
// RESOURCE_EXHAUSTED naming the figure and --max-cost-bytes.
// Thread-safe; hashing and file I/O run outside the lock.
#ifndef SERVER_COST_STORE_H_
#define SERVER_COST_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/plan/cost_table.h"
#include "common/storage/file_system.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class CostStore {
 public:
  // Costs are durable under `dir` through `file_system` (not owned; must
  // outlive the store), or live in memory only when file_system is null.
  CostStore(storage::FileSystem* file_system, std::string dir,
            uint64_t max_bytes);

  // One piece of an upload (see PutCosts in shard.proto).
  absl::StatusOr<shard::v1::PutCostsResponse> Put(
      const shard::v1::PutCostsRequest& request);

  // OK when the costs named `sha256` were uploaded completely, `count` of
  // them; FAILED_PRECONDITION saying what to upload otherwise.
  absl::Status CheckComplete(const std::string& sha256, uint64_t count);

  // The costs named `sha256`, read back from the directory on first use
  // after a restart.
  absl::StatusOr<std::shared_ptr<const plan::CostTable>> Get(
      const std::string& sha256);

  // Removes the files and tables of costs that no name in `named` refers
  // to (run after recovery: uploads whose job was never created or was
  // deleted).
  void KeepOnly(const absl::flat_hash_set<std::string>& named);

  // Bytes held: staged uploads plus resident tables.
  uint64_t MemoryBytes() const;

  // OK for a normalised spec without balanced batches, else CheckComplete
  // of the costs it names: a job is created only over complete costs.
  absl::Status CheckCostsOf(const shard::v1::JobSpec& spec);

 private:
  struct Upload {
    uint64_t count = 0;
    std::string le32;  // the pieces received so far
  };

  // Finishes a complete upload: digest, file, table.
  absl::StatusOr<shard::v1::PutCostsResponse> Complete(
      const std::string& sha256, Upload upload);
  std::string PathOf(const std::string& sha256) const;
  // RESOURCE_EXHAUSTED when `more` bytes would pass the budget.
  absl::Status Reserve(uint64_t more) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  storage::FileSystem* const file_system_;
  const std::string dir_;
  const uint64_t max_bytes_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Upload> uploads_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<const plan::CostTable>>
      tables_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shard::server

#endif  // SERVER_COST_STORE_H_

// The per-sample costs of balanced-batch jobs (JobSpec.batches), by digest.
//
// PutCosts pieces arrive in order and are staged in memory; once all are
// in, their SHA-256 must match the name they were uploaded under (else the
// upload is dropped: DATA_LOSS, start over), they are written durably when
// the store has CostBlobs (files under --data-dir, or etcd for replicas)
// and kept resident as a CostTable (2 or 4 bytes a sample). A job is
// created only over complete costs (WhenCostsOfChecked), so a record never
// names costs the blobs lack. After a restart or a failover WhenLoaded()
// reads a job's costs back on first use, on a loader thread, once however
// many calls ask, and checks their digest: damaged or missing costs are
// reported (DATA_LOSS / NOT_FOUND naming where they were), never served.
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
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/plan/cost_table.h"
#include "server/storage/cost_blobs.h"
#include "server/work_pool.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class CostStore {
 public:
  // Costs are durable in `blobs`, or live in memory only when it is null.
  CostStore(std::shared_ptr<storage::CostBlobs> blobs, uint64_t max_bytes);

  // One piece of an upload (see PutCosts in shard.proto).
  absl::StatusOr<shard::v1::PutCostsResponse> Put(
      const shard::v1::PutCostsRequest& request);

  using CostsCallback = absl::AnyInvocable<
      void(absl::StatusOr<std::shared_ptr<const plan::CostTable>>) &&>;
  using CheckCallback = absl::AnyInvocable<void(absl::Status) &&>;

  // Calls `done` with the costs named `sha256`: on the calling thread when
  // they are resident (or, without blobs, missing: NOT_FOUND), else on the
  // store's loader thread once read back from the blobs and checked (after
  // a restart or a failover). However many callers ask at once, the costs
  // are read once: the loader holds one copy of the bytes, and no thread
  // serving calls waits for the read.
  void WhenLoaded(const std::string& sha256, CostsCallback done);

  // Calls `done` (as WhenLoaded does) with OK for a normalised spec
  // without balanced batches; else once its costs are loaded: OK when they
  // hold the spec's samples, FAILED_PRECONDITION saying what to upload
  // when they were never uploaded, INVALID_ARGUMENT for another count, or
  // the read's error. A job is created only over complete costs.
  void WhenCostsOfChecked(const shard::v1::JobSpec& spec, CheckCallback done);

  // Removes the blobs and tables of costs that no name in `named` refers
  // to (run after recovery: uploads whose job was never created or was
  // deleted). Best effort: a blob that cannot be removed stays.
  void KeepOnly(const absl::flat_hash_set<std::string>& named);

  // Bytes held: staged uploads plus resident tables.
  uint64_t MemoryBytes() const;

 private:
  struct Upload {
    uint64_t count = 0;
    std::string le32;  // the pieces received so far
  };

  // Finishes a complete upload: digest, file, table.
  absl::StatusOr<shard::v1::PutCostsResponse> Complete(
      const std::string& sha256, Upload upload);
  // RESOURCE_EXHAUSTED when `more` bytes would pass the budget.
  absl::Status Reserve(uint64_t more) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads the costs named `sha256` back from the blobs and checks their
  // digest (blocking I/O; no lock held).
  absl::StatusOr<std::shared_ptr<const plan::CostTable>> ReadBack(
      const std::string& sha256) const;
  // On the loader thread: ReadBack, keep the table, answer every waiter.
  void Load(const std::string& sha256) ABSL_LOCKS_EXCLUDED(mu_);

  const std::shared_ptr<storage::CostBlobs> blobs_;
  const uint64_t max_bytes_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Upload> uploads_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<const plan::CostTable>>
      tables_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Callers waiting for costs being read back, by name.
  absl::flat_hash_map<std::string, std::vector<CostsCallback>> waiting_
      ABSL_GUARDED_BY(mu_);
  // Last: destroyed first, it runs the loads still queued while the
  // members above exist.
  WorkPool loader_{1};
};

}  // namespace shard::server

#endif  // SERVER_COST_STORE_H_

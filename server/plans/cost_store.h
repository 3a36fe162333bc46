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
// RESOURCE_EXHAUSTED naming the figure and --max-cost-bytes. Under
// --auth-policy an upload and the table it becomes are charged to the
// tenant of the principal whose first piece it took, and stay under that
// tenant's quota of cost bytes too (tables read back from the blobs after
// a restart are charged to no tenant).
//
// Lifetime: the core tells the store which jobs name which costs (Claim,
// Unclaim). When the last job naming costs goes, their table and blob are
// removed at once, unless a PutCosts touched them since that job's claim
// (a client uploaded them for a job it is about to create). Costs no job
// names are kept for `unclaimed_ttl` after their last PutCosts, then
// removed; an upload that receives no piece for `unclaimed_ttl` is dropped
// with its reservation. Costs found in the blobs at start (a restart or a
// takeover) that no job names count as put at start, so a client cut off
// between its upload and its CreateJob still finds them.
//
// Thread-safe; hashing and blob I/O run outside the lock, removals on the
// store's loader thread (Claim/Unclaim may be called under other locks).
#ifndef SERVER_PLANS_COST_STORE_H_
#define SERVER_PLANS_COST_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/plan/batches/cost_table.h"
#include "server/runtime/work_pool.h"
#include "server/state/tenant_limits.h"
#include "server/storage/cost_blobs.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

// Reads the costs named `sha256` back from `blobs` and checks their digest
// (blocking I/O): NOT_FOUND when they are missing, UNAVAILABLE when the
// blobs cannot be reached now, DATA_LOSS (naming where they are) when they
// are damaged.
absl::StatusOr<std::shared_ptr<const plan::CostTable>> ReadStoredCosts(
    storage::CostBlobs& blobs, const std::string& sha256);

class CostStore {
 public:
  struct Options {
    // Bytes of staged uploads and resident tables together.
    uint64_t max_bytes = uint64_t{4} << 30;
    // How long costs no job names, and an upload that stalled, are kept.
    absl::Duration unclaimed_ttl = absl::Minutes(10);
    std::function<absl::Time()> now = [] { return absl::Now(); };
  };

  // Costs are durable in `blobs`, or live in memory only when it is null.
  CostStore(std::shared_ptr<storage::CostBlobs> blobs, Options options);

  // One piece of an upload (see PutCosts in shard.proto), by a principal
  // of `uploader`'s tenant (null: none).
  absl::StatusOr<shard::v1::PutCostsResponse> Put(
      const shard::v1::PutCostsRequest& request,
      std::shared_ptr<const TenantLimits> uploader = nullptr);
  // The cost bytes charged to `tenant` now (metrics).
  uint64_t TenantBytes(absl::string_view tenant) const;

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
  // hold the spec's samples (and sum to its costs_total, when given),
  // FAILED_PRECONDITION saying what to upload when they were never
  // uploaded, INVALID_ARGUMENT for another count or sum, or the read's
  // error. A job is created only over complete costs.
  void WhenCostsOfChecked(const shard::v1::JobSpec& spec, CheckCallback done);

  // A job names the costs `sha256` (created, or recovered at start).
  void Claim(const std::string& sha256);
  // A job that named `sha256` is gone. When no job names them any more
  // and no PutCosts touched them since the last claim (or that was
  // unclaimed_ttl ago), their memory is given back now and their blob is
  // removed on the loader thread; else ExpireUnclaimed removes them later.
  void Unclaim(const std::string& sha256);
  // Run after recovery: the blobs no job claimed count as put now (see
  // Lifetime). Blocking I/O (lists the blobs); call without other locks.
  void AdoptStored();
  // Drops uploads that received no piece for unclaimed_ttl and removes
  // the costs no job names whose last PutCosts is that old (table and
  // blob; best effort: a blob that cannot be removed stays). Memory is
  // given back before it returns, blobs are removed on the loader thread.
  void ExpireUnclaimed();

  // Bytes held: staged uploads plus resident tables.
  uint64_t MemoryBytes() const;
  uint64_t max_bytes() const { return options_.max_bytes; }

 private:
  struct Upload {
    uint64_t count = 0;
    std::string le32;  // the pieces received so far
    absl::Time last_piece;
    std::shared_ptr<const TenantLimits> tenant;  // Charged; null: none.
  };

  // Finishes a complete upload: digest, file, table.
  absl::StatusOr<shard::v1::PutCostsResponse> Complete(
      const std::string& sha256, Upload upload)
      ABSL_LOCKS_EXCLUDED(mu_, blob_mu_);
  // RESOURCE_EXHAUSTED when `more` bytes would pass the budget.
  absl::Status Reserve(uint64_t more) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reserve(), within `tenant`'s quota too (null: no tenant), charged to it.
  absl::Status Reserve(uint64_t more, const TenantLimits* tenant)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds `delta` bytes to what `tenant` is charged ("": none).
  void Charge(const std::string& tenant, int64_t delta)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // On the loader thread: ReadStoredCosts, keep the table, answer every
  // waiter.
  void Load(const std::string& sha256) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether no job names `sha256` and no PutCosts touched it within
  // unclaimed_ttl since its last claim.
  bool Unclaimed(const std::string& sha256) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives the table of `sha256` back now and removes its blob on the
  // loader thread (RemoveBlobIfUnclaimed).
  void Remove(const std::string& sha256) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // On the loader thread: removes the blob of `sha256` if it is still
  // Unclaimed (else it was claimed or uploaded again meanwhile).
  void RemoveBlobIfUnclaimed(const std::string& sha256)
      ABSL_LOCKS_EXCLUDED(mu_, blob_mu_);

  const std::shared_ptr<storage::CostBlobs> blobs_;
  const Options options_;
  // Held across a blob's write or removal and the table change that goes
  // with it, so a removal never undoes an upload completed meanwhile.
  absl::Mutex blob_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Upload> uploads_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<const plan::CostTable>>
      tables_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Jobs naming each costs set (absent: none).
  absl::flat_hash_map<std::string, uint32_t> claims_ ABSL_GUARDED_BY(mu_);
  // The tenant each resident table is charged to (uploaded under one).
  absl::flat_hash_map<std::string, std::string> charged_to_
      ABSL_GUARDED_BY(mu_);
  // Bytes charged to each tenant (those with none are left out).
  absl::flat_hash_map<std::string, uint64_t> tenant_bytes_ ABSL_GUARDED_BY(mu_);
  // The last PutCosts (or AdoptStored) of costs since a job last claimed
  // them: uploads waiting for their CreateJob.
  absl::flat_hash_map<std::string, absl::Time> last_put_ ABSL_GUARDED_BY(mu_);
  // Callers waiting for costs being read back, by name.
  absl::flat_hash_map<std::string, std::vector<CostsCallback>> waiting_
      ABSL_GUARDED_BY(mu_);
  // Last: destroyed first, it runs the loads still queued while the
  // members above exist.
  WorkPool loader_{1};
};

}  // namespace shard::server

#endif  // SERVER_PLANS_COST_STORE_H_

// The coordinator's request handling, independent of gRPC: one core that
// decides (coordinator_core.h) and the services of shard.v1.Coordinator
// over it, one per API: jobs, membership and leases, progress, shards and
// the rendezvous store. Each service checks its requests' shape and asks
// the core; answers use absl::Status codes as documented in
// proto/shard/v1/shard.proto. A call that changes state answers once the
// change is durable, without a thread waiting for the disk.
//
// Owns the core and the services; every method is thread-safe. Drain()
// makes every call (including waiting ones) answer UNAVAILABLE.
#ifndef SERVER_SERVICES_COORDINATOR_SERVICE_H_
#define SERVER_SERVICES_COORDINATOR_SERVICE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "server/core/coordinator_core.h"
#include "server/metrics/job_figures.h"
#include "server/services/job_service.h"
#include "server/services/membership_service.h"
#include "server/services/progress_service.h"
#include "server/services/shard_service.h"
#include "server/services/store_service.h"
#include "server/state/coordinator_state.h"
#include "server/state/tenant_limits.h"
#include "server/storage/state_log.h"
#include "server/storage/state_store.h"
#include "server/waiting/waiting_calls.h"

namespace shard::server {

// What the coordinator holds right now (metrics, tests).
struct CoordinatorFigures {
  // Epoch orders held or being computed, their bytes (including orders
  // only streams still read) and the evictions to make room.
  size_t cached_orders = 0;
  uint64_t order_bytes = 0;
  uint64_t order_evictions = 0;
  // Jobs deleted because they stayed idle for idle_job_ttl.
  uint64_t idle_jobs_expired = 0;
  // Windows of balanced-batch epochs arranged (SharedWindowTable).
  uint64_t batch_windows_arranged = 0;
  // Bytes the rendezvous store holds.
  size_t rendezvous_bytes = 0;
  // Bytes of balanced-batch costs held (uploads and tables; CostStore).
  uint64_t cost_bytes = 0;
  // Calls waiting, by WaitingCalls::Kind.
  std::array<size_t, WaitingCalls::kKinds> waiting_by_kind = {};
  // How many may wait at once now (WaitingCalls::limit).
  size_t waiting_limit = 0;
  // What heartbeats are asked to wait at least now (zero while the core
  // does not serve; MembershipService::CurrentPace).
  absl::Duration heartbeat_pace;
  // Every job's figures; empty while the core does not serve.
  std::vector<JobFigures> jobs;

  size_t waiting(WaitingCalls::Kind kind) const {
    return waiting_by_kind[static_cast<size_t>(kind)];
  }
};

// What a tenant's jobs hold now (CoordinatorService::UsageOf), as its
// quotas count it.
struct TenantUsage {
  uint64_t jobs = 0;
  uint64_t ranks = 0;  // Members joined to its jobs.
  uint64_t store_bytes = 0;
  uint64_t cost_bytes = 0;  // Charged to it (CostStore).
  uint64_t waiting_calls = 0;
};

class CoordinatorService {
 public:
  // In-memory service (tests).
  explicit CoordinatorService(CoordinatorOptions options = {});
  // A service over recovered durable state: every accepted mutation is
  // applied under the core's lock and queued in `log`, and answered only
  // once the log made it durable (group commit; reads and heartbeats never
  // wait for the disk). Once the log breaks every call answers its
  // UNAVAILABLE error. Recovered members get a full lease from now.
  CoordinatorService(CoordinatorOptions options, storage::OpenedLog opened);
  // The same over any durable store, holding `recovered` (the state the
  // store's last sequence describes).
  CoordinatorService(CoordinatorOptions options,
                     std::unique_ptr<storage::StateStore> store,
                     CoordinatorState recovered);

  JobService& jobs() { return jobs_; }
  MembershipService& membership() { return membership_; }
  ProgressService& progress() { return progress_; }
  ShardService& shards() { return shards_; }
  // The rendezvous key-value RPCs of each job's current generation.
  StoreService& store() { return store_; }

  CoordinatorFigures Figures();
  // What `tenant` holds now (jobs and ranks: zero while the core does not
  // serve).
  TenantUsage UsageOf(const TenantLimits& tenant);
  // GetJob's answer: the job (JobService::GetJob) with the balance of its
  // steps when it has balanced batches and has streamed.
  absl::StatusOr<shard::v1::Job> GetJob(
      const shard::v1::GetJobRequest& request);

  // From now on every call answers UNAVAILABLE; waiting joins and store
  // waits wake up, calls waiting for order memory answer at once, and
  // next epochs are no longer prepared.
  void Drain() { core_.Drain(); }

 private:
  // Declared first: destroyed last, after the services above it.
  CoordinatorCore core_;
  JobService jobs_{&core_};
  MembershipService membership_{&core_};
  ProgressService progress_{&core_};
  ShardService shards_{&core_};
  StoreService store_;
};

}  // namespace shard::server

#endif  // SERVER_SERVICES_COORDINATOR_SERVICE_H_

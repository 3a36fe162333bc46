#include "server/core/coordinator_core.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/runtime/event_log.h"

namespace shard::server {

CoordinatorCore::CoordinatorCore(CoordinatorOptions options,
                                 std::unique_ptr<storage::StateStore> store,
                                 CoordinatorState recovered)
    : options_(std::move(options)),
      orders_(/*compute_threads=*/2, options_.order_cache_bytes),
      rendezvous_(options_.rendezvous, options_.tenant_limits_of),
      waiting_calls_(options_.max_waiting_calls, options_.tenant_limits_of),
      costs_(options_.cost_blobs, {.max_bytes = options_.max_cost_bytes,
                                   .unclaimed_ttl = options_.cost_upload_ttl,
                                   .now = options_.now}),
      log_(std::move(store)),
      writes_(std::move(recovered), log_.get()),
      leases_(options_.now),
      store_lost_through_(writes_.state().last_generation()) {
  Decide([this](LockedCore& core) {
    std::vector<std::string> job_ids;
    for (const auto& [id, job] : core.state().jobs()) {
      job_ids.push_back(id);
      if (job->spec.has_batches()) {
        costs_.Claim(job->spec.batches().costs_sha256());
      }
      for (const std::string& member : job->members) {
        core.leases().Renew(id, member);
      }
      if (job->world_formed()) {
        rendezvous_.OpenGeneration({id, job->generation});
      }
      // A job with members has trainers coming back: prepare where they
      // continue (jobs nobody trains are left to compute on demand).
      if (!job->members.empty()) {
        orders_.Prepare(IncarnationOf(*job), job->spec, job->committed_epoch);
      }
    }
    // Recovery may stop between a membership change and the world it allows.
    for (const std::string& id : job_ids) {
      if (absl::Status s =
              core.MaybeFormWorld(id, LockedCore::FormedWorld::kKeep);
          !s.ok()) {
        LogEvent(absl::StrCat("cannot form the world of job=", id, ": ",
                              s.message()));
      }
    }
  });
  // Costs uploaded for a job not created yet, or whose job was deleted:
  // kept for --cost-upload-ttl from now, then removed.
  costs_.AdoptStored();
}

CoordinatorCore::~CoordinatorCore() {
  UnlockThenRun lock(&mu_);
  parked_.EndAll(lock.then());
}

uint64_t CoordinatorCore::Decide(absl::FunctionRef<void(LockedCore&)> decide) {
  UnlockThenRun lock(&mu_, &options_.on_lock_held);
  LockedCore core(*this, lock.then());
  decide(core);
  // Cheap (one counter): the waiting-call limit follows the jobs held.
  waiting_calls_.SetRanksHeld(writes_.state().ranks_held());
  return writes_.journaled();
}

void CoordinatorCore::ObserveCreatedJobs(JobCreatedObserver observer) {
  absl::MutexLock lock(&mu_);
  on_job_created_ = std::move(observer);
}

void CoordinatorCore::Drain() {
  {
    UnlockThenRun lock(&mu_);
    writes_.Drain();
    parked_.WakeAll(lock.then());
  }
  rendezvous_.Drain();
  // Streams and previews waiting for order memory are answered now, and
  // preparations of next epochs end.
  orders_.Stop();
}

}  // namespace shard::server

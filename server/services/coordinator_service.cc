#include "server/services/coordinator_service.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "common/plan/spec/job_spec.h"

namespace shard::server {
namespace {

// The store's scope check: the core's rule, after the job id's shape.
StoreService::ScopeCheck StoreScopeOf(CoordinatorCore* core) {
  return [core](const shard::v1::StoreScope& scope) -> absl::Status {
    if (absl::Status s = plan::ValidateJobId(scope.job_id()); !s.ok()) {
      return s;
    }
    absl::Status status;
    core->Decide([&](LockedCore& locked) {
      status = locked.CheckServing();
      if (status.ok()) status = locked.CheckStoreScope(scope);
    });
    return status;
  };
}

}  // namespace

CoordinatorService::CoordinatorService(CoordinatorOptions options)
    : CoordinatorService(
          options,
          storage::OpenedLog{
              storage::StateLog::InMemory(), CoordinatorState(), {}}) {}

CoordinatorService::CoordinatorService(CoordinatorOptions options,
                                       storage::OpenedLog opened)
    : CoordinatorService(std::move(options), std::move(opened.log),
                         std::move(opened.state)) {}

CoordinatorService::CoordinatorService(
    CoordinatorOptions options, std::unique_ptr<storage::StateStore> store,
    CoordinatorState recovered)
    : core_(std::move(options), std::move(store), std::move(recovered)),
      store_(&core_.rendezvous(), &core_.waiting_calls(),
             core_.options().max_wait, StoreScopeOf(&core_)) {
  core_.ObserveCreatedJobs([this](LockedCore& core, const JobState& job) {
    shards_.ArrangeFirstWindowAhead(core, job);
  });
}

absl::StatusOr<shard::v1::Job> CoordinatorService::GetJob(
    const shard::v1::GetJobRequest& request) {
  absl::StatusOr<shard::v1::Job> job = jobs_.GetJob(request);
  if (!job.ok()) return job;
  if (std::shared_ptr<const BalanceTally> tally =
          shards_.balance_tallies().Find(job->incarnation())) {
    if (std::optional<shard::v1::BatchBalance> figures = tally->Figures()) {
      *job->mutable_batch_balance() = *std::move(figures);
    }
  }
  return job;
}

TenantUsage CoordinatorService::UsageOf(const TenantLimits& tenant) {
  TenantUsage usage;
  usage.store_bytes = core_.rendezvous().BytesOf(tenant.jobs);
  usage.cost_bytes = core_.costs().TenantBytes(tenant.tenant);
  usage.waiting_calls = core_.waiting_calls().waiting_of(tenant.tenant);
  core_.Decide([&](LockedCore& core) {
    if (!core.CheckServing().ok()) return;
    tenant.jobs.ForEachMatch(core.state().jobs(), [&](const auto& job) {
      ++usage.jobs;
      usage.ranks += job.second->members.size();
    });
  });
  return usage;
}

CoordinatorFigures CoordinatorService::Figures() {
  CoordinatorFigures figures;
  figures.cached_orders = core_.orders().size();
  figures.order_bytes = core_.orders().bytes();
  figures.order_evictions = core_.orders().evictions();
  figures.idle_jobs_expired = membership_.idle_jobs_expired();
  figures.batch_windows_arranged = shards_.shared_windows().arranged();
  figures.rendezvous_bytes = core_.rendezvous().total_bytes();
  figures.cost_bytes = core_.costs().MemoryBytes();
  for (size_t kind = 0; kind < WaitingCalls::kKinds; ++kind) {
    figures.waiting_by_kind[kind] =
        core_.waiting_calls().waiting(static_cast<WaitingCalls::Kind>(kind));
  }
  figures.waiting_limit = core_.waiting_calls().limit();
  SourceCounterTable& by_source = shards_.source_counters();
  core_.Decide([&](LockedCore& core) {
    if (!core.CheckServing().ok()) return;
    figures.heartbeat_pace = membership_.CurrentPace(core);
    figures.jobs.reserve(core.state().jobs().size());
    absl::flat_hash_set<uint64_t> live;
    for (const auto& [id, job] : core.state().jobs()) {
      live.insert(job->incarnation);
      std::shared_ptr<const SourceCounters> counters =
          by_source.Find(job->incarnation);
      figures.jobs.push_back(
          {id, static_cast<uint32_t>(job->members.size()), job->world_size(),
           job->generation, job->committed_epoch, job->committed_position,
           counters != nullptr
               ? counters->Counts()
               : std::vector<std::pair<std::string, uint64_t>>{}});
    }
    by_source.Retain(live);
  });
  return figures;
}

}  // namespace shard::server

#include "server/coordinator_service.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/event_log.h"
#include "server/plan/job_spec.h"

namespace shard::server {
namespace {

using shard::state::v1::StateUpdate;

constexpr uint32_t kDefaultPreviewLimit = 1024;
constexpr uint32_t kMaxPreviewLimit = 1000000;

bool SameSpec(const shard::v1::JobSpec& a, const shard::v1::JobSpec& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

}  // namespace

shard::v1::Job JobView(const JobState& job) {
  shard::v1::Job view;
  view.set_job_id(job.job_id);
  *view.mutable_spec() = job.spec;
  view.set_generation(job.generation);
  view.set_joined_members(static_cast<uint32_t>(job.members.size()));
  view.set_samples_per_rank(plan::LayoutOf(job.spec).RankShardSize(0));
  view.set_committed_epoch(job.committed_epoch);
  view.set_committed_position(job.committed_position);
  view.set_current_world_size(job.world_size());
  return view;
}

CoordinatorService::CoordinatorService(CoordinatorOptions options)
    : CoordinatorService(
          options,
          storage::OpenedLog{
              storage::StateLog::InMemory(), CoordinatorState(), {}}) {}

CoordinatorService::CoordinatorService(CoordinatorOptions options,
                                       storage::OpenedLog opened)
    : options_(std::move(options)),
      state_(std::move(opened.state)),
      log_(std::move(opened.log)) {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, job] : state_.jobs()) {
    for (const std::string& member : job.members) RenewLease(id, member);
  }
  if (options_.expire_leases_in_background) {
    lease_thread_ = std::thread([this] { LeaseLoop(); });
  }
}

CoordinatorService::~CoordinatorService() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (lease_thread_.joinable()) lease_thread_.join();
}

void CoordinatorService::LeaseLoop() {
  absl::MutexLock lock(&mu_);
  auto stopping = [this]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
  while (
      !mu_.AwaitWithTimeout(absl::Condition(&stopping), options_.lease / 4)) {
    mu_.Unlock();
    ExpireLeases();
    mu_.Lock();
  }
}

void CoordinatorService::RenewLease(const std::string& job_id,
                                    const std::string& member_id) {
  last_seen_[{job_id, member_id}] = options_.now();
}

void CoordinatorService::ExpireLeases() {
  absl::MutexLock lock(&mu_);
  if (draining_) return;
  const absl::Time now = options_.now();
  std::vector<std::pair<std::string, std::string>> expired;
  for (const auto& [id, job] : state_.jobs()) {
    for (const std::string& member : job.members) {
      auto seen = last_seen_.find({id, member});
      if (seen == last_seen_.end()) {
        last_seen_[{id, member}] = now;
      } else if (now - seen->second > options_.lease) {
        expired.emplace_back(id, member);
      }
    }
  }
  for (const auto& [job_id, member_id] : expired) {
    absl::Status status =
        RemoveMember(job_id, member_id,
                     absl::StrCat("lease expired (no heartbeat for ",
                                  absl::FormatDuration(options_.lease), ")"));
    if (!status.ok()) {
      LogEvent(absl::StrCat("cannot remove member=", member_id, " job=", job_id,
                            ": ", status.message()));
    }
  }
}

absl::Status CoordinatorService::RemoveMember(const std::string& job_id,
                                              const std::string& member_id,
                                              absl::string_view reason) {
  const JobState* job = state_.FindJob(job_id);
  if (job == nullptr || !job->IsMember(member_id)) return absl::OkStatus();
  const bool ends_generation = job->RankOf(member_id).has_value();
  const uint64_t generation = job->generation;
  StateUpdate update;
  update.mutable_member_removed()->set_job_id(job_id);
  update.mutable_member_removed()->set_member_id(member_id);
  if (absl::Status s = Persist(update); !s.ok()) return s;
  last_seen_.erase({job_id, member_id});
  LogEvent(absl::StrCat(
      "member removed job=", job_id, " member=", member_id, " reason=", reason,
      ends_generation ? absl::StrCat(" generation=", generation, " ended")
                      : ""));
  if (ends_generation) rendezvous_.EndGeneration(job_id, generation);
  return MaybeFormWorld(job_id, /*admit_waiting=*/false);
}

absl::Status CoordinatorService::MaybeFormWorld(const std::string& job_id,
                                                bool admit_waiting) {
  const JobState* job = state_.FindJob(job_id);
  const shard::v1::JobSpec& spec = job->spec;
  size_t size;
  if (!job->world_formed()) {
    const size_t needed =
        job->generation == 0 ? spec.world_size() : spec.min_world_size();
    if (job->members.size() < needed) return absl::OkStatus();
    size = std::min<size_t>(job->members.size(), spec.max_world_size());
  } else {
    size = std::min<size_t>(job->members.size(), spec.max_world_size());
    if (!admit_waiting || size <= job->world.size()) return absl::OkStatus();
    rendezvous_.EndGeneration(job_id, job->generation);
  }
  StateUpdate update;
  auto* formed = update.mutable_generation_formed();
  formed->set_job_id(job_id);
  formed->set_generation(job->generation + 1);
  for (size_t i = 0; i < size; ++i) formed->add_members(job->members[i]);
  formed->set_epoch(job->committed_epoch);
  formed->set_base_position(job->committed_position);
  if (absl::Status s = Persist(update); !s.ok()) return s;
  LogEvent(absl::StrCat("generation formed job=", job_id,
                        " generation=", formed->generation(),
                        " world_size=", size, " epoch=", formed->epoch(),
                        " base_position=", formed->base_position()));
  return absl::OkStatus();
}

absl::StatusOr<plan::ShardLayout> CoordinatorService::LayoutFor(
    const JobState& job, uint64_t epoch) const {
  if (epoch < job.generation_epoch) {
    return absl::FailedPreconditionError(absl::StrCat(
        "epoch ", epoch, " of job \"", job.job_id,
        "\" was complete before generation ", job.generation,
        " formed (it starts at epoch ", job.generation_epoch, ")"));
  }
  return plan::LayoutOf(
      job.spec, job.world_size(),
      epoch == job.generation_epoch ? job.generation_base : 0);
}

absl::Status CoordinatorService::Persist(const StateUpdate& update) {
  if (absl::Status s = log_->Append(update); !s.ok()) return s;
  state_.Apply(update);
  log_->MaybeSnapshot(state_);
  return absl::OkStatus();
}

absl::Status CoordinatorService::CheckServing() const {
  if (draining_) {
    return absl::UnavailableError(
        "coordinator is draining; retry against its replacement");
  }
  return absl::OkStatus();
}

absl::StatusOr<const JobState*> CoordinatorService::FindJob(
    const std::string& job_id) const {
  const JobState* job = state_.FindJob(job_id);
  if (job == nullptr) {
    return absl::NotFoundError(absl::StrCat("job \"", job_id,
                                            "\" does not exist; create it "
                                            "first or join with a spec"));
  }
  return job;
}

absl::StatusOr<const JobState*> CoordinatorService::FindFormedJob(
    const std::string& job_id, uint64_t generation) const {
  absl::StatusOr<const JobState*> job = FindJob(job_id);
  if (!job.ok()) return job.status();
  const JobState& state = **job;
  if (!state.world_formed()) {
    if (generation == state.generation && generation > 0) {
      return absl::AbortedError(absl::StrCat(
          "generation ", generation, " of job \"", job_id,
          "\" ended (a member left or its lease expired): re-join"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "job \"", job_id, "\" has no formed world (", state.members.size(),
        " members joined); join and wait for the world first"));
  }
  if (generation != state.generation) {
    return absl::AbortedError(
        absl::StrCat("generation ", generation, " of job \"", job_id,
                     "\" is stale; the current generation is ",
                     state.generation, ": re-join"));
  }
  return job;
}

absl::StatusOr<const JobState*> CoordinatorService::CreateOrMatchJob(
    const std::string& job_id, const shard::v1::JobSpec& spec,
    absl::StatusCode conflict_code) {
  if (const JobState* existing = state_.FindJob(job_id)) {
    if (!SameSpec(existing->spec, spec)) {
      return absl::Status(
          conflict_code, absl::StrCat("job \"", job_id, "\" exists with spec {",
                                      plan::DescribeJobSpec(existing->spec),
                                      "}; the request asked for {",
                                      plan::DescribeJobSpec(spec), "}"));
    }
    return existing;
  }
  StateUpdate update;
  update.mutable_job_created()->set_job_id(job_id);
  *update.mutable_job_created()->mutable_spec() = spec;
  if (absl::Status s = Persist(update); !s.ok()) return s;
  LogEvent(absl::StrCat("job created job=", job_id, " ",
                        plan::DescribeJobSpec(spec)));
  return state_.FindJob(job_id);
}

absl::StatusOr<shard::v1::Job> CoordinatorService::CreateJob(
    const shard::v1::CreateJobRequest& request) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) return s;
  absl::StatusOr<shard::v1::JobSpec> spec =
      plan::NormalizeJobSpec(request.spec(), options_.max_order_bytes);
  if (!spec.ok()) return spec.status();

  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  absl::StatusOr<const JobState*> job = CreateOrMatchJob(
      request.job_id(), *spec, absl::StatusCode::kAlreadyExists);
  if (!job.ok()) return job.status();
  return JobView(**job);
}

absl::StatusOr<shard::v1::Job> CoordinatorService::GetJob(
    const shard::v1::GetJobRequest& request) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  absl::StatusOr<const JobState*> job = FindJob(request.job_id());
  if (!job.ok()) return job.status();
  return JobView(**job);
}

absl::StatusOr<shard::v1::ListJobsResponse> CoordinatorService::ListJobs(
    const shard::v1::ListJobsRequest&) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  shard::v1::ListJobsResponse response;
  for (const auto& [id, job] : state_.jobs()) {
    *response.add_jobs() = JobView(job);
  }
  return response;
}

absl::StatusOr<shard::v1::JoinJobResponse> CoordinatorService::JoinJob(
    const shard::v1::JoinJobRequest& request, absl::Time call_deadline) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) return s;
  if (absl::Status s = plan::ValidateMemberId(request.member_id()); !s.ok()) {
    return s;
  }
  std::optional<shard::v1::JobSpec> spec;
  if (request.has_spec()) {
    absl::StatusOr<shard::v1::JobSpec> normal =
        plan::NormalizeJobSpec(request.spec(), options_.max_order_bytes);
    if (!normal.ok()) return normal.status();
    spec = *normal;
  }
  const absl::Duration wait = std::min(
      absl::Milliseconds(request.wait_for_world_ms()), options_.max_join_wait);
  const absl::Time deadline = std::min(absl::Now() + wait, call_deadline);
  const std::string& job_id = request.job_id();
  const std::string& member_id = request.member_id();

  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  absl::StatusOr<const JobState*> job =
      spec ? CreateOrMatchJob(job_id, *spec,
                              absl::StatusCode::kFailedPrecondition)
           : FindJob(job_id);
  if (!job.ok()) return job.status();

  const auto member_key = std::make_pair(job_id, member_id);
  if (request.incarnation() != 0) {
    auto known = incarnations_.find(member_key);
    if (known != incarnations_.end() &&
        known->second != request.incarnation() && (*job)->IsMember(member_id)) {
      if (absl::Status s =
              RemoveMember(job_id, member_id, "restarted (new incarnation)");
          !s.ok()) {
        return s;
      }
      job = FindJob(job_id);
      if (!job.ok()) return job.status();
    }
    incarnations_[member_key] = request.incarnation();
  }
  if (!(*job)->IsMember(member_id)) {
    if ((*job)->members.size() >= (*job)->spec.max_world_size()) {
      return absl::FailedPreconditionError(
          absl::StrCat("job \"", job_id, "\" already has its ",
                       (*job)->spec.max_world_size(), " members; member \"",
                       member_id, "\" is not one of them"));
    }
    StateUpdate update;
    update.mutable_member_joined()->set_job_id(job_id);
    update.mutable_member_joined()->set_member_id(member_id);
    if (absl::Status s = Persist(update); !s.ok()) return s;
    const JobState* joined = state_.FindJob(job_id);
    LogEvent(absl::StrCat("member joined job=", job_id, " member=", member_id,
                          " members=", joined->members.size(), "/",
                          joined->spec.world_size()));
    if (absl::Status s = MaybeFormWorld(job_id, /*admit_waiting=*/false);
        !s.ok()) {
      return s;
    }
  }
  RenewLease(job_id, member_id);

  auto in_world_or_draining =
      [this, &job_id, &member_id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        const JobState* current = state_.FindJob(job_id);
        return draining_ || current == nullptr ||
               !current->IsMember(member_id) ||
               current->RankOf(member_id).has_value();
      };
  mu_.AwaitWithDeadline(absl::Condition(&in_world_or_draining), deadline);
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  absl::StatusOr<const JobState*> current = FindJob(job_id);
  if (!current.ok()) return current.status();
  const JobState& state = **current;
  if (!state.IsMember(member_id)) {
    return absl::AbortedError(absl::StrCat("member \"", member_id,
                                           "\" was removed from job \"", job_id,
                                           "\" while waiting; join again"));
  }
  RenewLease(job_id, member_id);
  const std::optional<uint32_t> rank = state.RankOf(member_id);
  if (!rank && request.wait_for_world_ms() > 0) {
    return absl::DeadlineExceededError(absl::StrCat(
        "job \"", job_id, "\" has no world including member \"", member_id,
        "\" after waiting (", state.members.size(),
        " members joined; the member stays joined, join again to keep "
        "waiting)"));
  }
  shard::v1::JoinJobResponse response;
  response.set_rank(rank.value_or(0));
  response.set_world_size(rank ? state.world_size() : 0);
  response.set_generation(state.generation);
  response.set_world_formed(rank.has_value());
  *response.mutable_spec() = state.spec;
  response.set_committed_epoch(state.committed_epoch);
  response.set_committed_position(state.committed_position);
  return response;
}

absl::StatusOr<ShardCursor> CoordinatorService::OpenShard(
    const shard::v1::StreamShardRequest& request, absl::Time call_deadline) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) return s;
  if (absl::Status s = plan::ValidateEpoch(request.epoch()); !s.ok()) return s;
  shard::v1::JobSpec spec;
  std::optional<plan::ShardLayout> found_layout;
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = CheckServing(); !s.ok()) return s;
    absl::StatusOr<const JobState*> job =
        FindFormedJob(request.job_id(), request.generation());
    if (!job.ok()) return job.status();
    spec = (*job)->spec;
    absl::StatusOr<plan::ShardLayout> layout =
        LayoutFor(**job, request.epoch());
    if (!layout.ok()) return layout.status();
    found_layout = *layout;
  }
  const plan::ShardLayout& layout = *found_layout;
  if (request.rank() >= layout.world_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", request.rank(),
                     " is out of range for world size ", layout.world_size()));
  }
  if (request.start_position() > layout.total()) {
    return absl::OutOfRangeError(
        absl::StrCat("start_position ", request.start_position(),
                     " is past the end of epoch ", request.epoch(), " (",
                     layout.total(), " positions)"));
  }
  if (!layout.IsRoundBoundary(request.start_position())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "start_position ", request.start_position(), " must be ", layout.base(),
        " plus a multiple of the world size ", layout.world_size()));
  }
  absl::StatusOr<std::shared_ptr<const plan::EpochOrder>> order =
      orders_.Get(request.job_id(), spec, request.epoch(), call_deadline);
  if (!order.ok()) return order.status();
  uint32_t chunk =
      request.max_chunk_indices() == 0
          ? options_.default_chunk_indices
          : std::min(request.max_chunk_indices(), options_.max_chunk_indices);
  const uint64_t offset =
      std::min((request.start_position() - layout.base()) / layout.world_size(),
               layout.RankShardSize(request.rank()));
  return ShardCursor(*std::move(order), layout, request.rank(), offset, chunk);
}

absl::StatusOr<shard::v1::PreviewShardResponse>
CoordinatorService::PreviewShard(const shard::v1::PreviewShardRequest& request,
                                 absl::Time call_deadline) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) return s;
  if (absl::Status s = plan::ValidateEpoch(request.epoch()); !s.ok()) return s;
  if (request.limit() > kMaxPreviewLimit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "limit must be at most ", kMaxPreviewLimit, ", got ", request.limit()));
  }
  shard::v1::JobSpec spec;
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = CheckServing(); !s.ok()) return s;
    absl::StatusOr<const JobState*> job = FindJob(request.job_id());
    if (!job.ok()) return job.status();
    spec = (*job)->spec;
  }
  if (request.rank() >= spec.world_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", request.rank(),
                     " is out of range for world size ", spec.world_size()));
  }
  const plan::ShardLayout layout = plan::LayoutOf(spec);
  const uint64_t shard_size = layout.RankShardSize(request.rank());
  if (request.offset() > shard_size) {
    return absl::OutOfRangeError(
        absl::StrCat("offset ", request.offset(), " is past the end of rank ",
                     request.rank(), "'s shard (", shard_size, " indices)"));
  }
  absl::StatusOr<std::shared_ptr<const plan::EpochOrder>> order =
      orders_.Get(request.job_id(), spec, request.epoch(), call_deadline);
  if (!order.ok()) return order.status();
  const uint32_t limit =
      request.limit() == 0 ? kDefaultPreviewLimit : request.limit();
  ShardCursor cursor(*std::move(order), layout, request.rank(),
                     request.offset(), limit);
  shard::v1::IndexChunk chunk;
  cursor.Next(&chunk);
  shard::v1::PreviewShardResponse response;
  response.mutable_indices()->Swap(chunk.mutable_indices());
  response.set_rank_shard_size(shard_size);
  return response;
}

absl::StatusOr<shard::v1::CommitProgressResponse>
CoordinatorService::CommitProgress(
    const shard::v1::CommitProgressRequest& request) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) return s;
  if (absl::Status s = plan::ValidateEpoch(request.epoch()); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  absl::StatusOr<const JobState*> job =
      FindFormedJob(request.job_id(), request.generation());
  if (!job.ok()) return job.status();
  const JobState& state = **job;
  absl::StatusOr<plan::ShardLayout> found = LayoutFor(state, request.epoch());
  if (!found.ok()) return found.status();
  const plan::ShardLayout& layout = *found;
  if (!layout.IsRoundBoundary(request.position())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "position ", request.position(), " must be ", layout.base(),
        " plus a multiple of the world size ", layout.world_size(),
        " and at most the epoch length ", layout.total()));
  }
  // A complete epoch is the start of the next one.
  uint64_t epoch = request.epoch();
  uint64_t position = request.position();
  if (position == layout.total() && epoch < plan::kMaxEpoch) {
    ++epoch;
    position = 0;
  }
  const auto stored =
      std::make_pair(state.committed_epoch, state.committed_position);
  if (std::make_pair(epoch, position) < stored) {
    return absl::FailedPreconditionError(absl::StrCat(
        "commit of epoch ", request.epoch(), " position ", request.position(),
        " would go back from the committed epoch ", stored.first, " position ",
        stored.second));
  }
  if (std::make_pair(epoch, position) != stored) {
    StateUpdate update;
    update.mutable_progress_committed()->set_job_id(request.job_id());
    update.mutable_progress_committed()->set_epoch(epoch);
    update.mutable_progress_committed()->set_position(position);
    if (absl::Status s = Persist(update); !s.ok()) return s;
    LogEvent(absl::StrCat("progress committed job=", request.job_id(),
                          " generation=", request.generation(),
                          " epoch=", epoch, " position=", position));
  }
  // Members waiting to join an elastic job are admitted at commit points.
  if (absl::Status s = MaybeFormWorld(request.job_id(), /*admit_waiting=*/true);
      !s.ok()) {
    return s;
  }
  shard::v1::CommitProgressResponse response;
  response.set_committed_epoch(epoch);
  response.set_committed_position(position);
  response.set_generation(state_.FindJob(request.job_id())->generation);
  return response;
}

absl::StatusOr<shard::v1::HeartbeatResponse> CoordinatorService::Heartbeat(
    const shard::v1::HeartbeatRequest& request) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  absl::StatusOr<const JobState*> job = FindJob(request.job_id());
  if (!job.ok()) return job.status();
  if (!(*job)->IsMember(request.member_id())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "member \"", request.member_id(), "\" is not part of job \"",
        request.job_id(), "\" (it left or its lease expired): re-join"));
  }
  RenewLease(request.job_id(), request.member_id());
  absl::StatusOr<const JobState*> formed =
      FindFormedJob(request.job_id(), request.generation());
  if (!formed.ok()) return formed.status();
  shard::v1::HeartbeatResponse response;
  response.set_generation((*formed)->generation);
  return response;
}

absl::StatusOr<shard::v1::LeaveResponse> CoordinatorService::Leave(
    const shard::v1::LeaveRequest& request) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  absl::StatusOr<const JobState*> job = FindJob(request.job_id());
  if (!job.ok()) return job.status();
  if (absl::Status s =
          RemoveMember(request.job_id(), request.member_id(), "left");
      !s.ok()) {
    return s;
  }
  return shard::v1::LeaveResponse();
}

absl::StatusOr<RendezvousStore::Scope> CoordinatorService::CheckScope(
    const shard::v1::StoreScope& scope) {
  if (absl::Status s = plan::ValidateJobId(scope.job_id()); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  absl::StatusOr<const JobState*> job =
      FindFormedJob(scope.job_id(), scope.generation());
  if (!job.ok()) return job.status();
  return RendezvousStore::Scope(scope.job_id(), scope.generation());
}

namespace {

// Deadline of a store wait: wait_ms from now, bounded by the call.
absl::Time StoreDeadline(uint32_t wait_ms, absl::Time call_deadline) {
  return std::min(absl::Now() + absl::Milliseconds(wait_ms), call_deadline);
}

}  // namespace

absl::StatusOr<shard::v1::StoreSetResponse> CoordinatorService::StoreSet(
    const shard::v1::StoreSetRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::Status status = rendezvous_.Set(*scope, request.key(), request.value());
  if (!status.ok()) return status;
  return shard::v1::StoreSetResponse();
}

absl::StatusOr<shard::v1::StoreGetResponse> CoordinatorService::StoreGet(
    const shard::v1::StoreGetRequest& request, absl::Time call_deadline) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::StatusOr<std::optional<std::string>> value = rendezvous_.Get(
      *scope, request.key(), StoreDeadline(request.wait_ms(), call_deadline));
  if (!value.ok()) return value.status();
  shard::v1::StoreGetResponse response;
  response.set_found(value->has_value());
  if (value->has_value()) response.set_value(**value);
  return response;
}

absl::StatusOr<shard::v1::StoreAddResponse> CoordinatorService::StoreAdd(
    const shard::v1::StoreAddRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::StatusOr<int64_t> value =
      rendezvous_.Add(*scope, request.key(), request.delta());
  if (!value.ok()) return value.status();
  shard::v1::StoreAddResponse response;
  response.set_value(*value);
  return response;
}

absl::StatusOr<shard::v1::StoreCompareSetResponse>
CoordinatorService::StoreCompareSet(
    const shard::v1::StoreCompareSetRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::StatusOr<std::string> value = rendezvous_.CompareSet(
      *scope, request.key(), request.expected(), request.desired());
  if (!value.ok()) return value.status();
  shard::v1::StoreCompareSetResponse response;
  response.set_value(*value);
  return response;
}

absl::StatusOr<shard::v1::StoreWaitResponse> CoordinatorService::StoreWait(
    const shard::v1::StoreWaitRequest& request, absl::Time call_deadline) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::StatusOr<bool> ready =
      rendezvous_.Wait(*scope, {request.keys().begin(), request.keys().end()},
                       StoreDeadline(request.wait_ms(), call_deadline));
  if (!ready.ok()) return ready.status();
  shard::v1::StoreWaitResponse response;
  response.set_ready(*ready);
  return response;
}

absl::StatusOr<shard::v1::StoreDeleteResponse> CoordinatorService::StoreDelete(
    const shard::v1::StoreDeleteRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::StatusOr<bool> deleted = rendezvous_.Delete(*scope, request.key());
  if (!deleted.ok()) return deleted.status();
  shard::v1::StoreDeleteResponse response;
  response.set_deleted(*deleted);
  return response;
}

absl::StatusOr<shard::v1::StoreCountResponse> CoordinatorService::StoreCount(
    const shard::v1::StoreCountRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  shard::v1::StoreCountResponse response;
  response.set_count(rendezvous_.Count(*scope));
  return response;
}

void CoordinatorService::Drain() {
  {
    absl::MutexLock lock(&mu_);
    draining_ = true;
  }
  rendezvous_.Drain();
}

}  // namespace shard::server

#include "server/coordinator_service.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/plan/job_spec.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/event_log.h"

namespace shard::server {
namespace {

using shard::state::v1::StateUpdate;

bool SameSpec(const shard::v1::JobSpec& a, const shard::v1::JobSpec& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

}  // namespace

JobIncarnation IncarnationOf(const JobState& job) {
  return {job.job_id, job.incarnation};
}

shard::v1::Job JobView(const JobState& job) {
  shard::v1::Job view;
  view.set_job_id(job.job_id);
  view.set_incarnation(job.incarnation);
  *view.mutable_spec() = job.spec;
  view.set_generation(job.generation);
  view.set_joined_members(static_cast<uint32_t>(job.members.size()));
  view.set_samples_per_rank(plan::LayoutOf(job.spec).RankShardSize(0));
  view.set_committed_epoch(job.committed_epoch);
  view.set_committed_position(job.committed_position);
  view.set_current_world_size(job.world_size());
  for (const std::string& member_id : job.members) {
    shard::v1::JobMember* member = view.add_members();
    member->set_member_id(member_id);
    if (std::optional<uint32_t> rank = job.RankOf(member_id)) {
      member->set_in_world(true);
      member->set_rank(*rank);
    }
    member->set_awaiting_rejoin(job.AwaitsRejoin(member_id));
  }
  return view;
}

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
    : options_(std::move(options)),
      orders_(/*compute_threads=*/2, options_.order_cache_bytes),
      rendezvous_(options_.rendezvous),
      waiting_calls_(options_.max_waiting_calls),
      store_service_(&rendezvous_, &waiting_calls_, options_.max_wait,
                     [this](const shard::v1::StoreScope& scope) {
                       return CheckStoreScope(scope);
                     }),
      log_(std::move(store)),
      writes_(std::move(recovered), log_.get()),
      leases_(options_.now) {
  absl::MutexLock lock(&mu_);
  store_lost_through_ = state().last_generation();
  std::vector<std::string> job_ids;
  for (const auto& [id, job] : state().jobs()) {
    job_ids.push_back(id);
    for (const std::string& member : job.members) leases_.Renew(id, member);
    if (job.world_formed()) rendezvous_.OpenGeneration({id, job.generation});
    // A job with members has trainers coming back: prepare where they
    // continue (jobs nobody trains are left to compute on demand).
    if (!job.members.empty()) {
      orders_.Prepare(IncarnationOf(job), job.spec, job.committed_epoch);
    }
  }
  // Recovery may stop between a membership change and the world it allows.
  for (const std::string& id : job_ids) {
    if (absl::Status s = MaybeFormWorld(id, FormedWorld::kKeep); !s.ok()) {
      LogEvent(
          absl::StrCat("cannot form the world of job=", id, ": ", s.message()));
    }
  }
  if (options_.expire_leases_in_background) {
    lease_thread_ = std::thread([this] { LeaseLoop(); });
  }
}

CoordinatorService::~CoordinatorService() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    parked_.EndAll();
  }
  if (lease_thread_.joinable()) lease_thread_.join();
}

absl::StatusOr<const JobState*> CoordinatorService::FindJob(
    const std::string& job_id) const {
  const JobState* job = state().FindJob(job_id);
  if (job != nullptr) leases_.TouchJob(job_id);
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
  if (absl::Status s = CheckNotFromEarlierJob(state, generation); !s.ok()) {
    return s;
  }
  if (!state.world_formed()) {
    if (generation == state.generation && generation > 0) {
      return absl::AbortedError(absl::StrCat(
          "generation ", generation, " of job \"", job_id,
          "\" ended (a member left or its lease expired): re-join to keep "
          "training; a member whose training is done can stop"));
    }
    if (generation != 0) {
      return absl::AbortedError(absl::StrCat(
          "generation ", generation, " of job \"", job_id,
          "\" is stale and the next world has not formed yet: re-join"));
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

absl::Status CoordinatorService::CheckStoreScope(
    const shard::v1::StoreScope& scope) const {
  if (absl::Status s = plan::ValidateJobId(scope.job_id()); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  if (absl::Status s =
          FindFormedJob(scope.job_id(), scope.generation()).status();
      !s.ok()) {
    return s;
  }
  if (scope.generation() <= store_lost_through_) {
    return absl::AbortedError(absl::StrCat(
        "the rendezvous keys of generation ", scope.generation(), " of job ",
        scope.job_id(),
        " did not survive the coordinator's restart or failover (they live "
        "in memory); join again to form the process group in a new "
        "generation"));
  }
  return absl::OkStatus();
}

bool CoordinatorService::LostRendezvousOf(const JobState& job,
                                          const std::string& member_id) const {
  return job.world_formed() && job.generation <= store_lost_through_ &&
         job.RankOf(member_id).has_value();
}

absl::Status CoordinatorService::CheckNotFromEarlierJob(const JobState& job,
                                                        uint64_t generation) {
  if (!job.PredatesJob(generation)) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat(
      "generation ", generation, " belongs to an earlier job \"", job.job_id,
      "\" that was deleted; the job of that id now was created after it "
      "(incarnation ",
      job.incarnation, "): this process must stop, not re-join"));
}

absl::Status CoordinatorService::CheckJoinedIncarnation(
    const std::string& job_id, uint64_t joined_incarnation) const {
  if (joined_incarnation == 0) return absl::OkStatus();
  const JobState* job = state().FindJob(job_id);
  if (job != nullptr && job->incarnation == joined_incarnation) {
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat(
      "job \"", job_id,
      "\" was deleted (this process was a member of its "
      "incarnation ",
      joined_incarnation, "; ",
      job == nullptr ? std::string("no job of that id exists now")
                     : absl::StrCat("the job of that id now is incarnation ",
                                    job->incarnation),
      "): this process must stop, not re-join"));
}

absl::StatusOr<const JobState*> CoordinatorService::CreateOrMatchJob(
    const std::string& job_id, const shard::v1::JobSpec& spec,
    absl::StatusCode conflict_code) {
  if (const JobState* existing = state().FindJob(job_id)) {
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
  if (absl::Status s = writes_.Persist(update); !s.ok()) return s;
  LogEvent(absl::StrCat("job created job=", job_id, " ",
                        plan::DescribeJobSpec(spec)));
  const JobState* created = state().FindJob(job_id);
  // Its trainers are about to join: have epoch 0 ready when they stream.
  orders_.Prepare(IncarnationOf(*created), created->spec, 0);
  return created;
}

void CoordinatorService::StartCreateJob(
    const shard::v1::CreateJobRequest& request, Reply<shard::v1::Job> reply) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) {
    return std::move(reply)(s);
  }
  absl::StatusOr<shard::v1::JobSpec> spec =
      plan::NormalizeJobSpec(request.spec(), options_.max_order_bytes);
  if (!spec.ok()) return std::move(reply)(spec.status());
  Mutate<shard::v1::Job>(
      std::move(reply),
      [&]()
          ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::StatusOr<shard::v1::Job> {
            absl::StatusOr<const JobState*> job = CreateOrMatchJob(
                request.job_id(), *spec, absl::StatusCode::kAlreadyExists);
            if (!job.ok()) return job.status();
            return JobView(**job);
          });
}

void CoordinatorService::StartDeleteJob(
    const shard::v1::DeleteJobRequest& request,
    Reply<shard::v1::DeleteJobResponse> reply) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) {
    return std::move(reply)(s);
  }
  Mutate<shard::v1::DeleteJobResponse>(
      std::move(reply),
      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(
          mu_) -> absl::StatusOr<shard::v1::DeleteJobResponse> {
        absl::StatusOr<const JobState*> job = FindJob(request.job_id());
        if (!job.ok()) return job.status();
        if (!(*job)->members.empty() && !request.force()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "job \"", request.job_id(), "\" has ", (*job)->members.size(),
              " joined members; stop them first or delete with force"));
        }
        if (absl::Status s = EraseJob(request.job_id(), "DeleteJob"); !s.ok()) {
          return s;
        }
        return shard::v1::DeleteJobResponse();
      });
}

absl::Status CoordinatorService::EraseJob(const std::string& job_id,
                                          absl::string_view reason) {
  const uint64_t incarnation = state().FindJob(job_id)->incarnation;
  shard::state::v1::StateUpdate update;
  update.mutable_job_deleted()->set_job_id(job_id);
  if (absl::Status s = writes_.Persist(update); !s.ok()) return s;
  leases_.ForgetJob(job_id);
  rendezvous_.EndJob(job_id);
  orders_.Forget(incarnation);
  parked_.Wake(job_id);
  LogEvent(absl::StrCat("job ", job_id, " deleted reason=", reason));
  return absl::OkStatus();
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
  for (const auto& [id, job] : state().jobs()) {
    *response.add_jobs() = JobView(job);
  }
  return response;
}

ParkedCalls::Handle CoordinatorService::StartJoinJob(
    const shard::v1::JoinJobRequest& request, absl::Time call_deadline,
    Reply<shard::v1::JoinJobResponse> reply) {
  const absl::Time deadline = WaitDeadline(request.wait_for_world_ms(),
                                           options_.max_wait, call_deadline);
  const std::string& job_id = request.job_id();
  const std::string& member_id = request.member_id();
  const bool wait_asked = request.wait_for_world_ms() > 0;
  absl::StatusOr<shard::v1::JoinJobResponse> answer;
  uint64_t journaled;
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = AddMember(request); !s.ok()) {
      answer = s;
    } else if (!wait_asked || JoinSettled(job_id, member_id)) {
      answer = JoinAnswer(job_id, member_id, wait_asked);
    } else if (absl::StatusOr<WaitingCalls::Slot> slot =
                   waiting_calls_.Enter(WaitingCalls::Kind::kJoin);
               !slot.ok()) {
      answer = slot.status();
    } else {
      // A member waiting for its world is alive: its lease does not run
      // out however long the other ranks take to arrive.
      leases_.BeginWait(job_id, member_id);
      return parked_.Park(job_id, deadline,
                          ParkedJoin{this, job_id, member_id, *std::move(slot),
                                     std::move(reply)});
    }
    journaled = writes_.journaled();
  }
  ReplyWhenDurable(*log_, journaled, std::move(reply), std::move(answer));
  return ParkedCalls::Handle();
}

std::optional<ParkedCalls::Completion>
CoordinatorService::ParkedJoin::operator()(ParkedCalls::Why why) {
  if (why == ParkedCalls::Why::kWoken &&
      !service->JoinSettled(job_id, member_id)) {
    return std::nullopt;
  }
  service->leases_.EndWait(job_id, member_id);
  // The call stops waiting now, before its answer reaches the client, so
  // that a client which waits again at once finds its slot free.
  const WaitingCalls::Slot stopped_waiting = std::move(slot);
  absl::StatusOr<shard::v1::JoinJobResponse> answer;
  switch (why) {
    case ParkedCalls::Why::kCancelled:
      answer = absl::CancelledError("the client cancelled the join");
      break;
    case ParkedCalls::Why::kEnded:
      answer = absl::UnavailableError("coordinator is shutting down");
      break;
    default:
      answer = service->JoinAnswer(job_id, member_id, /*waited=*/true);
  }
  return [log = service->log_.get(), journaled = service->writes_.journaled(),
          reply = std::move(reply), answer = std::move(answer)]() mutable {
    ReplyWhenDurable(*log, journaled, std::move(reply), std::move(answer));
  };
}

absl::Status CoordinatorService::AddMember(
    const shard::v1::JoinJobRequest& request) {
  const std::string& job_id = request.job_id();
  const std::string& member_id = request.member_id();
  if (absl::Status s = plan::ValidateJobId(job_id); !s.ok()) return s;
  if (absl::Status s = plan::ValidateMemberId(member_id); !s.ok()) return s;
  std::optional<shard::v1::JobSpec> spec;
  if (request.has_spec()) {
    absl::StatusOr<shard::v1::JobSpec> normal =
        plan::NormalizeJobSpec(request.spec(), options_.max_order_bytes);
    if (!normal.ok()) return normal.status();
    spec = *normal;
  }
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  if (absl::Status s =
          CheckJoinedIncarnation(job_id, request.job_incarnation());
      !s.ok()) {
    return s;
  }
  absl::StatusOr<const JobState*> job =
      spec ? CreateOrMatchJob(job_id, *spec,
                              absl::StatusCode::kFailedPrecondition)
           : FindJob(job_id);
  if (!job.ok()) return job.status();

  // A member joining from a restarted process (another incarnation than
  // the durable one it joined with) ends its generation and joins anew.
  const uint64_t known = (*job)->IncarnationOf(member_id);
  if (request.incarnation() != 0 && known != 0 &&
      known != request.incarnation()) {
    if (absl::Status s =
            RemoveMember(job_id, member_id, "restarted (new incarnation)");
        !s.ok()) {
      return s;
    }
    job = FindJob(job_id);
    if (!job.ok()) return job.status();
  }
  // A member awaiting re-join (its world ended) joining again counts for
  // the next world again.
  if (!(*job)->IsMember(member_id) || (*job)->AwaitsRejoin(member_id)) {
    // CoordinatorState::Check refuses a member past max_world_size.
    StateUpdate update;
    update.mutable_member_joined()->set_job_id(job_id);
    update.mutable_member_joined()->set_member_id(member_id);
    update.mutable_member_joined()->set_incarnation(request.incarnation());
    if (request.has_requested_rank()) {
      update.mutable_member_joined()->set_requested_rank(
          request.requested_rank());
    }
    if (absl::Status s = writes_.Persist(update); !s.ok()) return s;
    const JobState* joined = state().FindJob(job_id);
    LogEvent(absl::StrCat("member joined job=", job_id, " member=", member_id,
                          " members=", joined->members.size(), "/",
                          joined->spec.world_size()));
  }
  // Also for a repeated join: a crash between journaling a membership change
  // and the GenerationFormed it allows must not leave the world unformed.
  // A member of a world whose rendezvous keys were lost joins again to form
  // its process group: the world is renewed, so every member forms its
  // group afresh in the next generation (the others learn it by ABORTED).
  if (absl::Status s = MaybeFormWorld(
          job_id, LostRendezvousOf(*state().FindJob(job_id), member_id)
                      ? FormedWorld::kRenew
                      : FormedWorld::kKeep);
      !s.ok()) {
    return s;
  }
  leases_.Renew(job_id, member_id);
  return absl::OkStatus();
}

bool CoordinatorService::JoinSettled(const std::string& job_id,
                                     const std::string& member_id) const {
  const JobState* job = state().FindJob(job_id);
  return !CheckServing().ok() || job == nullptr || !job->IsMember(member_id) ||
         job->RankOf(member_id).has_value();
}

absl::StatusOr<shard::v1::JoinJobResponse> CoordinatorService::JoinAnswer(
    const std::string& job_id, const std::string& member_id, bool waited) {
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  absl::StatusOr<const JobState*> current = FindJob(job_id);
  if (!current.ok()) return current.status();
  const JobState& state = **current;
  if (!state.IsMember(member_id)) {
    return absl::AbortedError(absl::StrCat("member \"", member_id,
                                           "\" was removed from job \"", job_id,
                                           "\" while waiting; join again"));
  }
  leases_.Renew(job_id, member_id);
  const std::optional<uint32_t> rank = state.RankOf(member_id);
  if (!rank && waited) {
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
  response.set_job_incarnation(state.incarnation);
  return response;
}

void CoordinatorService::StartCommitProgress(
    const shard::v1::CommitProgressRequest& request,
    Reply<shard::v1::CommitProgressResponse> reply) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) {
    return std::move(reply)(s);
  }
  if (absl::Status s = plan::ValidateEpoch(request.epoch()); !s.ok()) {
    return std::move(reply)(s);
  }
  Mutate<shard::v1::CommitProgressResponse>(
      std::move(reply), [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return CommitLocked(request);
      });
}

absl::StatusOr<shard::v1::CommitProgressResponse>
CoordinatorService::CommitLocked(
    const shard::v1::CommitProgressRequest& request) {
  absl::StatusOr<const JobState*> job =
      FindFormedJob(request.job_id(), request.generation());
  if (!job.ok()) return job.status();
  const JobState& job_state = **job;
  absl::StatusOr<plan::ShardLayout> found =
      LayoutFor(job_state, request.epoch());
  if (!found.ok()) return found.status();
  const plan::ShardLayout& layout = *found;
  // Request shape against the world's layout (the position is turned into
  // the stored form below, so it must be checked first).
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
  const uint64_t stored_epoch = job_state.committed_epoch;
  if (std::make_pair(epoch, position) !=
      std::make_pair(stored_epoch, job_state.committed_position)) {
    // CoordinatorState::Check refuses progress that goes back.
    StateUpdate update;
    update.mutable_progress_committed()->set_job_id(request.job_id());
    update.mutable_progress_committed()->set_epoch(epoch);
    update.mutable_progress_committed()->set_position(position);
    if (absl::Status s = writes_.Persist(update); !s.ok()) return s;
    LogEvent(absl::StrCat("progress committed job=", request.job_id(),
                          " generation=", request.generation(),
                          " epoch=", epoch, " position=", position));
    // No rank resumes before the committed epoch: release older orders
    // (and prepare the next one).
    const JobState& committed = *state().FindJob(request.job_id());
    if (epoch > stored_epoch) {
      orders_.ReleaseBefore(IncarnationOf(committed), committed.spec, epoch);
    }
  }
  // Members waiting to join an elastic job are admitted at commit points.
  if (absl::Status s = MaybeFormWorld(request.job_id(), FormedWorld::kGrow);
      !s.ok()) {
    return s;
  }
  shard::v1::CommitProgressResponse response;
  response.set_committed_epoch(epoch);
  response.set_committed_position(position);
  response.set_generation(state().FindJob(request.job_id())->generation);
  return response;
}

void CoordinatorService::Drain() {
  {
    absl::MutexLock lock(&mu_);
    writes_.Drain();
    parked_.WakeAll();
  }
  rendezvous_.Drain();
  // Streams and previews waiting for order memory are answered now, and
  // preparations of next epochs end.
  orders_.Stop();
}

}  // namespace shard::server

#include "shard/client/coordinator_client.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/awaited_world.h"
#include "client/grpc_status.h"
#include "grpcpp/grpcpp.h"
#include "shard/client/coordinator_channel.h"

namespace shard::client {
namespace {

using Stub = shard::v1::Coordinator::Stub;

// One unary call with retries of UNAVAILABLE (each moving on to the
// replica that leads, see CoordinatorReplicas); each attempt has `timeout`.
template <typename Request, typename Response>
absl::StatusOr<Response> CallWithRetry(
    CoordinatorReplicas& replicas,
    grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                 Response*),
    const char* name, const Request& request, absl::Duration timeout,
    const RetryPolicy& retry) {
  Response response;
  absl::Status status = RetryUnavailable(
      retry,
      [&]() -> absl::Status {
        grpc::ClientContext context;
        context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
        const CoordinatorReplicas::Pick replica = replicas.Current();
        // This client never cancels its unary calls.
        const absl::Status status = ServerCancelledAsUnavailable(FromGrpcStatus(
            ((*replica.stub).*method)(&context, request, &response), name));
        if (!absl::IsUnavailable(status)) {
          replicas.Answered(replica, context);
        } else if (replicas.Failed(replica, context)) {
          return MarkedRetrySoon(status);
        }
        return status;
      },
      [&replicas](absl::Duration pause) { replicas.PauseBeforeRetry(pause); });
  if (!status.ok()) return status;
  return response;
}

shard::v1::StoreScope ScopeOf(const Membership& membership) {
  shard::v1::StoreScope scope;
  scope.set_job_id(membership.job_id);
  scope.set_generation(membership.generation);
  scope.set_member_id(membership.member_id);
  scope.set_incarnation(membership.incarnation);
  return scope;
}

// A store call that waits (StoreGet, StoreWait). The coordinator bounds
// each wait a call asks for (shardd --max-wait): repeats `call(request,
// left)` with the time left until `done` holds for its answer, it fails,
// or `wait` is spent, so that the caller's own timeout is what counts.
template <typename Request, typename Call, typename Done>
auto WaitInRounds(Request request, absl::Duration wait, Call call, Done done) {
  const absl::Time until = absl::Now() + wait;
  while (true) {
    const absl::Duration left =
        std::max(absl::ZeroDuration(), until - absl::Now());
    request.set_wait_ms(static_cast<uint32_t>(
        std::clamp<int64_t>(absl::ToInt64Milliseconds(left), 0, UINT32_MAX)));
    auto response = call(request, left);
    if (!response.ok() || done(*response) || absl::Now() >= until) {
      return response;
    }
  }
}

}  // namespace

template <typename Request, typename Response>
absl::StatusOr<Response> CoordinatorClient::Call(
    grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                 Response*),
    const char* name, const Request& request, Attempts attempts,
    absl::Duration extra) {
  RetryPolicy retry = options_.retry;
  if (attempts == Attempts::kOnce) retry.deadline = absl::ZeroDuration();
  return CallWithRetry(*replicas_, method, name, request,
                       options_.rpc_timeout + extra, retry);
}

absl::StatusOr<std::unique_ptr<CoordinatorClient>> CoordinatorClient::Connect(
    const ClientOptions& options) {
  absl::StatusOr<std::shared_ptr<CoordinatorReplicas>> replicas =
      CoordinatorReplicas::Open(options.address, options.security,
                                kMaxReceiveBytes);
  if (!replicas.ok()) return replicas.status();
  return std::unique_ptr<CoordinatorClient>(
      new CoordinatorClient(options, *std::move(replicas)));
}

CoordinatorClient::CoordinatorClient(
    ClientOptions options, std::shared_ptr<CoordinatorReplicas> replicas)
    : options_(std::move(options)),
      replicas_(std::move(replicas)),
      incarnation_(std::random_device{}() |
                   (uint64_t{std::random_device{}()} << 32) | 1) {}

absl::StatusOr<shard::v1::Job> CoordinatorClient::CreateJob(
    const std::string& job_id, const shard::v1::JobSpec& spec) {
  shard::v1::CreateJobRequest request;
  request.set_job_id(job_id);
  *request.mutable_spec() = spec;
  return Call(&Stub::CreateJob, "CreateJob", request);
}

absl::Status CoordinatorClient::PutCosts(const std::string& sha256,
                                         absl::string_view le32) {
  constexpr size_t kPieceBytes = size_t{1} << 20;
  shard::v1::PutCostsRequest request;
  request.set_sha256(sha256);
  request.set_count(le32.size() / 4);
  uint64_t offset = 0;
  while (true) {
    request.set_offset(offset);
    request.set_costs_le32(std::string(
        le32.substr(std::min<size_t>(4 * offset, le32.size()), kPieceBytes)));
    absl::StatusOr<shard::v1::PutCostsResponse> response =
        Call(&Stub::PutCosts, "PutCosts", request);
    if (!response.ok()) return response.status();
    if (response->complete()) return absl::OkStatus();
    // Less than was sent means the coordinator restarted, took over or
    // dropped a stalled upload: go on from what it holds. The same count
    // again would loop for ever.
    if (response->received() == offset) {
      return absl::InternalError(absl::StrCat(
          "PutCosts: the coordinator took no costs from the piece at ",
          offset));
    }
    offset = response->received();
  }
}

absl::StatusOr<shard::v1::Job> CoordinatorClient::GetJob(
    const std::string& job_id) {
  shard::v1::GetJobRequest request;
  request.set_job_id(job_id);
  return Call(&Stub::GetJob, "GetJob", request);
}

absl::StatusOr<std::vector<shard::v1::Job>> CoordinatorClient::ListJobs() {
  absl::StatusOr<shard::v1::ListJobsResponse> response =
      Call(&Stub::ListJobs, "ListJobs", shard::v1::ListJobsRequest());
  if (!response.ok()) return response.status();
  return std::vector<shard::v1::Job>(response->jobs().begin(),
                                     response->jobs().end());
}

shard::v1::JoinJobRequest CoordinatorClient::JoinRequest(
    const std::string& job_id, const std::string& member_id,
    const std::optional<shard::v1::JobSpec>& spec,
    std::optional<uint32_t> requested_rank) {
  shard::v1::JoinJobRequest request;
  request.set_job_id(job_id);
  request.set_member_id(member_id);
  if (requested_rank) request.set_requested_rank(*requested_rank);
  if (spec) *request.mutable_spec() = *spec;
  request.set_incarnation(incarnation_);
  absl::MutexLock lock(&joined_mu_);
  auto joined = joined_incarnations_.find(job_id);
  if (joined != joined_incarnations_.end()) {
    request.set_job_incarnation(joined->second);
  }
  return request;
}

Membership CoordinatorClient::Joined(
    const std::string& job_id, const std::string& member_id,
    const shard::v1::JoinJobResponse& response) {
  Membership membership;
  membership.job_id = job_id;
  membership.member_id = member_id;
  membership.rank = response.rank();
  membership.world_size = response.world_size();
  membership.generation = response.generation();
  membership.spec = response.spec();
  membership.committed_epoch = response.committed_epoch();
  membership.committed_position = response.committed_position();
  membership.job_incarnation = response.job_incarnation();
  membership.incarnation = incarnation_;
  if (membership.job_incarnation != 0) {
    absl::MutexLock lock(&joined_mu_);
    joined_incarnations_[job_id] = membership.job_incarnation;
  }
  return membership;
}

namespace {

// How long a round of a waiting join lasts at least, if it asked for as
// long.
constexpr absl::Duration kShortestJoinRound = absl::Seconds(1);

}  // namespace

absl::StatusOr<Membership> CoordinatorClient::Join(
    const std::string& job_id, const std::string& member_id,
    const std::optional<shard::v1::JobSpec>& spec, absl::Duration wait,
    std::optional<uint32_t> requested_rank) {
  shard::v1::JoinJobRequest request =
      JoinRequest(job_id, member_id, spec, requested_rank);
  // The coordinator bounds each wait (shardd --max-wait); joining again
  // resumes it, until `wait` is spent.
  // With on_waiting, each round lasts at most waiting_report_every and is
  // followed by a progress line.
  const absl::Time until = absl::Now() + wait;
  absl::StatusOr<shard::v1::JoinJobResponse> response;
  while (true) {
    const absl::Duration left =
        std::max(absl::ZeroDuration(), until - absl::Now());
    const absl::Duration round =
        options_.on_waiting
            ? std::min(left, std::max(options_.waiting_report_every,
                                      absl::Seconds(1)))
            : left;
    request.set_wait_for_world_ms(static_cast<uint32_t>(
        std::min<int64_t>(absl::ToInt64Milliseconds(round), UINT32_MAX)));
    const absl::Time round_began = absl::Now();
    response =
        Call(&Stub::JoinJob, "JoinJob", request, Attempts::kRetried, round);
    // A round the coordinator answered without waiting (its wait was 0
    // because `wait` ran out) is not a formed world.
    const bool waiting_goes_on =
        response.ok() ? !response->world_formed()
                      : absl::IsDeadlineExceeded(response.status());
    if (!waiting_goes_on || absl::Now() >= until) break;
    // A coordinator that bounds waits far below the round asked (an older
    // shardd's --max-wait 0) answers at once: the round still lasts what it
    // asked, up to a second, before the next join.
    absl::SleepFor(
        std::min(round_began + std::min(round, kShortestJoinRound), until) -
        absl::Now());
    if (options_.on_waiting) ReportWaiting(job_id, until);
  }
  if (!response.ok()) return response.status();
  if (!response->world_formed()) {
    return absl::DeadlineExceededError(
        absl::StrCat("job \"", job_id, "\" has no world including member \"",
                     member_id, "\" after waiting ", absl::FormatDuration(wait),
                     " (the member stays joined; join again to keep waiting)"));
  }
  return Joined(job_id, member_id, *response);
}

void CoordinatorClient::ReportWaiting(const std::string& job_id,
                                      absl::Time until) {
  shard::v1::GetJobRequest request;
  request.set_job_id(job_id);
  absl::StatusOr<shard::v1::Job> job =
      Call(&Stub::GetJob, "GetJob", request, Attempts::kOnce);
  if (!job.ok()) return;  // The next round's JoinJob reports what matters.
  const int64_t rejoining = std::count_if(
      job->members().begin(), job->members().end(),
      [](const shard::v1::JobMember& m) { return m.awaiting_rejoin(); });
  const std::string left = absl::FormatDuration(
      std::max(absl::ZeroDuration(),
               absl::Trunc(until - absl::Now(), absl::Seconds(1))));
  if (rejoining > 0) {
    options_.on_waiting(
        absl::StrCat("job ", job_id, ": waiting for ", rejoining, " member",
                     rejoining == 1 ? "" : "s", " of the ended generation ",
                     job->generation(),
                     " to re-join (or its lease to expire), ", left, " left"));
    return;
  }
  options_.on_waiting(absl::StrCat("job ", job_id, ": waiting for ",
                                   MissingMembersText(*job), ", generation ",
                                   job->generation(), ", ", left, " left"));
}

absl::StatusOr<shard::v1::PreviewShardResponse> CoordinatorClient::Preview(
    const std::string& job_id, uint32_t rank, uint64_t epoch, uint64_t offset,
    uint32_t limit) {
  shard::v1::PreviewShardRequest request;
  request.set_job_id(job_id);
  request.set_rank(rank);
  request.set_epoch(epoch);
  request.set_offset(offset);
  request.set_limit(limit);
  return Call(&Stub::PreviewShard, "PreviewShard", request);
}

absl::Status CoordinatorClient::Heartbeat(const Membership& membership,
                                          absl::Duration* next_after) {
  shard::v1::HeartbeatRequest request;
  request.set_job_id(membership.job_id);
  request.set_member_id(membership.member_id);
  request.set_generation(membership.generation);
  request.set_incarnation(incarnation_);
  absl::StatusOr<shard::v1::HeartbeatResponse> answer =
      Call(&Stub::Heartbeat, "Heartbeat", request, Attempts::kOnce);
  if (!answer.ok()) return answer.status();
  if (next_after != nullptr) {
    *next_after = absl::Milliseconds(answer->next_heartbeat_ms());
  }
  return absl::OkStatus();
}

absl::Status CoordinatorClient::Leave(const Membership& membership) {
  shard::v1::LeaveRequest request;
  request.set_job_id(membership.job_id);
  request.set_member_id(membership.member_id);
  request.set_incarnation(incarnation_);
  {
    absl::MutexLock lock(&joined_mu_);
    joined_incarnations_.erase(membership.job_id);
  }
  return Call(&Stub::Leave, "Leave", request).status();
}

absl::Status CoordinatorClient::DeleteJob(const std::string& job_id,
                                          bool force) {
  shard::v1::DeleteJobRequest request;
  request.set_job_id(job_id);
  request.set_force(force);
  const absl::Status first =
      Call(&Stub::DeleteJob, "DeleteJob", request, Attempts::kOnce).status();
  if (!absl::IsUnavailable(first)) return first;
  const absl::Status retried =
      Call(&Stub::DeleteJob, "DeleteJob", request).status();
  // The first attempt may have deleted the job: gone is what was asked.
  return absl::IsNotFound(retried) ? absl::OkStatus() : retried;
}

absl::StatusOr<absl::Duration> CoordinatorClient::Drain() {
  absl::StatusOr<shard::v1::DrainResponse> response =
      Call(&Stub::Drain, "Drain", shard::v1::DrainRequest(), Attempts::kOnce);
  if (!response.ok()) return response.status();
  return absl::Milliseconds(response->grace_ms());
}

absl::StatusOr<shard::v1::CommitProgressResponse>
CoordinatorClient::CommitProgress(const Membership& membership, uint64_t epoch,
                                  uint64_t position) {
  shard::v1::CommitProgressRequest request;
  request.set_job_id(membership.job_id);
  request.set_generation(membership.generation);
  request.set_epoch(epoch);
  request.set_position(position);
  request.set_member_id(membership.member_id);
  request.set_incarnation(membership.incarnation);
  return Call(&Stub::CommitProgress, "CommitProgress", request);
}

absl::Status CoordinatorClient::StoreSet(const Membership& membership,
                                         const std::string& key,
                                         const std::string& value) {
  shard::v1::StoreSetRequest request;
  *request.mutable_scope() = ScopeOf(membership);
  request.set_key(key);
  request.set_value(value);
  return Call(&Stub::StoreSet, "StoreSet", request).status();
}

absl::StatusOr<std::optional<std::string>> CoordinatorClient::StoreGet(
    const Membership& membership, const std::string& key, absl::Duration wait) {
  shard::v1::StoreGetRequest request;
  *request.mutable_scope() = ScopeOf(membership);
  request.set_key(key);
  absl::StatusOr<shard::v1::StoreGetResponse> response = WaitInRounds(
      request, wait,
      [this](const shard::v1::StoreGetRequest& round, absl::Duration left) {
        return Call(&Stub::StoreGet, "StoreGet", round, Attempts::kRetried,
                    left);
      },
      [](const shard::v1::StoreGetResponse& r) { return r.found(); });
  if (!response.ok()) return response.status();
  if (!response->found()) return std::optional<std::string>();
  return std::optional<std::string>(response->value());
}

absl::StatusOr<int64_t> CoordinatorClient::StoreAdd(
    const Membership& membership, const std::string& key, int64_t delta) {
  shard::v1::StoreAddRequest request;
  *request.mutable_scope() = ScopeOf(membership);
  request.set_key(key);
  request.set_delta(delta);
  absl::StatusOr<shard::v1::StoreAddResponse> response =
      Call(&Stub::StoreAdd, "StoreAdd", request, Attempts::kOnce);
  if (!response.ok()) return response.status();
  return response->value();
}

absl::StatusOr<std::string> CoordinatorClient::StoreCompareSet(
    const Membership& membership, const std::string& key,
    const std::string& expected, const std::string& desired) {
  shard::v1::StoreCompareSetRequest request;
  *request.mutable_scope() = ScopeOf(membership);
  request.set_key(key);
  request.set_expected(expected);
  request.set_desired(desired);
  absl::StatusOr<shard::v1::StoreCompareSetResponse> response =
      Call(&Stub::StoreCompareSet, "StoreCompareSet", request);
  if (!response.ok()) return response.status();
  return response->value();
}

absl::StatusOr<bool> CoordinatorClient::StoreWait(
    const Membership& membership, const std::vector<std::string>& keys,
    absl::Duration wait) {
  shard::v1::StoreWaitRequest request;
  *request.mutable_scope() = ScopeOf(membership);
  for (const std::string& key : keys) request.add_keys(key);
  absl::StatusOr<shard::v1::StoreWaitResponse> response = WaitInRounds(
      request, wait,
      [this](const shard::v1::StoreWaitRequest& round, absl::Duration left) {
        return Call(&Stub::StoreWait, "StoreWait", round, Attempts::kRetried,
                    left);
      },
      [](const shard::v1::StoreWaitResponse& r) { return r.ready(); });
  if (!response.ok()) return response.status();
  return response->ready();
}

absl::StatusOr<bool> CoordinatorClient::StoreDelete(
    const Membership& membership, const std::string& key) {
  shard::v1::StoreDeleteRequest request;
  *request.mutable_scope() = ScopeOf(membership);
  request.set_key(key);
  absl::StatusOr<shard::v1::StoreDeleteResponse> response =
      Call(&Stub::StoreDelete, "StoreDelete", request);
  if (!response.ok()) return response.status();
  return response->deleted();
}

absl::StatusOr<int64_t> CoordinatorClient::StoreCount(
    const Membership& membership) {
  shard::v1::StoreCountRequest request;
  *request.mutable_scope() = ScopeOf(membership);
  absl::StatusOr<shard::v1::StoreCountResponse> response =
      Call(&Stub::StoreCount, "StoreCount", request);
  if (!response.ok()) return response.status();
  return response->count();
}

std::unique_ptr<ShardStream> CoordinatorClient::OpenStream(
    const Membership& membership, uint64_t epoch, uint64_t start_position,
    const StreamOptions& options) {
  shard::v1::StreamShardRequest request;
  request.set_job_id(membership.job_id);
  request.set_generation(membership.generation);
  request.set_rank(membership.rank);
  request.set_epoch(epoch);
  request.set_start_position(start_position);
  return std::make_unique<ShardStream>(
      replicas_, request, membership.world_size, options, options_.retry,
      membership.spec.has_batches());
}

}  // namespace shard::client

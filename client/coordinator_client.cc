#include "client/coordinator_client.h"

#include <utility>

#include "absl/time/clock.h"
#include "client/grpc_status.h"
#include "grpcpp/grpcpp.h"

namespace shard::client {
namespace {

using Stub = shard::v1::Coordinator::Stub;

// One unary call with retries of UNAVAILABLE; each attempt has `timeout`.
template <typename Request, typename Response>
absl::StatusOr<Response> CallWithRetry(
    Stub* stub,
    grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                 Response*),
    const char* name, const Request& request, absl::Duration timeout,
    const RetryPolicy& retry) {
  Response response;
  absl::Status status = RetryUnavailable(retry, [&]() -> absl::Status {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    return FromGrpcStatus((stub->*method)(&context, request, &response), name);
  });
  if (!status.ok()) return status;
  return response;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CoordinatorClient>> CoordinatorClient::Connect(
    const ClientOptions& options) {
  if (options.address.empty()) {
    return absl::InvalidArgumentError(
        "coordinator address is empty; expected HOST:PORT");
  }
  grpc::ChannelArguments args;
  // Chunks are far below this; it bounds what a faulty peer can make us hold.
  args.SetMaxReceiveMessageSize(8 << 20);
  auto channel = grpc::CreateCustomChannel(
      options.address, grpc::InsecureChannelCredentials(), args);
  return std::unique_ptr<CoordinatorClient>(
      new CoordinatorClient(options, shard::v1::Coordinator::NewStub(channel)));
}

CoordinatorClient::CoordinatorClient(ClientOptions options,
                                     std::shared_ptr<Stub> stub)
    : options_(std::move(options)), stub_(std::move(stub)) {}

absl::StatusOr<shard::v1::Job> CoordinatorClient::CreateJob(
    const std::string& job_id, const shard::v1::JobSpec& spec) {
  shard::v1::CreateJobRequest request;
  request.set_job_id(job_id);
  *request.mutable_spec() = spec;
  return CallWithRetry(stub_.get(), &Stub::CreateJob, "CreateJob", request,
                       options_.rpc_timeout, options_.retry);
}

absl::StatusOr<shard::v1::Job> CoordinatorClient::GetJob(
    const std::string& job_id) {
  shard::v1::GetJobRequest request;
  request.set_job_id(job_id);
  return CallWithRetry(stub_.get(), &Stub::GetJob, "GetJob", request,
                       options_.rpc_timeout, options_.retry);
}

absl::StatusOr<std::vector<shard::v1::Job>> CoordinatorClient::ListJobs() {
  absl::StatusOr<shard::v1::ListJobsResponse> response = CallWithRetry(
      stub_.get(), &Stub::ListJobs, "ListJobs", shard::v1::ListJobsRequest(),
      options_.rpc_timeout, options_.retry);
  if (!response.ok()) return response.status();
  return std::vector<shard::v1::Job>(response->jobs().begin(),
                                     response->jobs().end());
}

absl::StatusOr<Membership> CoordinatorClient::Join(
    const std::string& job_id, const std::string& member_id,
    const std::optional<shard::v1::JobSpec>& spec, absl::Duration wait) {
  shard::v1::JoinJobRequest request;
  request.set_job_id(job_id);
  request.set_member_id(member_id);
  if (spec) *request.mutable_spec() = *spec;
  request.set_wait_for_world_ms(
      static_cast<uint32_t>(absl::ToInt64Milliseconds(wait)));
  absl::StatusOr<shard::v1::JoinJobResponse> response =
      CallWithRetry(stub_.get(), &Stub::JoinJob, "JoinJob", request,
                    options_.rpc_timeout + wait, options_.retry);
  if (!response.ok()) return response.status();
  Membership membership;
  membership.job_id = job_id;
  membership.member_id = member_id;
  membership.rank = response->rank();
  membership.world_size = response->world_size();
  membership.generation = response->generation();
  membership.spec = response->spec();
  return membership;
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
  return CallWithRetry(stub_.get(), &Stub::PreviewShard, "PreviewShard",
                       request, options_.rpc_timeout, options_.retry);
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
  return std::make_unique<ShardStream>(stub_, request, membership.world_size,
                                       options, options_.retry);
}

}  // namespace shard::client

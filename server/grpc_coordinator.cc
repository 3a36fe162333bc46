#include "server/grpc_coordinator.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "server/event_log.h"
#include "server/parked_call_reactor.h"
#include "server/shard_stream_reactor.h"

namespace shard::server {
namespace {

// Moves a successful result into the response, or returns the error.
template <typename T>
grpc::Status Reply(absl::StatusOr<T> result, T* response) {
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

absl::Time DeadlineOf(const grpc::ServerContextBase* context) {
  return absl::FromChrono(context->deadline());
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

GrpcCoordinator::GrpcCoordinator(CoordinatorService* service,
                                 GrpcCoordinatorOptions options)
    : service_(service),
      options_(std::move(options)),
      stream_openers_(options_.stream_open_threads) {}

grpc::Status GrpcCoordinator::Authorize(
    const grpc::ServerContextBase* context) const {
  if (options_.token == nullptr) return grpc::Status::OK;
  const auto& metadata = context->client_metadata();
  const auto found = metadata.find("authorization");
  std::optional<absl::string_view> authorization;
  if (found != metadata.end()) {
    authorization =
        absl::string_view(found->second.data(), found->second.size());
  }
  return ToGrpcStatus(options_.token->Check(authorization));
}

grpc::Status GrpcCoordinator::CreateJob(
    grpc::ServerContext* context, const shard::v1::CreateJobRequest* request,
    shard::v1::Job* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->CreateJob(*request), response);
}

grpc::Status GrpcCoordinator::GetJob(grpc::ServerContext* context,
                                     const shard::v1::GetJobRequest* request,
                                     shard::v1::Job* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->GetJob(*request), response);
}

grpc::Status GrpcCoordinator::ListJobs(
    grpc::ServerContext* context, const shard::v1::ListJobsRequest* request,
    shard::v1::ListJobsResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->ListJobs(*request), response);
}

grpc::ServerUnaryReactor* GrpcCoordinator::JoinJob(
    grpc::CallbackServerContext* context,
    const shard::v1::JoinJobRequest* request,
    shard::v1::JoinJobResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(denied);
    return reactor;
  }
  const absl::Time deadline = DeadlineOf(context);
  return ParkedCallReactor<shard::v1::JoinJobResponse>::Run(
      service_, response,
      [this, request,
       deadline](CoordinatorService::Reply<shard::v1::JoinJobResponse> reply) {
        return service_->StartJoinJob(*request, deadline, std::move(reply));
      });
}

grpc::ServerWriteReactor<shard::v1::IndexChunk>* GrpcCoordinator::StreamShard(
    grpc::CallbackServerContext* context,
    const shard::v1::StreamShardRequest* request) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return ShardStreamReactor::Refuse(denied);
  }
  return ShardStreamReactor::Serve(service_, &stream_openers_, *request,
                                   DeadlineOf(context),
                                   &options_.on_indices_streamed);
}

grpc::Status GrpcCoordinator::PreviewShard(
    grpc::ServerContext* context, const shard::v1::PreviewShardRequest* request,
    shard::v1::PreviewShardResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->PreviewShard(*request, DeadlineOf(context)), response);
}

grpc::Status GrpcCoordinator::Heartbeat(
    grpc::ServerContext* context, const shard::v1::HeartbeatRequest* request,
    shard::v1::HeartbeatResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->Heartbeat(*request), response);
}

grpc::Status GrpcCoordinator::Leave(grpc::ServerContext* context,
                                    const shard::v1::LeaveRequest* request,
                                    shard::v1::LeaveResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->Leave(*request), response);
}

grpc::Status GrpcCoordinator::CommitProgress(
    grpc::ServerContext* context,
    const shard::v1::CommitProgressRequest* request,
    shard::v1::CommitProgressResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->CommitProgress(*request), response);
}

grpc::Status GrpcCoordinator::StoreSet(
    grpc::ServerContext* context, const shard::v1::StoreSetRequest* request,
    shard::v1::StoreSetResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->StoreSet(*request), response);
}

grpc::Status GrpcCoordinator::StoreGet(
    grpc::ServerContext* context, const shard::v1::StoreGetRequest* request,
    shard::v1::StoreGetResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->StoreGet(*request, DeadlineOf(context)), response);
}

grpc::Status GrpcCoordinator::StoreAdd(
    grpc::ServerContext* context, const shard::v1::StoreAddRequest* request,
    shard::v1::StoreAddResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->StoreAdd(*request), response);
}

grpc::Status GrpcCoordinator::StoreCompareSet(
    grpc::ServerContext* context,
    const shard::v1::StoreCompareSetRequest* request,
    shard::v1::StoreCompareSetResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->StoreCompareSet(*request), response);
}

grpc::Status GrpcCoordinator::StoreWait(
    grpc::ServerContext* context, const shard::v1::StoreWaitRequest* request,
    shard::v1::StoreWaitResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->StoreWait(*request, DeadlineOf(context)), response);
}

grpc::Status GrpcCoordinator::StoreDelete(
    grpc::ServerContext* context, const shard::v1::StoreDeleteRequest* request,
    shard::v1::StoreDeleteResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->StoreDelete(*request), response);
}

grpc::Status GrpcCoordinator::StoreCount(
    grpc::ServerContext* context, const shard::v1::StoreCountRequest* request,
    shard::v1::StoreCountResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->StoreCount(*request), response);
}

grpc::Status GrpcCoordinator::DeleteJob(
    grpc::ServerContext* context, const shard::v1::DeleteJobRequest* request,
    shard::v1::DeleteJobResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  return Reply(service_->DeleteJob(*request), response);
}

grpc::Status GrpcCoordinator::Drain(grpc::ServerContext* context,
                                    const shard::v1::DrainRequest*,
                                    shard::v1::DrainResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) return denied;
  if (!options_.on_drain) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                        "this server cannot be drained remotely");
  }
  LogEvent("drain requested by " + context->peer());
  const absl::Duration grace = options_.on_drain();
  response->set_grace_ms(
      static_cast<uint64_t>(absl::ToInt64Milliseconds(grace)));
  return grpc::Status::OK;
}

}  // namespace shard::server

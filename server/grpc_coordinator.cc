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

GrpcCoordinator::GrpcCoordinator(CoordinatorService* service,
                                 GrpcCoordinatorOptions options)
    : service_(service),
      options_(std::move(options)),
      blocking_calls_(options_.blocking_call_threads) {}

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

grpc::ServerUnaryReactor* GrpcCoordinator::Finished(
    grpc::CallbackServerContext* context, const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

template <typename Response>
grpc::ServerUnaryReactor* GrpcCoordinator::Answer(
    grpc::CallbackServerContext* context, absl::StatusOr<Response> result,
    Response* response) {
  return Finished(context, Reply(std::move(result), response));
}

template <typename Response, typename Call>
grpc::ServerUnaryReactor* GrpcCoordinator::AnswerOffThread(
    grpc::CallbackServerContext* context, Response* response, Call call) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  blocking_calls_.Schedule(
      [reactor, response, call = std::move(call)]() mutable {
        reactor->Finish(Reply(call(), response));
      });
  return reactor;
}

// The request and response of a unary call live until it finishes, so the
// closures below may keep pointers to them.

grpc::ServerUnaryReactor* GrpcCoordinator::CreateJob(
    grpc::CallbackServerContext* context,
    const shard::v1::CreateJobRequest* request, shard::v1::Job* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  return AnswerOffThread(context, response, [this, request] {
    return service_->CreateJob(*request);
  });
}

grpc::ServerUnaryReactor* GrpcCoordinator::GetJob(
    grpc::CallbackServerContext* context,
    const shard::v1::GetJobRequest* request, shard::v1::Job* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  return Answer(context, service_->GetJob(*request), response);
}

grpc::ServerUnaryReactor* GrpcCoordinator::ListJobs(
    grpc::CallbackServerContext* context,
    const shard::v1::ListJobsRequest* request,
    shard::v1::ListJobsResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  return Answer(context, service_->ListJobs(*request), response);
}

grpc::ServerUnaryReactor* GrpcCoordinator::JoinJob(
    grpc::CallbackServerContext* context,
    const shard::v1::JoinJobRequest* request,
    shard::v1::JoinJobResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  const absl::Time deadline = DeadlineOf(context);
  return ParkedCallReactor<shard::v1::JoinJobResponse>::Run(
      response,
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
  return ShardStreamReactor::Serve(service_, *request, &options_.stream_hooks);
}

grpc::ServerUnaryReactor* GrpcCoordinator::PreviewShard(
    grpc::CallbackServerContext* context,
    const shard::v1::PreviewShardRequest* request,
    shard::v1::PreviewShardResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  // Never on the blocking-call threads: waiting for order memory must not
  // hold a thread that mutations need.
  const absl::Time deadline = DeadlineOf(context);
  return ParkedCallReactor<shard::v1::PreviewShardResponse>::Run(
      response,
      [this, request, deadline](
          CoordinatorService::Reply<shard::v1::PreviewShardResponse> reply) {
        service_->StartPreviewShard(*request, deadline, std::move(reply));
        return ParkedCalls::Handle();  // Bounded by --max-wait, not parked.
      });
}

grpc::ServerUnaryReactor* GrpcCoordinator::Heartbeat(
    grpc::CallbackServerContext* context,
    const shard::v1::HeartbeatRequest* request,
    shard::v1::HeartbeatResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  return Answer(context, service_->Heartbeat(*request), response);
}

grpc::ServerUnaryReactor* GrpcCoordinator::Leave(
    grpc::CallbackServerContext* context,
    const shard::v1::LeaveRequest* request,
    shard::v1::LeaveResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  return AnswerOffThread(context, response,
                         [this, request] { return service_->Leave(*request); });
}

grpc::ServerUnaryReactor* GrpcCoordinator::CommitProgress(
    grpc::CallbackServerContext* context,
    const shard::v1::CommitProgressRequest* request,
    shard::v1::CommitProgressResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  return AnswerOffThread(context, response, [this, request] {
    return service_->CommitProgress(*request);
  });
}

grpc::ServerUnaryReactor* GrpcCoordinator::StoreSet(
    grpc::CallbackServerContext* context,
    const shard::v1::StoreSetRequest* request,
    shard::v1::StoreSetResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  return Answer(context, service_->StoreSet(*request), response);
}

grpc::ServerUnaryReactor* GrpcCoordinator::StoreGet(
    grpc::CallbackServerContext* context,
    const shard::v1::StoreGetRequest* request,
    shard::v1::StoreGetResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  const absl::Time deadline = DeadlineOf(context);
  return ParkedCallReactor<shard::v1::StoreGetResponse>::Run(
      response,
      [this, request,
       deadline](CoordinatorService::Reply<shard::v1::StoreGetResponse> reply) {
        return service_->StartStoreGet(*request, deadline, std::move(reply));
      });
}

grpc::ServerUnaryReactor* GrpcCoordinator::StoreAdd(
    grpc::CallbackServerContext* context,
    const shard::v1::StoreAddRequest* request,
    shard::v1::StoreAddResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  return Answer(context, service_->StoreAdd(*request), response);
}

grpc::ServerUnaryReactor* GrpcCoordinator::StoreCompareSet(
    grpc::CallbackServerContext* context,
    const shard::v1::StoreCompareSetRequest* request,
    shard::v1::StoreCompareSetResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  return Answer(context, service_->StoreCompareSet(*request), response);
}

grpc::ServerUnaryReactor* GrpcCoordinator::StoreWait(
    grpc::CallbackServerContext* context,
    const shard::v1::StoreWaitRequest* request,
    shard::v1::StoreWaitResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  const absl::Time deadline = DeadlineOf(context);
  return ParkedCallReactor<shard::v1::StoreWaitResponse>::Run(
      response,
      [this, request, deadline](
          CoordinatorService::Reply<shard::v1::StoreWaitResponse> reply) {
        return service_->StartStoreWait(*request, deadline, std::move(reply));
      });
}

grpc::ServerUnaryReactor* GrpcCoordinator::StoreDelete(
    grpc::CallbackServerContext* context,
    const shard::v1::StoreDeleteRequest* request,
    shard::v1::StoreDeleteResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  return Answer(context, service_->StoreDelete(*request), response);
}

grpc::ServerUnaryReactor* GrpcCoordinator::StoreCount(
    grpc::CallbackServerContext* context,
    const shard::v1::StoreCountRequest* request,
    shard::v1::StoreCountResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  return Answer(context, service_->StoreCount(*request), response);
}

grpc::ServerUnaryReactor* GrpcCoordinator::DeleteJob(
    grpc::CallbackServerContext* context,
    const shard::v1::DeleteJobRequest* request,
    shard::v1::DeleteJobResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  return AnswerOffThread(context, response, [this, request] {
    return service_->DeleteJob(*request);
  });
}

grpc::ServerUnaryReactor* GrpcCoordinator::Drain(
    grpc::CallbackServerContext* context, const shard::v1::DrainRequest*,
    shard::v1::DrainResponse* response) {
  if (grpc::Status denied = Authorize(context); !denied.ok()) {
    return Finished(context, denied);
  }
  if (!options_.on_drain) {
    return Finished(context,
                    grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                 "this server cannot be drained remotely"));
  }
  LogEvent("drain requested by " + context->peer());
  const absl::Duration grace = options_.on_drain();
  response->set_grace_ms(
      static_cast<uint64_t>(absl::ToInt64Milliseconds(grace)));
  return Finished(context, grpc::Status::OK);
}

}  // namespace shard::server

#include "server/rpc/grpc_coordinator.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/types/optional.h"
#include "common/leader_hint.h"
#include "server/rpc/shard_stream_reactor.h"
#include "server/runtime/event_log.h"

namespace shard::server {
namespace {

absl::Time DeadlineOf(const grpc::ServerContextBase* context) {
  return absl::FromChrono(context->deadline());
}

}  // namespace

GrpcCoordinator::GrpcCoordinator(const ServingSlot* slot,
                                 GrpcCoordinatorOptions options)
    : slot_(slot),
      options_(std::move(options)),
      authorizer_(options_.authorization) {}

absl::StatusOr<ServingSlot::Claim> GrpcCoordinator::Admit(
    grpc::ServerContextBase* context, absl::string_view rpc,
    absl::string_view job_id) {
  const security::CallRule* rule = security::FindCallRule(rpc);
  if (rule == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat(rpc, " has no access rule"));
  }
  if (absl::Status denied = authorizer_.Check(context, *rule, job_id);
      !denied.ok()) {
    return denied;
  }
  absl::StatusOr<ServingSlot::Claim> claim = slot_->Acquire();
  if (!claim.ok()) AddRefusalTrailers(context, claim.status());
  return claim;
}

void GrpcCoordinator::KeepViewable(shard::v1::ListJobsResponse& listed,
                                   grpc::ServerContextBase* context) const {
  const std::function<bool(absl::string_view)> may_view =
      authorizer_.ViewFilter(context);
  auto* jobs = listed.mutable_jobs();
  int kept = 0;
  for (int i = 0; i < jobs->size(); ++i) {
    if (may_view(jobs->Get(i).job_id())) jobs->SwapElements(i, kept++);
  }
  jobs->DeleteSubrange(kept, jobs->size() - kept);
}

grpc::ServerUnaryReactor* GrpcCoordinator::Finished(
    grpc::CallbackServerContext* context, const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

template <typename Response, typename Call>
grpc::ServerUnaryReactor* GrpcCoordinator::Serve(
    grpc::CallbackServerContext* context, absl::string_view rpc,
    absl::string_view job_id, Response* response, Call call) {
  absl::StatusOr<ServingSlot::Claim> claim = Admit(context, rpc, job_id);
  if (!claim.ok()) return Finished(context, ToGrpcStatus(claim.status()));
  CoordinatorService& service = *claim->service;
  if constexpr (std::is_invocable_v<Call, CoordinatorService&>) {
    absl::StatusOr<Response> answer = call(service);
    if (answer.ok()) *response = *std::move(answer);
    return Finished(context, ToGrpcStatus(answer.status()));
  } else {
    return UnaryCallReactor<Response>::Run(
        response, std::move(claim->service),
        [&call, &service](Reply<Response> reply) {
          call(service, std::move(reply));
        });
  }
}

template <typename Response, typename Call>
void GrpcCoordinator::ServeLater(grpc::ServerContextBase* context,
                                 absl::string_view rpc,
                                 absl::string_view job_id,
                                 Reply<Response> reply, Call call) {
  absl::StatusOr<ServingSlot::Claim> claim = Admit(context, rpc, job_id);
  if (!claim.ok()) {
    std::move(reply)(claim.status());
    return;
  }
  std::shared_ptr<CoordinatorService> service = std::move(claim->service);
  CoordinatorService& served = *service;
  std::shared_ptr<Cancellation> cancellation = reply.cancellation();
  call(served, Reply<Response>(
                   [held = std::move(service), answer = std::move(reply)](
                       absl::StatusOr<Response> result) mutable {
                     std::move(answer)(std::move(result));
                   },
                   std::move(cancellation)));
}

// Each call below reads its request before it returns; the response it
// fills lives until the call finishes.

grpc::ServerUnaryReactor* GrpcCoordinator::CreateJob(
    grpc::CallbackServerContext* context,
    const shard::v1::CreateJobRequest* request, shard::v1::Job* response) {
  return Serve(context, "CreateJob", request->job_id(), response,
               [&](CoordinatorService& service, Reply<shard::v1::Job> reply) {
                 service.jobs().StartCreateJob(*request, std::move(reply));
               });
}

grpc::ServerUnaryReactor* GrpcCoordinator::PutCosts(
    grpc::CallbackServerContext* context,
    const shard::v1::PutCostsRequest* request,
    shard::v1::PutCostsResponse* response) {
  return Serve(context, "PutCosts", "", response,
               [&](CoordinatorService& service) {
                 return service.jobs().PutCosts(
                     *request, authorizer_.UploaderTenant(context));
               });
}

grpc::ServerUnaryReactor* GrpcCoordinator::GetJob(
    grpc::CallbackServerContext* context,
    const shard::v1::GetJobRequest* request, shard::v1::Job* response) {
  return Serve(
      context, "GetJob", request->job_id(), response,
      [&](CoordinatorService& service) { return service.GetJob(*request); });
}

grpc::ServerUnaryReactor* GrpcCoordinator::ListJobs(
    grpc::CallbackServerContext* context,
    const shard::v1::ListJobsRequest* request,
    shard::v1::ListJobsResponse* response) {
  return Serve(context, "ListJobs", "", response,
               [&](CoordinatorService& service) {
                 absl::StatusOr<shard::v1::ListJobsResponse> listed =
                     service.jobs().ListJobs(*request);
                 if (listed.ok()) KeepViewable(*listed, context);
                 return listed;
               });
}

void GrpcCoordinator::ServeJoinJob(grpc::ServerContext* context,
                                   const shard::v1::JoinJobRequest& request,
                                   Reply<shard::v1::JoinJobResponse> reply) {
  ServeLater(context, "JoinJob", request.job_id(), std::move(reply),
             [&](CoordinatorService& service,
                 Reply<shard::v1::JoinJobResponse> later) {
               service.membership().StartJoinJob(request, DeadlineOf(context),
                                                 std::move(later));
             });
}

grpc::ServerWriteReactor<shard::v1::IndexChunk>* GrpcCoordinator::StreamShard(
    grpc::CallbackServerContext* context,
    const shard::v1::StreamShardRequest* request) {
  absl::StatusOr<ServingSlot::Claim> claim =
      Admit(context, "StreamShard", request->job_id());
  if (!claim.ok()) {
    return ShardStreamReactor::Refuse(ToGrpcStatus(claim.status()));
  }
  return ShardStreamReactor::Serve(
      *std::move(claim), slot_, context, *request, &options_.stream_hooks,
      authorizer_.Recheck(context, *security::FindCallRule("StreamShard"),
                          request->job_id()));
}

grpc::ServerUnaryReactor* GrpcCoordinator::PreviewShard(
    grpc::CallbackServerContext* context,
    const shard::v1::PreviewShardRequest* request,
    shard::v1::PreviewShardResponse* response) {
  // Waiting for the order (bounded by --max-wait) is not parked: the call
  // cannot be cancelled early, but holds no thread.
  return Serve(context, "PreviewShard", request->job_id(), response,
               [&](CoordinatorService& service,
                   Reply<shard::v1::PreviewShardResponse> reply) {
                 service.shards().StartPreviewShard(
                     *request, DeadlineOf(context), std::move(reply));
               });
}

grpc::ServerUnaryReactor* GrpcCoordinator::Heartbeat(
    grpc::CallbackServerContext* context,
    const shard::v1::HeartbeatRequest* request,
    shard::v1::HeartbeatResponse* response) {
  return Serve(context, "Heartbeat", request->job_id(), response,
               [&](CoordinatorService& service) {
                 return service.membership().Heartbeat(*request);
               });
}

grpc::ServerUnaryReactor* GrpcCoordinator::Leave(
    grpc::CallbackServerContext* context,
    const shard::v1::LeaveRequest* request,
    shard::v1::LeaveResponse* response) {
  return Serve(
      context, "Leave", request->job_id(), response,
      [&](CoordinatorService& service, Reply<shard::v1::LeaveResponse> reply) {
        service.membership().StartLeave(*request, std::move(reply));
      });
}

grpc::ServerUnaryReactor* GrpcCoordinator::CommitProgress(
    grpc::CallbackServerContext* context,
    const shard::v1::CommitProgressRequest* request,
    shard::v1::CommitProgressResponse* response) {
  return Serve(context, "CommitProgress", request->job_id(), response,
               [&](CoordinatorService& service,
                   Reply<shard::v1::CommitProgressResponse> reply) {
                 service.progress().StartCommitProgress(*request,
                                                        std::move(reply));
               });
}

grpc::ServerUnaryReactor* GrpcCoordinator::StoreSet(
    grpc::CallbackServerContext* context,
    const shard::v1::StoreSetRequest* request,
    shard::v1::StoreSetResponse* response) {
  return Serve(context, "StoreSet", request->scope().job_id(), response,
               [&](CoordinatorService& service) {
                 return service.store().StoreSet(*request);
               });
}

void GrpcCoordinator::ServeStoreGet(grpc::ServerContext* context,
                                    const shard::v1::StoreGetRequest& request,
                                    Reply<shard::v1::StoreGetResponse> reply) {
  ServeLater(context, "StoreGet", request.scope().job_id(), std::move(reply),
             [&](CoordinatorService& service,
                 Reply<shard::v1::StoreGetResponse> later) {
               service.store().StartStoreGet(request, DeadlineOf(context),
                                             std::move(later));
             });
}

grpc::ServerUnaryReactor* GrpcCoordinator::StoreAdd(
    grpc::CallbackServerContext* context,
    const shard::v1::StoreAddRequest* request,
    shard::v1::StoreAddResponse* response) {
  return Serve(context, "StoreAdd", request->scope().job_id(), response,
               [&](CoordinatorService& service) {
                 return service.store().StoreAdd(*request);
               });
}

grpc::ServerUnaryReactor* GrpcCoordinator::StoreCompareSet(
    grpc::CallbackServerContext* context,
    const shard::v1::StoreCompareSetRequest* request,
    shard::v1::StoreCompareSetResponse* response) {
  return Serve(context, "StoreCompareSet", request->scope().job_id(), response,
               [&](CoordinatorService& service) {
                 return service.store().StoreCompareSet(*request);
               });
}

void GrpcCoordinator::ServeStoreWait(
    grpc::ServerContext* context, const shard::v1::StoreWaitRequest& request,
    Reply<shard::v1::StoreWaitResponse> reply) {
  ServeLater(context, "StoreWait", request.scope().job_id(), std::move(reply),
             [&](CoordinatorService& service,
                 Reply<shard::v1::StoreWaitResponse> later) {
               service.store().StartStoreWait(request, DeadlineOf(context),
                                              std::move(later));
             });
}

grpc::ServerUnaryReactor* GrpcCoordinator::StoreDelete(
    grpc::CallbackServerContext* context,
    const shard::v1::StoreDeleteRequest* request,
    shard::v1::StoreDeleteResponse* response) {
  return Serve(context, "StoreDelete", request->scope().job_id(), response,
               [&](CoordinatorService& service) {
                 return service.store().StoreDelete(*request);
               });
}

grpc::ServerUnaryReactor* GrpcCoordinator::StoreCount(
    grpc::CallbackServerContext* context,
    const shard::v1::StoreCountRequest* request,
    shard::v1::StoreCountResponse* response) {
  return Serve(context, "StoreCount", request->scope().job_id(), response,
               [&](CoordinatorService& service) {
                 return service.store().StoreCount(*request);
               });
}

grpc::ServerUnaryReactor* GrpcCoordinator::DeleteJob(
    grpc::CallbackServerContext* context,
    const shard::v1::DeleteJobRequest* request,
    shard::v1::DeleteJobResponse* response) {
  return Serve(context, "DeleteJob", request->job_id(), response,
               [&](CoordinatorService& service,
                   Reply<shard::v1::DeleteJobResponse> reply) {
                 service.jobs().StartDeleteJob(*request, std::move(reply));
               });
}

grpc::ServerUnaryReactor* GrpcCoordinator::Drain(
    grpc::CallbackServerContext* context, const shard::v1::DrainRequest*,
    shard::v1::DrainResponse* response) {
  // Any replica answers (no claim): a standby can be drained too.
  if (absl::Status denied =
          authorizer_.Check(context, *security::FindCallRule("Drain"), "");
      !denied.ok()) {
    return Finished(context, ToGrpcStatus(denied));
  }
  if (!options_.on_drain) {
    return Finished(context,
                    grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                 "this server cannot be drained remotely"));
  }
  LogEvent("drain requested by " + context->peer());
  response->set_grace_ms(
      static_cast<uint64_t>(absl::ToInt64Milliseconds(options_.on_drain())));
  return Finished(context, grpc::Status::OK);
}

}  // namespace shard::server

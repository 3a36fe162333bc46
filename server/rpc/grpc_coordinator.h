// gRPC glue for shard.v1.Coordinator: asks the CallAuthorizer whether the
// caller may make the call on the job it names, claims the service that
// serves now from the ServingSlot (whose gate refuses calls a standby must
// not answer), translates each call to that CoordinatorService and its
// absl::Status to grpc::Status. No coordination logic here. Thread-safe
// (the slot, the authorizer and the service are); owns neither the slot
// nor the tokens.
#ifndef SERVER_RPC_GRPC_COORDINATOR_H_
#define SERVER_RPC_GRPC_COORDINATOR_H_

#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

#include "absl/time/time.h"
#include "server/rpc/call_authorizer.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/serving_slot.h"
#include "server/rpc/shard_stream_reactor.h"
#include "server/rpc/unary_call_reactor.h"
#include "server/security/call_rules.h"
#include "server/services/coordinator_service.h"
#include "shard/v1/shard.grpc.pb.h"

namespace shard::server {

struct GrpcCoordinatorOptions {
  // Who may make which call (call_authorizer.h).
  CallAuthorizerOptions authorization;
  // Runs the Drain RPC: starts the daemon's graceful shutdown and returns
  // the grace in-flight calls get. Unset: Drain answers UNIMPLEMENTED.
  std::function<absl::Duration()> on_drain;
  // Stream events (metrics).
  StreamHooks stream_hooks;
};

// The generated service with the calls that wait (joins, store gets and
// waits) on gRPC's async API, served by WaitingCallQueues (see there why),
// and every other call on its callback API.
namespace coordinator_grpc {
using C = shard::v1::Coordinator;
// clang-format off
using Base =
    C::WithCallbackMethod_CreateJob<C::WithCallbackMethod_GetJob<
    C::WithCallbackMethod_ListJobs<C::WithCallbackMethod_Heartbeat<
    C::WithCallbackMethod_Leave<C::WithCallbackMethod_StreamShard<
    C::WithCallbackMethod_PreviewShard<C::WithCallbackMethod_CommitProgress<
    C::WithCallbackMethod_StoreSet<C::WithCallbackMethod_StoreAdd<
    C::WithCallbackMethod_StoreCompareSet<C::WithCallbackMethod_StoreDelete<
    C::WithCallbackMethod_StoreCount<C::WithCallbackMethod_DeleteJob<
    C::WithCallbackMethod_PutCosts<C::WithCallbackMethod_Drain<
    C::WithAsyncMethod_JoinJob<C::WithAsyncMethod_StoreGet<
    C::WithAsyncMethod_StoreWait<C::Service>>>>>>>>>>>>>>>>>>>;
// clang-format on
}  // namespace coordinator_grpc

// Every unary call takes one path (Serve, or ServeLater for the calls
// that wait): the authorization of the call on its job, the claim of the
// service (a refusal of the slot answers every call but Drain, its leader and
// standby payloads as trailers), then the service call, answered on gRPC's own
// thread when it returns its answer (reads, heartbeats, the store's writes) or
// later, when it replies: mutations once their journal records are durable
// (from the journal's writer thread), joins and store gets/waits when they stop
// waiting (parked, cancellable), previews when their epoch order is ready.
// Streams wait for their order the same way, then are served chunk by
// chunk (shard_stream_reactor.h). No thread waits on behalf of a call, so
// a slow disk delays only the calls that must wait for it.
class GrpcCoordinator final : public coordinator_grpc::Base {
 public:
  explicit GrpcCoordinator(const ServingSlot* slot,
                           GrpcCoordinatorOptions options = {});

  grpc::ServerWriteReactor<shard::v1::IndexChunk>* StreamShard(
      grpc::CallbackServerContext* context,
      const shard::v1::StreamShardRequest* request) override;
  grpc::ServerUnaryReactor* CreateJob(
      grpc::CallbackServerContext* context,
      const shard::v1::CreateJobRequest* request,
      shard::v1::Job* response) override;
  grpc::ServerUnaryReactor* PutCosts(
      grpc::CallbackServerContext* context,
      const shard::v1::PutCostsRequest* request,
      shard::v1::PutCostsResponse* response) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context,
                                   const shard::v1::GetJobRequest* request,
                                   shard::v1::Job* response) override;
  grpc::ServerUnaryReactor* ListJobs(
      grpc::CallbackServerContext* context,
      const shard::v1::ListJobsRequest* request,
      shard::v1::ListJobsResponse* response) override;
  grpc::ServerUnaryReactor* PreviewShard(
      grpc::CallbackServerContext* context,
      const shard::v1::PreviewShardRequest* request,
      shard::v1::PreviewShardResponse* response) override;
  grpc::ServerUnaryReactor* Heartbeat(
      grpc::CallbackServerContext* context,
      const shard::v1::HeartbeatRequest* request,
      shard::v1::HeartbeatResponse* response) override;
  grpc::ServerUnaryReactor* Leave(grpc::CallbackServerContext* context,
                                  const shard::v1::LeaveRequest* request,
                                  shard::v1::LeaveResponse* response) override;
  grpc::ServerUnaryReactor* CommitProgress(
      grpc::CallbackServerContext* context,
      const shard::v1::CommitProgressRequest* request,
      shard::v1::CommitProgressResponse* response) override;
  grpc::ServerUnaryReactor* StoreSet(
      grpc::CallbackServerContext* context,
      const shard::v1::StoreSetRequest* request,
      shard::v1::StoreSetResponse* response) override;
  grpc::ServerUnaryReactor* StoreAdd(
      grpc::CallbackServerContext* context,
      const shard::v1::StoreAddRequest* request,
      shard::v1::StoreAddResponse* response) override;
  grpc::ServerUnaryReactor* StoreCompareSet(
      grpc::CallbackServerContext* context,
      const shard::v1::StoreCompareSetRequest* request,
      shard::v1::StoreCompareSetResponse* response) override;
  grpc::ServerUnaryReactor* StoreDelete(
      grpc::CallbackServerContext* context,
      const shard::v1::StoreDeleteRequest* request,
      shard::v1::StoreDeleteResponse* response) override;
  grpc::ServerUnaryReactor* StoreCount(
      grpc::CallbackServerContext* context,
      const shard::v1::StoreCountRequest* request,
      shard::v1::StoreCountResponse* response) override;
  grpc::ServerUnaryReactor* DeleteJob(
      grpc::CallbackServerContext* context,
      const shard::v1::DeleteJobRequest* request,
      shard::v1::DeleteJobResponse* response) override;
  grpc::ServerUnaryReactor* Drain(grpc::CallbackServerContext* context,
                                  const shard::v1::DrainRequest* request,
                                  shard::v1::DrainResponse* response) override;

  // The calls that wait, posted and run by WaitingCallQueues: each is
  // answered through `reply`, which carries its cancellation.
  void ServeJoinJob(grpc::ServerContext* context,
                    const shard::v1::JoinJobRequest& request,
                    Reply<shard::v1::JoinJobResponse> reply);
  void ServeStoreGet(grpc::ServerContext* context,
                     const shard::v1::StoreGetRequest& request,
                     Reply<shard::v1::StoreGetResponse> reply);
  void ServeStoreWait(grpc::ServerContext* context,
                      const shard::v1::StoreWaitRequest& request,
                      Reply<shard::v1::StoreWaitResponse> reply);

 private:
  // The call `rpc` on `job_id` (empty for calls about no job): the
  // authorizer's check, then the slot's claim; a refusal of the slot adds
  // its trailers.
  absl::StatusOr<ServingSlot::Claim> Admit(grpc::ServerContextBase* context,
                                           absl::string_view rpc,
                                           absl::string_view job_id);

  // Leaves in `listed` only the jobs the caller may view.
  void KeepViewable(shard::v1::ListJobsResponse& listed,
                    grpc::ServerContextBase* context) const;

  // The callback API's unary path: Admit(), then `call` with the service,
  // which either returns the answer (absl::StatusOr<Response>) or also
  // takes the Reply<Response> that answers later (returning nothing). The
  // call holds its claim until it is answered.
  template <typename Response, typename Call>
  grpc::ServerUnaryReactor* Serve(grpc::CallbackServerContext* context,
                                  absl::string_view rpc,
                                  absl::string_view job_id, Response* response,
                                  Call call);
  // The path of the calls that wait: Admit(), then `call` with the
  // claimed service and a Reply that answers through `reply`, holding the
  // claim until it does.
  template <typename Response, typename Call>
  void ServeLater(grpc::ServerContextBase* context, absl::string_view rpc,
                  absl::string_view job_id, Reply<Response> reply, Call call);
  // A reactor finished with `status` (e.g. refused by Admit()).
  static grpc::ServerUnaryReactor* Finished(
      grpc::CallbackServerContext* context, const grpc::Status& status);

  const ServingSlot* slot_;
  const GrpcCoordinatorOptions options_;
  const CallAuthorizer authorizer_;
};

}  // namespace shard::server

#endif  // SERVER_RPC_GRPC_COORDINATOR_H_

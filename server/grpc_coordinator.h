// gRPC glue for shard.v1.Coordinator: checks the bearer token (when one is
// configured), translates each call to CoordinatorService and its
// absl::Status to grpc::Status. No coordination logic here. Thread-safe (the
// service is); owns neither the service nor the token.
#ifndef SERVER_GRPC_COORDINATOR_H_
#define SERVER_GRPC_COORDINATOR_H_

#include <cstdint>
#include <functional>
#include <utility>

#include "absl/time/time.h"
#include "server/coordinator_service.h"
#include "server/grpc_status.h"
#include "server/security/bearer_token.h"
#include "server/shard_stream_reactor.h"
#include "server/work_pool.h"
#include "shard/v1/shard.grpc.pb.h"

namespace shard::server {

struct GrpcCoordinatorOptions {
  // Every call must carry this token (null: no authentication).
  const security::BearerToken* token = nullptr;
  // Runs the Drain RPC: starts the daemon's graceful shutdown and returns
  // the grace in-flight calls get. Unset: Drain answers UNIMPLEMENTED.
  std::function<absl::Duration()> on_drain;
  // Stream events (metrics).
  StreamHooks stream_hooks;
  // Threads that run calls waiting for the journal's fsync or an epoch
  // order (see GrpcCoordinator).
  int blocking_call_threads = 8;
};

// Every method runs on gRPC's callback API, so no call holds a thread while
// it waits:
// - calls that only read or change memory (GetJob, Heartbeat, the store's
//   writes, ...) are answered on gRPC's own threads;
// - calls that wait for the journal's fsync (CreateJob, CommitProgress,
//   Leave, DeleteJob) or for an epoch order (PreviewShard) run on a small
//   pool of blocking-call threads;
// - joins and store gets/waits that wait are parked (parked_call_reactor.h)
//   and streams wait for their order without a thread, then are served
//   chunk by chunk (shard_stream_reactor.h).
// A slow disk therefore delays only the calls that must wait for it.
class GrpcCoordinator final : public shard::v1::Coordinator::CallbackService {
 public:
  explicit GrpcCoordinator(CoordinatorService* service,
                           GrpcCoordinatorOptions options = {});

  grpc::ServerWriteReactor<shard::v1::IndexChunk>* StreamShard(
      grpc::CallbackServerContext* context,
      const shard::v1::StreamShardRequest* request) override;
  grpc::ServerUnaryReactor* CreateJob(
      grpc::CallbackServerContext* context,
      const shard::v1::CreateJobRequest* request,
      shard::v1::Job* response) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context,
                                   const shard::v1::GetJobRequest* request,
                                   shard::v1::Job* response) override;
  grpc::ServerUnaryReactor* ListJobs(
      grpc::CallbackServerContext* context,
      const shard::v1::ListJobsRequest* request,
      shard::v1::ListJobsResponse* response) override;
  grpc::ServerUnaryReactor* JoinJob(
      grpc::CallbackServerContext* context,
      const shard::v1::JoinJobRequest* request,
      shard::v1::JoinJobResponse* response) override;
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
  grpc::ServerUnaryReactor* StoreGet(
      grpc::CallbackServerContext* context,
      const shard::v1::StoreGetRequest* request,
      shard::v1::StoreGetResponse* response) override;
  grpc::ServerUnaryReactor* StoreAdd(
      grpc::CallbackServerContext* context,
      const shard::v1::StoreAddRequest* request,
      shard::v1::StoreAddResponse* response) override;
  grpc::ServerUnaryReactor* StoreCompareSet(
      grpc::CallbackServerContext* context,
      const shard::v1::StoreCompareSetRequest* request,
      shard::v1::StoreCompareSetResponse* response) override;
  grpc::ServerUnaryReactor* StoreWait(
      grpc::CallbackServerContext* context,
      const shard::v1::StoreWaitRequest* request,
      shard::v1::StoreWaitResponse* response) override;
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

 private:
  // OK, or UNAUTHENTICATED when a token is configured and the call's
  // authorization metadata does not carry it.
  grpc::Status Authorize(const grpc::ServerContextBase* context) const;

  // Answers with `result` at once.
  template <typename Response>
  grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context,
                                   absl::StatusOr<Response> result,
                                   Response* response);
  // Runs `call` (returning absl::StatusOr<Response>) on the blocking-call
  // pool and answers with its result.
  template <typename Response, typename Call>
  grpc::ServerUnaryReactor* AnswerOffThread(
      grpc::CallbackServerContext* context, Response* response, Call call);
  // A reactor finished with `status` (e.g. refused by Authorize()).
  static grpc::ServerUnaryReactor* Finished(
      grpc::CallbackServerContext* context, const grpc::Status& status);

  CoordinatorService* service_;
  const GrpcCoordinatorOptions options_;
  WorkPool blocking_calls_;
};

}  // namespace shard::server

#endif  // SERVER_GRPC_COORDINATOR_H_

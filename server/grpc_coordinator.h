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
#include "server/security/bearer_token.h"
#include "server/work_pool.h"
#include "shard/v1/shard.grpc.pb.h"

namespace shard::server {

struct GrpcCoordinatorOptions {
  // Every call must carry this token (null: no authentication).
  const security::BearerToken* token = nullptr;
  // Runs the Drain RPC: starts the daemon's graceful shutdown and returns
  // the grace in-flight calls get. Unset: Drain answers UNIMPLEMENTED.
  std::function<absl::Duration()> on_drain;
  // Called with the size of every chunk a stream delivered (metrics).
  std::function<void(uint64_t)> on_indices_streamed;
  // Threads that open streams (waiting for epoch orders being computed).
  int stream_open_threads = 8;
};

// StreamShard and JoinJob run on gRPC's callback API (see
// shard_stream_reactor.h and parked_call_reactor.h): a waiting join holds no
// thread. The other methods are synchronous.
class GrpcCoordinator final
    : public shard::v1::Coordinator::WithCallbackMethod_JoinJob<
          shard::v1::Coordinator::WithCallbackMethod_StreamShard<
              shard::v1::Coordinator::Service>> {
 public:
  explicit GrpcCoordinator(CoordinatorService* service,
                           GrpcCoordinatorOptions options = {});

  grpc::Status CreateJob(grpc::ServerContext* context,
                         const shard::v1::CreateJobRequest* request,
                         shard::v1::Job* response) override;
  grpc::Status GetJob(grpc::ServerContext* context,
                      const shard::v1::GetJobRequest* request,
                      shard::v1::Job* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context,
                        const shard::v1::ListJobsRequest* request,
                        shard::v1::ListJobsResponse* response) override;
  grpc::ServerUnaryReactor* JoinJob(
      grpc::CallbackServerContext* context,
      const shard::v1::JoinJobRequest* request,
      shard::v1::JoinJobResponse* response) override;
  grpc::ServerWriteReactor<shard::v1::IndexChunk>* StreamShard(
      grpc::CallbackServerContext* context,
      const shard::v1::StreamShardRequest* request) override;
  grpc::Status PreviewShard(grpc::ServerContext* context,
                            const shard::v1::PreviewShardRequest* request,
                            shard::v1::PreviewShardResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context,
                         const shard::v1::HeartbeatRequest* request,
                         shard::v1::HeartbeatResponse* response) override;
  grpc::Status Leave(grpc::ServerContext* context,
                     const shard::v1::LeaveRequest* request,
                     shard::v1::LeaveResponse* response) override;
  grpc::Status CommitProgress(
      grpc::ServerContext* context,
      const shard::v1::CommitProgressRequest* request,
      shard::v1::CommitProgressResponse* response) override;
  grpc::Status StoreSet(grpc::ServerContext* context,
                        const shard::v1::StoreSetRequest* request,
                        shard::v1::StoreSetResponse* response) override;
  grpc::Status StoreGet(grpc::ServerContext* context,
                        const shard::v1::StoreGetRequest* request,
                        shard::v1::StoreGetResponse* response) override;
  grpc::Status StoreAdd(grpc::ServerContext* context,
                        const shard::v1::StoreAddRequest* request,
                        shard::v1::StoreAddResponse* response) override;
  grpc::Status StoreCompareSet(
      grpc::ServerContext* context,
      const shard::v1::StoreCompareSetRequest* request,
      shard::v1::StoreCompareSetResponse* response) override;
  grpc::Status StoreWait(grpc::ServerContext* context,
                         const shard::v1::StoreWaitRequest* request,
                         shard::v1::StoreWaitResponse* response) override;
  grpc::Status StoreDelete(grpc::ServerContext* context,
                           const shard::v1::StoreDeleteRequest* request,
                           shard::v1::StoreDeleteResponse* response) override;
  grpc::Status StoreCount(grpc::ServerContext* context,
                          const shard::v1::StoreCountRequest* request,
                          shard::v1::StoreCountResponse* response) override;

  grpc::Status DeleteJob(grpc::ServerContext* context,
                         const shard::v1::DeleteJobRequest* request,
                         shard::v1::DeleteJobResponse* response) override;
  grpc::Status Drain(grpc::ServerContext* context,
                     const shard::v1::DrainRequest* request,
                     shard::v1::DrainResponse* response) override;

 private:
  // OK, or UNAUTHENTICATED when a token is configured and the call's
  // authorization metadata does not carry it.
  grpc::Status Authorize(const grpc::ServerContextBase* context) const;

  CoordinatorService* service_;
  const GrpcCoordinatorOptions options_;
  WorkPool stream_openers_;
};

// absl::Status -> grpc::Status with the same code and message.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace shard::server

#endif  // SERVER_GRPC_COORDINATOR_H_

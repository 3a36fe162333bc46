// gRPC glue for shard.v1.Coordinator: translates each call to
// CoordinatorService and its absl::Status to grpc::Status. No logic here.
// Thread-safe (the service is); does not own the service.
#ifndef SERVER_GRPC_COORDINATOR_H_
#define SERVER_GRPC_COORDINATOR_H_

#include "server/coordinator_service.h"
#include "shard/v1/shard.grpc.pb.h"

namespace shard::server {

class GrpcCoordinator final : public shard::v1::Coordinator::Service {
 public:
  explicit GrpcCoordinator(CoordinatorService* service) : service_(service) {}

  grpc::Status CreateJob(grpc::ServerContext* context,
                         const shard::v1::CreateJobRequest* request,
                         shard::v1::Job* response) override;
  grpc::Status GetJob(grpc::ServerContext* context,
                      const shard::v1::GetJobRequest* request,
                      shard::v1::Job* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context,
                        const shard::v1::ListJobsRequest* request,
                        shard::v1::ListJobsResponse* response) override;
  grpc::Status JoinJob(grpc::ServerContext* context,
                       const shard::v1::JoinJobRequest* request,
                       shard::v1::JoinJobResponse* response) override;
  grpc::Status StreamShard(
      grpc::ServerContext* context,
      const shard::v1::StreamShardRequest* request,
      grpc::ServerWriter<shard::v1::IndexChunk>* writer) override;
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

 private:
  CoordinatorService* service_;
};

// absl::Status -> grpc::Status with the same code and message.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace shard::server

#endif  // SERVER_GRPC_COORDINATOR_H_

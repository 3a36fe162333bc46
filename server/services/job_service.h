// The job RPCs of shard.v1.Coordinator (CreateJob, DeleteJob, GetJob,
// ListJobs, PutCosts) over the coordinator's core: validates each request's
// shape, then asks the core (locked_core.h), which decides. Mutations answer
// once durable. Thread-safe; holds nothing but the core, which must outlive it.
#ifndef SERVER_SERVICES_JOB_SERVICE_H_
#define SERVER_SERVICES_JOB_SERVICE_H_

#include "absl/status/statusor.h"
#include "server/core/coordinator_core.h"
#include "server/state/tenant_limits.h"
#include "server/waiting/reply.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class JobService {
 public:
  explicit JobService(CoordinatorCore* core) : core_(core) {}

  // Creates the job (ALREADY_EXISTS for another spec under its id).
  void StartCreateJob(const shard::v1::CreateJobRequest& request,
                      Reply<shard::v1::Job> reply);
  // Admin: deletes the job (journaled); see shard.proto for the contract.
  void StartDeleteJob(const shard::v1::DeleteJobRequest& request,
                      Reply<shard::v1::DeleteJobResponse> reply);
  absl::StatusOr<shard::v1::Job> GetJob(
      const shard::v1::GetJobRequest& request);
  absl::StatusOr<shard::v1::ListJobsResponse> ListJobs(
      const shard::v1::ListJobsRequest& request);
  // One piece of a job's costs (balanced batches); see CostStore::Put.
  // `uploader`: the tenant the upload is charged to (null: none).
  absl::StatusOr<shard::v1::PutCostsResponse> PutCosts(
      const shard::v1::PutCostsRequest& request,
      std::shared_ptr<const TenantLimits> uploader = nullptr);

 private:
  CoordinatorCore* const core_;
};

// The public view of a job.
shard::v1::Job JobView(const JobState& job);

}  // namespace shard::server

#endif  // SERVER_SERVICES_JOB_SERVICE_H_

// The CommitProgress RPC of shard.v1.Coordinator over the coordinator's
// core: a position is a round boundary of the job's current world, a
// complete epoch is the start of the next one, and members waiting to join
// an elastic job are admitted at commit points. Answers once durable.
// Thread-safe; holds nothing but the core, which must outlive it.
#ifndef SERVER_SERVICES_PROGRESS_SERVICE_H_
#define SERVER_SERVICES_PROGRESS_SERVICE_H_

#include "absl/status/statusor.h"
#include "server/core/coordinator_core.h"
#include "server/waiting/reply.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class ProgressService {
 public:
  explicit ProgressService(CoordinatorCore* core) : core_(core) {}

  void StartCommitProgress(const shard::v1::CommitProgressRequest& request,
                           Reply<shard::v1::CommitProgressResponse> reply);

 private:
  CoordinatorCore* const core_;
};

}  // namespace shard::server

#endif  // SERVER_SERVICES_PROGRESS_SERVICE_H_

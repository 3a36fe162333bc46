#include "server/rpc/grpc_status.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/types/optional.h"
#include "common/leader_hint.h"

namespace shard::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

void AddRefusalTrailers(grpc::ServerContextBase* context,
                        const absl::Status& refused) {
  if (absl::optional<absl::Cord> leader =
          refused.GetPayload(kLeaderMetadataKey);
      leader.has_value() && !leader->empty()) {
    context->AddTrailingMetadata(kLeaderMetadataKey, std::string(*leader));
  }
  if (refused.GetPayload(kStandbyMetadataKey).has_value()) {
    context->AddTrailingMetadata(kStandbyMetadataKey, "1");
  }
}

}  // namespace shard::server

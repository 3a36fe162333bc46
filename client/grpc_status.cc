#include "client/grpc_status.h"

#include "absl/strings/str_cat.h"

namespace shard::client {

absl::Status FromGrpcStatus(const grpc::Status& status,
                            absl::string_view what) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(what, ": ", status.error_message()));
}

absl::Status ServerCancelledAsUnavailable(absl::Status status) {
  if (!absl::IsCancelled(status)) return status;
  return absl::UnavailableError(
      absl::StrCat(status.message(),
                   " (the coordinator cancelled the call: it was stopping)"));
}

}  // namespace shard::client

// The exception the libtorch adapters (ShardSampler, CoordinatorStore)
// throw for a coordinator error: a std::runtime_error, as libtorch and c10d
// expect, that keeps the absl::Status so that a caller can decide by code
// (ABORTED: the generation ended, re-join; NOT_FOUND: the job is gone; ...)
// instead of by message. Immutable; thread-safe.
#ifndef SHARD_CLIENT_TORCH_STATUS_ERROR_H_
#define SHARD_CLIENT_TORCH_STATUS_ERROR_H_

#include <exception>
#include <optional>
#include <stdexcept>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace shard::torch_adapter {

class StatusError : public std::runtime_error {
 public:
  // `where` names the adapter ("ShardSampler") in what().
  StatusError(absl::string_view where, absl::Status status)
      : std::runtime_error(absl::StrCat(where, ": ", status.ToString())),
        status_(std::move(status)) {}

  const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

// The status of `error` if it is a StatusError, else nullopt.
inline std::optional<absl::Status> StatusOf(const std::exception& error) {
  if (const auto* typed = dynamic_cast<const StatusError*>(&error)) {
    return typed->status();
  }
  return std::nullopt;
}

}  // namespace shard::torch_adapter

#endif  // SHARD_CLIENT_TORCH_STATUS_ERROR_H_

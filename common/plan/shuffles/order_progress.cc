#include "common/plan/shuffles/order_progress.h"

namespace shard::plan {

absl::Status OrderProgress::AwaitFinal(uint64_t entry, absl::Time deadline) {
  absl::Status final = final_.AwaitReached(entry + 1, deadline);
  if (absl::IsDeadlineExceeded(final)) {
    return absl::DeadlineExceededError(
        "the epoch order was still being computed at the call's deadline");
  }
  return final;
}

}  // namespace shard::plan

#include "common/sync/busy_process.h"

#include <malloc.h>

#include "absl/synchronization/mutex.h"

namespace shard::sync {
namespace {

constexpr int kKeptFreeBytes = 256 << 20;

}  // namespace

void TuneForManyCalls() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  mallopt(M_TRIM_THRESHOLD, kKeptFreeBytes);
}

}  // namespace shard::sync

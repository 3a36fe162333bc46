#include "common/sync/busy_process.h"

#include <malloc.h>

#include <algorithm>
#include <thread>

#include "absl/synchronization/mutex.h"

namespace shard::sync {
namespace {

constexpr int kKeptFreeBytes = 256 << 20;

}  // namespace

void TuneForManyCalls() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  mallopt(M_TRIM_THRESHOLD, kKeptFreeBytes);
  const unsigned cores = std::thread::hardware_concurrency();
  mallopt(M_ARENA_MAX, static_cast<int>(std::max(1u, cores)));
}

}  // namespace shard::sync

// How long a lock was held, call by call: counts on fixed buckets (1, 2, 5
// per decade from 1 us to 10 s), their sum and the longest hold. Recorded
// by the holder as it lets go; read at any time (metrics, benchmarks).
// Thread-safe and lock-free: recording never blocks and never allocates.
#ifndef SERVER_LOCK_HOLD_TIMES_H_
#define SERVER_LOCK_HOLD_TIMES_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"

namespace shard::server {

class LockHoldTimes {
 public:
  // Upper bounds of the buckets, in seconds (a last bucket, +Inf, follows).
  static constexpr size_t kBounds = 22;
  static const std::array<double, kBounds>& BoundsSeconds();

  // What was recorded so far.
  struct Summary {
    // Holds at most BoundsSeconds()[i] (not cumulative); the last entry
    // counts the longer ones.
    std::array<uint64_t, kBounds + 1> counts = {};
    uint64_t count = 0;
    double sum_seconds = 0;
    double max_seconds = 0;
  };

  void Record(absl::Duration held);
  Summary Read() const;

 private:
  std::array<std::atomic<uint64_t>, kBounds + 1> counts_ = {};
  std::atomic<uint64_t> count_{0};
  std::atomic<int64_t> sum_ns_{0};
  std::atomic<int64_t> max_ns_{0};
};

}  // namespace shard::server

#endif  // SERVER_LOCK_HOLD_TIMES_H_

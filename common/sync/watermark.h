// A count that only rises, and the callbacks waiting for it to reach a
// value: the one way a call waits for progress another thread makes (a
// journal's durable sequence, the final prefix of an epoch order being
// shuffled). No thread waits and nothing polls: whoever raises the count
// (Advance) runs, on its own thread and outside this object's lock, the
// callbacks it satisfied; a callback for a value already reached runs at
// once on the caller's thread. Break() ends the rise: the callbacks still
// waiting, and every later one for a value not reached, get its error
// (values reached before stay reached). Each callback runs exactly once.
//
// Thread-safe. Callbacks must be quick and must not call back into this
// object; register them without holding a lock a callback takes.
#ifndef COMMON_SYNC_WATERMARK_H_
#define COMMON_SYNC_WATERMARK_H_

#include <atomic>
#include <cstdint>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shard::sync {

class Watermark {
 public:
  // OK once the value is reached, or the error the rise broke with.
  using Callback = absl::AnyInvocable<void(absl::Status) &&>;

  // Starts at `reached`.
  explicit Watermark(uint64_t reached = 0) : reached_(reached) {}
  Watermark(const Watermark&) = delete;
  Watermark& operator=(const Watermark&) = delete;

  // The count now. What the raiser wrote before Advance() is visible to a
  // reader that saw the raised count (release / acquire).
  uint64_t reached() const { return reached_.load(std::memory_order_acquire); }

  // Raises the count to `to` (a lower value changes nothing) and runs, on
  // this thread, the callbacks waiting for values up to it.
  void Advance(uint64_t to) ABSL_LOCKS_EXCLUDED(mu_);
  // The count rises no more (`error`, not OK; the first error is kept):
  // runs every waiting callback with it.
  void Break(absl::Status error) ABSL_LOCKS_EXCLUDED(mu_);

  // Runs `done` once the count reaches `value`: OK, or the break's error
  // if it broke first.
  void WhenReached(uint64_t value, Callback done) ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until the count reaches `value`: OK, the break's error, or
  // DEADLINE_EXCEEDED at `deadline`.
  absl::Status AwaitReached(uint64_t value, absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  std::atomic<uint64_t> reached_;
  absl::Mutex mu_;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  // Callbacks by the value they wait for.
  std::multimap<uint64_t, Callback> waiting_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shard::sync

#endif  // COMMON_SYNC_WATERMARK_H_

// What a thread decided while holding a lock and runs once it holds none:
// the answers to the calls its change woke (a parked call is answered by
// whoever changed the condition it waited on, never under a lock and never
// on a thread kept for the purpose), and cleanup too slow for a lock.
//
// AfterUnlock collects such tasks; UnlockThenRun holds a mutex for its
// scope, like absl::MutexLock, and runs what was added to its AfterUnlock
// after letting the mutex go. Given a LockHoldObserver, it tells it how
// long the mutex was held, just before letting it go. A function that may be
// called under another lock takes the AfterUnlock of the outermost holder as a
// parameter instead of running anything itself. Neither is thread-safe: each
// belongs to the one thread that holds the lock.
#ifndef SERVER_WAITING_AFTER_UNLOCK_H_
#define SERVER_WAITING_AFTER_UNLOCK_H_

#include <chrono>
#include <functional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shard::server {

class AfterUnlock {
 public:
  using Task = absl::AnyInvocable<void() &&>;

  AfterUnlock() = default;
  AfterUnlock(const AfterUnlock&) = delete;
  AfterUnlock& operator=(const AfterUnlock&) = delete;
  // Runs what is left: dropping an answer would leave its client waiting.
  ~AfterUnlock() { Run(); }

  void Add(Task task) { tasks_.push_back(std::move(task)); }
  // Runs the tasks in the order they were added; call it holding no lock.
  void Run() {
    std::vector<Task> tasks = std::exchange(tasks_, {});
    for (Task& task : tasks) std::move(task)();
  }
  size_t size() const { return tasks_.size(); }

 private:
  std::vector<Task> tasks_;
};

// Told how long a mutex was held; called with it still held (the calls are
// serialised by it), so it must be quick and must not take the mutex.
using LockHoldObserver = std::function<void(absl::Duration held)>;

class ABSL_SCOPED_LOCKABLE UnlockThenRun {
 public:
  // `observe_hold` (may be null or empty; not owned) must outlive this.
  explicit UnlockThenRun(absl::Mutex* mu,
                         const LockHoldObserver* observe_hold = nullptr)
      ABSL_EXCLUSIVE_LOCK_FUNCTION(mu)
      : mu_(mu), observe_hold_(observe_hold) {
    mu_->Lock();
    if (Observed()) taken_ = std::chrono::steady_clock::now();
  }
  ~UnlockThenRun() ABSL_UNLOCK_FUNCTION() {
    if (Observed()) {
      (*observe_hold_)(
          absl::FromChrono(std::chrono::steady_clock::now() - taken_));
    }
    mu_->Unlock();
    then_.Run();
  }
  UnlockThenRun(const UnlockThenRun&) = delete;
  UnlockThenRun& operator=(const UnlockThenRun&) = delete;

  // What runs once the mutex is let go.
  AfterUnlock& then() { return then_; }

 private:
  bool Observed() const { return observe_hold_ != nullptr && *observe_hold_; }

  absl::Mutex* const mu_;
  const LockHoldObserver* const observe_hold_;
  std::chrono::steady_clock::time_point taken_;
  AfterUnlock then_;
};

}  // namespace shard::server

#endif  // SERVER_WAITING_AFTER_UNLOCK_H_

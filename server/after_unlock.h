// What a thread decided while holding a lock and runs once it holds none:
// the answers to the calls its change woke (a parked call is answered by
// whoever changed the condition it waited on, never under a lock and never
// on a thread kept for the purpose), and cleanup too slow for a lock.
//
// AfterUnlock collects such tasks; UnlockThenRun holds a mutex for its
// scope, like absl::MutexLock, and runs what was added to its AfterUnlock
// after letting the mutex go. A function that may be called under another
// lock takes the AfterUnlock of the outermost holder as a parameter instead
// of running anything itself. Neither is thread-safe: each belongs to the
// one thread that holds the lock.
#ifndef SERVER_AFTER_UNLOCK_H_
#define SERVER_AFTER_UNLOCK_H_

#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

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

class ABSL_SCOPED_LOCKABLE UnlockThenRun {
 public:
  explicit UnlockThenRun(absl::Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu)
      : mu_(mu) {
    mu_->Lock();
  }
  ~UnlockThenRun() ABSL_UNLOCK_FUNCTION() {
    mu_->Unlock();
    then_.Run();
  }
  UnlockThenRun(const UnlockThenRun&) = delete;
  UnlockThenRun& operator=(const UnlockThenRun&) = delete;

  // What runs once the mutex is let go.
  AfterUnlock& then() { return then_; }

 private:
  absl::Mutex* const mu_;
  AfterUnlock then_;
};

}  // namespace shard::server

#endif  // SERVER_AFTER_UNLOCK_H_

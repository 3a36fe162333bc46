// A fixed set of worker threads running queued tasks in FIFO order (with
// one thread, one after another). Used to compute epoch orders.
//
// Threads made with a `nice` above 0 lower their own CPU priority by that
// much (Linux, best effort: a refusal is ignored), so that their work yields
// the CPU to the process's other threads (serving calls).
// Thread-safe. The destructor runs every task already queued, then joins.
#ifndef SERVER_RUNTIME_WORK_POOL_H_
#define SERVER_RUNTIME_WORK_POOL_H_

#include <deque>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace shard::server {

class WorkPool {
 public:
  explicit WorkPool(int threads, int nice = 0);
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  void Schedule(absl::AnyInvocable<void() &&> task) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Work() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void() &&>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  const int nice_;
  std::vector<std::thread> threads_;
};

}  // namespace shard::server

#endif  // SERVER_RUNTIME_WORK_POOL_H_

// Keeps a membership's lease alive: sends a heartbeat every `interval` on a
// background thread until destroyed, and stops and remembers the answer
// when the coordinator says the membership is over: ABORTED (the generation
// ended), FAILED_PRECONDITION (the member was removed) or NOT_FOUND (the job
// was deleted, possibly re-created since), so the owner can re-join or stop.
// Other errors (UNAVAILABLE while the coordinator restarts) are not an
// ending: heartbeats go on. Thread-safe.
#ifndef SHARD_CLIENT_HEARTBEATER_H_
#define SHARD_CLIENT_HEARTBEATER_H_

#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "shard/client/coordinator_client.h"

namespace shard::client {

class Heartbeater {
 public:
  Heartbeater(std::shared_ptr<CoordinatorClient> client, Membership membership,
              absl::Duration interval);
  ~Heartbeater();
  Heartbeater(const Heartbeater&) = delete;
  Heartbeater& operator=(const Heartbeater&) = delete;

  // OK while the generation lives; the coordinator's answer once it ended.
  absl::Status status() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  const std::shared_ptr<CoordinatorClient> client_;
  const Membership membership_;
  const absl::Duration interval_;
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace shard::client

#endif  // SHARD_CLIENT_HEARTBEATER_H_

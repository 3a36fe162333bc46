// Keeps a membership's lease alive: sends a heartbeat every `interval` on a
// background thread until destroyed, and remembers when the coordinator
// says the member's generation ended (ABORTED / FAILED_PRECONDITION), so
// the owner can re-join. UNAVAILABLE (coordinator restarting) is not an
// ending: heartbeats go on. Thread-safe.
#ifndef CLIENT_HEARTBEATER_H_
#define CLIENT_HEARTBEATER_H_

#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/coordinator_client.h"

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

#endif  // CLIENT_HEARTBEATER_H_

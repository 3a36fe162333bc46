// Keeps a membership's lease alive: sends a heartbeat every `interval` on a
// background thread until destroyed, or less often when the coordinator
// asks (a large coordinator paces its ranks: shardd --max-heartbeat-rate).
// What an answer does follows the clients' table
// (proto/shard/v1/client_retries.json, the same in Python):
// - ABORTED (the generation ended, or the member was removed) is
//   remembered and heartbeats go on: they keep the lease while the owner
//   re-joins;
// - NOT_FOUND (the job was deleted), FAILED_PRECONDITION (a restarted
//   process of the member joined since), INVALID_ARGUMENT, UNAUTHENTICATED,
//   PERMISSION_DENIED and UNIMPLEMENTED are remembered and stop the
//   heartbeats: the owner must stop too;
// - any other error (UNAVAILABLE while the coordinator restarts, a slow
//   answer) is not an ending: heartbeats go on.
// Thread-safe.
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

  // OK while the generation lives; the coordinator's answer once it (or
  // the membership) ended.
  absl::Status status() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Whether `status` of a heartbeat ends the heartbeats (see above).
  static bool Ends(const absl::Status& status);
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

// What the one gRPC server of a process serves: the CoordinatorService of
// its role (a standalone coordinator's, or a replica's while it leads) or
// nothing (a standby replica, a drained coordinator), behind the replica's
// serving gate. The server lives as long as the process; a role change
// installs or takes out what serves here, never the server itself.
//
// Per-call ownership: each call claims the service it is served by and
// holds the claim until it is answered (a stream: until its shard is open),
// so a service taken out lives on until its last call let go of it. Whoever
// takes a service out owns its end: it waits until it holds the last
// reference (use_count() == 1) and destroys it on its own thread, never on
// a call's (the service's threads could be the ones answering).
//
// Each install and take-out starts a new term: a stream checks between
// chunks that the term it opened in still serves, and ends UNAVAILABLE
// (the gate's refusal, naming the leader, when the gate is closed) when it
// does not, so nothing is streamed by a replica that stopped leading or a
// coordinator that drains.
//
// Thread-safe.
#ifndef SERVER_RPC_SERVING_SLOT_H_
#define SERVER_RPC_SERVING_SLOT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/services/coordinator_service.h"

namespace shard::server {

class ServingSlot {
 public:
  // What one call is served by, and in which term.
  struct Claim {
    std::shared_ptr<CoordinatorService> service;
    uint64_t term = 0;
  };

  // `gate`: OK while this process may serve, else its refusal (see
  // CoordinatorServerOptions::serving_gate); unset: always open. Starts
  // empty.
  explicit ServingSlot(std::function<absl::Status()> gate = {});

  // The service for a call, or why there is none: the gate's refusal, or
  // UNAVAILABLE when nothing is installed.
  absl::StatusOr<Claim> Acquire() const ABSL_LOCKS_EXCLUDED(mu_);
  // OK while the gate is open and `term` is still the current one; else
  // the refusal (UNAVAILABLE).
  absl::Status StillServes(uint64_t term) const;

  // Serves `service` from now on (a new term). Requires an empty slot.
  void Install(std::shared_ptr<CoordinatorService> service)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Takes out what serves (null if nothing), drained (its waiting calls
  // answer UNAVAILABLE): a new term, in which nothing serves.
  std::shared_ptr<CoordinatorService> TakeOut() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::function<absl::Status()> gate_;
  mutable absl::Mutex mu_;
  std::shared_ptr<CoordinatorService> service_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> term_{0};
};

}  // namespace shard::server

#endif  // SERVER_RPC_SERVING_SLOT_H_

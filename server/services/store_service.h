// The rendezvous key-value RPCs of shard.v1.Coordinator (the c10d Store of
// a generation) over a RendezvousStore.
//
// Every call's scope is checked first by `check_scope`, the coordinator's
// rule (the generation must be the job's formed one: NOT_FOUND, ABORTED,
// FAILED_PRECONDITION or UNAVAILABLE otherwise). Gets and waits that ask to
// wait take a slot of `waiting` (RESOURCE_EXHAUSTED past its limit) and
// are parked without a thread until their keys come, their wait (at most
// `max_wait`) or the call's deadline ends, the generation ends or the
// client cancels. Thread-safe; owns nothing it is given, all of which must
// outlive it.
#ifndef SERVER_SERVICES_STORE_SERVICE_H_
#define SERVER_SERVICES_STORE_SERVICE_H_

#include <cstdint>
#include <functional>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/core/rendezvous_store.h"
#include "server/waiting/parked_calls.h"
#include "server/waiting/reply.h"
#include "server/waiting/waiting_calls.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class StoreService {
 public:
  // OK if calls may use the space of `scope`; the error to answer if not.
  using ScopeCheck =
      std::function<absl::Status(const shard::v1::StoreScope& scope)>;

  StoreService(RendezvousStore* store, WaitingCalls* waiting,
               absl::Duration max_wait, ScopeCheck check_scope);

  absl::StatusOr<shard::v1::StoreSetResponse> StoreSet(
      const shard::v1::StoreSetRequest& request);
  // Parks the call when it asks to wait (wait_ms > 0) and the key is not
  // set; `reply` runs once, never under a lock; its cancellation ends the
  // wait.
  void StartStoreGet(const shard::v1::StoreGetRequest& request,
                     absl::Time call_deadline,
                     Reply<shard::v1::StoreGetResponse> reply);
  absl::StatusOr<shard::v1::StoreAddResponse> StoreAdd(
      const shard::v1::StoreAddRequest& request);
  absl::StatusOr<shard::v1::StoreCompareSetResponse> StoreCompareSet(
      const shard::v1::StoreCompareSetRequest& request);
  // Like StartStoreGet, for all of the request's keys.
  void StartStoreWait(const shard::v1::StoreWaitRequest& request,
                      absl::Time call_deadline,
                      Reply<shard::v1::StoreWaitResponse> reply);
  absl::StatusOr<shard::v1::StoreDeleteResponse> StoreDelete(
      const shard::v1::StoreDeleteRequest& request);
  absl::StatusOr<shard::v1::StoreCountResponse> StoreCount(
      const shard::v1::StoreCountRequest& request);

 private:
  // A store get or wait about to start: its checked scope, its waiting slot
  // (none when it does not ask to wait) and its deadline.
  struct StoreWaitStart {
    RendezvousStore::Scope scope;
    std::optional<WaitingCalls::Slot> slot;
    absl::Time deadline;
  };
  // CheckScope, then a waiting slot for a call asking to wait `wait_ms`.
  absl::StatusOr<StoreWaitStart> StartStoreWaiting(
      const shard::v1::StoreScope& scope, uint32_t wait_ms,
      WaitingCalls::Kind kind, absl::Time call_deadline);
  // check_scope_, then the store's key of the scope.
  absl::StatusOr<RendezvousStore::Scope> CheckScope(
      const shard::v1::StoreScope& scope) const;

  RendezvousStore* const store_;
  WaitingCalls* const waiting_;
  const absl::Duration max_wait_;
  const ScopeCheck check_scope_;
};

}  // namespace shard::server

#endif  // SERVER_SERVICES_STORE_SERVICE_H_

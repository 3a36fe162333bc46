// A hot standby's copy of the coordinator state: recovered from etcd, then
// kept current by watching the records the leader writes, each applied
// with the same CoordinatorState::Check/Apply as recovery, so a replica
// that takes over has nothing to replay.
//
// A watcher thread applies records as they arrive; status() turns non-OK
// when the watch ends (etcd gone: UNAVAILABLE; the history compacted past
// what this copy holds, or a gap or a record that does not fit: DATA_LOSS)
// and the copy stops advancing: the replica must recover again.
// Thread-safe.
#ifndef SERVER_REPLICATION_ETCD_FOLLOWER_H_
#define SERVER_REPLICATION_ETCD_FOLLOWER_H_

#include <cstdint>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/replication/etcd_session.h"
#include "server/replication/etcd_state_store.h"
#include "server/state/coordinator_state.h"

namespace shard::server::replication {

class EtcdFollower {
 public:
  // Recovers from etcd and starts watching. `session` must outlive the
  // follower.
  static absl::StatusOr<std::unique_ptr<EtcdFollower>> Start(
      EtcdSession* session);
  // Ends the watch.
  ~EtcdFollower();
  EtcdFollower(const EtcdFollower&) = delete;
  EtcdFollower& operator=(const EtcdFollower&) = delete;

  // The sequence of the last record applied.
  uint64_t applied() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until record `sequence` is applied; false at `deadline` or when
  // the watch ended first.
  bool AwaitApplied(uint64_t sequence, absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A copy of the state as of applied().
  CoordinatorState state() const ABSL_LOCKS_EXCLUDED(mu_);
  // OK while following; why the copy stopped advancing otherwise.
  absl::Status status() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  EtcdFollower(EtcdStateStore::Recovered recovered,
               std::unique_ptr<EtcdSession::PrefixWatch> watch);
  void WatchLoop() ABSL_LOCKS_EXCLUDED(mu_);

  const std::unique_ptr<EtcdSession::PrefixWatch> watch_;
  mutable absl::Mutex mu_;
  EtcdStateStore::Recovered copy_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::thread watcher_;
};

}  // namespace shard::server::replication

#endif  // SERVER_REPLICATION_ETCD_FOLLOWER_H_

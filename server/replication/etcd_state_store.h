// A StateStore in etcd: the coordinator's updates as records under
// <prefix>log/<sequence>, written only by the leader and only while its
// leadership holds (EtcdSession::FencedPut), so a deposed leader can never
// append.
//
// Group commit as in the local journal: Enqueue() only queues; a writer
// thread puts everything queued during the previous round trip in one
// fenced Txn (at most kMaxRecordsPerTxn records, within etcd's default
// --max-txn-ops), then runs the WhenDurable() callbacks that Txn
// satisfied. A refused or failed Txn breaks the store (UNAVAILABLE naming
// the cause, to every pending and later call): the memory of a leader that
// lost its leadership or its etcd may be ahead of what etcd holds, and
// only a replica that reads etcd again knows what is durable.
//
// Recover() rebuilds the state from the records with the same
// CoordinatorState::Check/Apply as the local journal's recovery; a gap in
// the sequences or a record that does not fit is DATA_LOSS.
//
// Not yet: snapshots in etcd and compaction (MaybeSnapshot does nothing).
// Thread-safe.
#ifndef SERVER_REPLICATION_ETCD_STATE_STORE_H_
#define SERVER_REPLICATION_ETCD_STATE_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/coordinator_state.h"
#include "server/replication/etcd_session.h"
#include "server/storage/durable_waiters.h"
#include "server/storage/state_store.h"

namespace shard::server::replication {

class EtcdStateStore : public storage::StateStore {
 public:
  static constexpr size_t kMaxRecordsPerTxn = 100;
  // Records live under <prefix>log/<sequence, 20 digits>.
  static constexpr absl::string_view kRecordPrefix = "log/";

  struct Recovered {
    CoordinatorState state;
    uint64_t last_sequence = 0;
    // The etcd revision the records were read at: a watch from the next
    // one sees every later record.
    int64_t revision = 0;
  };
  // The state the records under the session's prefix describe.
  static absl::StatusOr<Recovered> Recover(EtcdSession& session);
  // The sequence of the newest record in etcd (0: none), read now.
  static absl::StatusOr<uint64_t> LastSequence(EtcdSession& session);
  // Applies the record stored under `key` (relative to the prefix) to
  // `into` if it is the next one; one already applied is skipped; a gap, a
  // foreign key or a record that does not fit is DATA_LOSS.
  static absl::Status ApplyRecord(const std::string& key,
                                  const std::string& value, Recovered& into);

  // Called on the writer thread after each fenced Txn that succeeded.
  using TxnObserver = std::function<void(absl::Duration, size_t records)>;

  // A store appending after `last_sequence` (what Recover found) with
  // `leadership`. `session` must outlive the store.
  EtcdStateStore(EtcdSession* session, EtcdSession::Leadership leadership,
                 uint64_t last_sequence, TxnObserver on_txn = nullptr);
  // Writes what is queued (if it still can), then stops the writer.
  ~EtcdStateStore() override;

  absl::StatusOr<uint64_t> Enqueue(const shard::state::v1::StateUpdate& update)
      override ABSL_LOCKS_EXCLUDED(mu_);
  void WhenDurable(uint64_t sequence, Durable done) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void MaybeSnapshot(const CoordinatorState&) override {}
  uint64_t last_sequence() const override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status broken() const override ABSL_LOCKS_EXCLUDED(mu_);

  // Fenced Txns written so far (group commit shows as fewer Txns than
  // records).
  uint64_t transactions() const ABSL_LOCKS_EXCLUDED(mu_);

  // The key of record `sequence`, relative to the prefix: sorted by
  // sequence as etcd sorts keys.
  static std::string RecordKey(uint64_t sequence);

 private:
  void WriterLoop() ABSL_LOCKS_EXCLUDED(mu_);

  EtcdSession* const session_;
  const EtcdSession::Leadership leadership_;
  const TxnObserver on_txn_;

  storage::DurableWaiters waiters_;  // Thread-safe on its own.
  mutable absl::Mutex mu_;
  std::vector<std::pair<std::string, std::string>> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t queue_last_ ABSL_GUARDED_BY(mu_) = 0;  // Sequence of its last.
  uint64_t last_sequence_ ABSL_GUARDED_BY(mu_);
  uint64_t transactions_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread writer_;
};

}  // namespace shard::server::replication

#endif  // SERVER_REPLICATION_ETCD_STATE_STORE_H_

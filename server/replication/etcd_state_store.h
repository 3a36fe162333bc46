// A StateStore in etcd: the coordinator's updates as records, written
// only by the leader and only while its leadership holds
// (EtcdSession::FencedPut), so a deposed leader can never append.
//
// Group commit as in the local journal: Enqueue() only queues; a writer
// thread puts everything queued during the previous round trip (up to
// kMaxBatchBytes) as one value under <prefix>log/<sequence of its first
// record>, in one fenced Txn, then runs the WhenDurable() callbacks that
// Txn satisfied (EtcdSession::FencedPut tries member after member for up
// to its timeout). A value is the records framed as in the local
// journal (storage::EncodeRecord: length, CRC-32, JournalRecord), consecutive;
// keys sort by sequence. A refused or failed Txn breaks the store (UNAVAILABLE
// naming the cause, to every pending and later call): the memory of a leader
// that lost its leadership or its etcd may be ahead of what etcd holds, and
// only a replica that reads etcd again knows what is durable.
//
// Snapshots bound etcd's footprint: every Options::snapshot_every records
// MaybeSnapshot() copies the state, and once the records it covers are
// durable the writer puts its chunks (etcd_snapshot.h), then, in one
// fenced Txn, the manifest naming it while deleting the records and older
// chunks it supersedes; then it compacts etcd's history up to the
// revision of the previous snapshot's Txn (a standby lagging by less than
// one snapshot interval keeps its watch). A snapshot that fails is retried
// at the next due point; the records stay meanwhile.
//
// Recover() rebuilds the state from the snapshot in force and the records
// after it with the same CoordinatorState::Check/Apply as the local
// journal's recovery; a gap in the sequences, a missing or damaged chunk
// or a record that does not fit is DATA_LOSS.
// Thread-safe.
#ifndef SERVER_REPLICATION_ETCD_STATE_STORE_H_
#define SERVER_REPLICATION_ETCD_STATE_STORE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/sync/watermark.h"
#include "server/replication/etcd_session.h"
#include "server/replication/etcd_snapshot.h"
#include "server/state/coordinator_state.h"
#include "server/storage/state_store.h"

namespace shard::server::replication {

class EtcdStateStore : public storage::StateStore {
 public:
  // Bytes of records one Txn puts at most (with one record more than
  // this on its own), under etcd's default --max-request-bytes of 1.5 MiB.
  static constexpr size_t kMaxBatchBytes = 1 << 20;
  // Batches of records live under <prefix>log/<first sequence, 20 digits>.
  static constexpr absl::string_view kRecordPrefix = "log/";

  struct Recovered {
    CoordinatorState state;
    uint64_t last_sequence = 0;
    // The snapshot the state started from (0: none) and its framed size.
    uint64_t snapshot_sequence = 0;
    uint64_t snapshot_bytes = 0;
    // Records applied after it.
    uint64_t records = 0;
    // The etcd revision the records were read at: a watch from the next
    // one sees every later record.
    int64_t revision = 0;
  };
  // The state the records under the session's prefix describe.
  static absl::StatusOr<Recovered> Recover(EtcdSession& session);
  // Where a new leader's store continues, read now.
  struct Position {
    // The newest record in etcd, or the snapshot in force when no record
    // follows it (0: neither).
    uint64_t last_sequence = 0;
    // The snapshot in force (0: none) and the revision of the Txn that put
    // it in force: the next snapshot counts its interval from the one and
    // compacts etcd's history up to the other, whoever wrote them.
    uint64_t snapshot_sequence = 0;
    int64_t snapshot_revision = 0;
  };
  static absl::StatusOr<Position> ReadPosition(EtcdSession& session);
  // Applies the records of the batch stored under `key` (relative to the
  // prefix) to `into`, each if it is the next one; those already applied
  // are skipped; a gap, a foreign key, a damaged batch or a record that
  // does not fit is DATA_LOSS.
  static absl::Status ApplyRecords(const std::string& key,
                                   const std::string& value, Recovered& into);
  // The value of a batch: `records` framed, in order.
  static std::string EncodeBatch(
      const std::vector<shard::state::v1::JournalRecord>& records);

  struct Options {
    // Records between snapshots.
    uint64_t snapshot_every = 10000;
    size_t snapshot_chunk_bytes = kDefaultSnapshotChunkBytes;
    // Called on the writer thread after each fenced Txn of records that
    // succeeded.
    std::function<void(absl::Duration, size_t records)> on_txn;
  };

  // A store appending after `position` (ReadPosition; {} for an empty
  // etcd) with `leadership`: its first snapshot is due snapshot_every
  // records after the snapshot in force, and compacts up to that one's
  // revision, so etcd's footprint stays bounded across leaderships.
  // `session` must outlive the store.
  EtcdStateStore(EtcdSession* session, EtcdSession::Leadership leadership,
                 Position position, Options options);
  // Writes what is queued (if it still can), then stops the writer.
  ~EtcdStateStore() override;

  absl::StatusOr<uint64_t> Enqueue(const shard::state::v1::StateUpdate& update)
      override ABSL_LOCKS_EXCLUDED(mu_);
  void WhenDurable(uint64_t sequence, Durable done) override
      ABSL_LOCKS_EXCLUDED(mu_);
  void MaybeSnapshot(const CoordinatorState& state) override
      ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t last_sequence() const override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status broken() const override ABSL_LOCKS_EXCLUDED(mu_);

  // Breaks the store with `why` (UNAVAILABLE) now, without waiting for a
  // Txn in flight: every pending WhenDurable() callback runs with it, and
  // so do later calls. For a replica that stopped leading, so that calls
  // waiting for durability are answered before its server stops (a write
  // whose Txn still succeeds is then answered UNAVAILABLE: the clients'
  // retry of it is idempotent).
  void Abandon(const absl::Status& why) ABSL_LOCKS_EXCLUDED(mu_);

  // Fenced Txns of records written so far (group commit shows as fewer
  // Txns than records).
  uint64_t transactions() const ABSL_LOCKS_EXCLUDED(mu_);
  // Snapshots put in force so far, and the sequence of the last one.
  uint64_t snapshots() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t snapshot_sequence() const ABSL_LOCKS_EXCLUDED(mu_);

  // The key of the batch whose first record is `sequence`, relative to
  // the prefix: sorted by sequence as etcd sorts keys.
  static std::string RecordKey(uint64_t sequence);

 private:
  struct PendingSnapshot {
    uint64_t sequence = 0;
    std::shared_ptr<const CoordinatorState> state;
  };

  struct QueuedRecord {
    uint64_t sequence = 0;
    std::string framed;
  };

  void WriterLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Writes one batch of `records` (the records first..last); false (the
  // store broken) if it failed.
  bool WriteRecords(uint64_t first, uint64_t last, std::string batch,
                    size_t records) ABSL_LOCKS_EXCLUDED(mu_);
  // Puts `pending` in force, deletes what it supersedes and compacts.
  void WriteSnapshot(const PendingSnapshot& pending) ABSL_LOCKS_EXCLUDED(mu_);

  EtcdSession* const session_;
  const EtcdSession::Leadership leadership_;
  const Options options_;

  // The durable sequence, and the WhenDurable() callbacks waiting for it
  // (thread-safe on its own).
  sync::Watermark durability_;
  mutable absl::Mutex mu_;
  std::deque<QueuedRecord> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t last_sequence_ ABSL_GUARDED_BY(mu_);
  uint64_t transactions_ ABSL_GUARDED_BY(mu_) = 0;
  // Records durable in etcd (written by this store or before it).
  uint64_t durable_ ABSL_GUARDED_BY(mu_);
  uint64_t records_since_snapshot_ ABSL_GUARDED_BY(mu_);
  std::optional<PendingSnapshot> pending_snapshot_ ABSL_GUARDED_BY(mu_);
  uint64_t snapshots_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t snapshot_sequence_ ABSL_GUARDED_BY(mu_);
  // Touched by the writer thread only: the revision of the last snapshot's
  // Txn (this leader's or, at first, the one in force), the next
  // compaction's target.
  int64_t previous_snapshot_revision_;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread writer_;
};

}  // namespace shard::server::replication

#endif  // SERVER_REPLICATION_ETCD_STATE_STORE_H_

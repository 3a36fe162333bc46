// Durable coordinator state under a data directory: a write-ahead journal
// of state updates plus periodic snapshots.
//
// Layout: snapshot.pb (one framed StateSnapshot: the state after record S)
// and journal-<first sequence>.log segments of framed JournalRecords.
//
// Group commit: Enqueue() only queues a record (cheap, callable under the
// caller's lock); a writer thread appends everything queued meanwhile with
// one write and one fsync, then runs the WhenDurable() callbacks the group
// satisfied. A mutation must be answered only once its sequence is durable,
// so kill -9 at any moment loses no acknowledged update; no thread waits
// for the disk on behalf of a call. Every `snapshot_every` records a
// snapshot is due: MaybeSnapshot() copies the caller's state (under its
// lock, a plain copy) and the writer thread turns the copy into a
// StateSnapshot and writes it once the records it covers are durable; then
// a new segment starts and older segments are removed, which bounds replay
// time.
//
// Recovery = snapshot + replay of later records. The journal must be one
// unbroken chain of sequences, each segment named after its first record
// (so a segment cut at a record boundary shows as a gap before the next
// one). An incomplete last record (a crash during its write, so never
// acknowledged) is cut off with one log line, its bytes kept beside the
// segment as <segment>.torn-<offset>. Everything else is refused with
// DATA_LOSS naming the file and offset, and nothing is modified: corrupt
// records (see record_codec.h), sequence gaps or repeats, an incomplete
// record in an older segment, a snapshot that does not parse or is not
// consistent, a record that passes its checksum but does not fit the state
// (CoordinatorState::Check), an unexpected segment file name. A cut exactly
// at a record boundary at the end of the newest segment cannot be told from
// a shorter history by any self-describing log. After a failed
// write or fsync the log refuses all further appends (UNAVAILABLE): what
// reached the disk is unknown, so nothing may be written after it until a
// restart recovers. Thread-safe.
#ifndef SERVER_STORAGE_STATE_LOG_H_
#define SERVER_STORAGE_STATE_LOG_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/storage/file_system.h"
#include "common/sync/watermark.h"
#include "server/state/coordinator_state.h"
#include "server/storage/state_store.h"
#include "shard/state/v1/updates.pb.h"

namespace shard::storage {

struct StateLogOptions {
  // Records between snapshots.
  uint64_t snapshot_every = 10000;
  // Called after each group of records was made durable, with the time
  // spent writing them, the time spent in fsync and how many records the
  // group held (metrics). Runs on the writer thread: keep it cheap.
  std::function<void(absl::Duration write, absl::Duration sync, size_t records)>
      on_sync;
  // Called once, on the writer thread, when a write or fsync failed and
  // the log stopped accepting records (see above).
  std::function<void(const absl::Status&)> on_broken;
};

struct RecoveryStats {
  uint64_t snapshot_sequence = 0;  // 0: no snapshot.
  uint64_t replayed_records = 0;
  bool dropped_torn_tail = false;
  size_t jobs = 0;
};

class StateLog;

// What recovery found under a data directory.
struct Recovered {
  server::CoordinatorState state;
  RecoveryStats stats;
  uint64_t last_sequence = 0;
  uint64_t snapshot_bytes = 0;
  // The newest journal segment's path (empty if none) and the sequence its
  // next record would have.
  std::string newest_segment;
  uint64_t newest_segment_next = 0;
};

enum class RecoveryMode {
  kCheck,   // Read only: report a torn tail, change nothing.
  kRepair,  // Cut off a torn tail (keeping its bytes) so appends may follow.
};

// Recovers the state stored under `dir` without opening it for appending
// (shardd --check-data-dir uses kCheck). DATA_LOSS as described above.
absl::StatusOr<Recovered> Recover(FileSystem* file_system,
                                  const std::string& dir, RecoveryMode mode);

struct OpenedLog {
  std::unique_ptr<StateLog> log;
  server::CoordinatorState state;  // As recovered.
  RecoveryStats stats;
};

// The local journal: a StateStore on one machine's disk.
class StateLog : public StateStore {
 public:
  // Recovers the state stored under `dir` (created if missing) in
  // kRepair mode and opens the log for appending. `file_system` must
  // outlive the log.
  static absl::StatusOr<OpenedLog> Open(FileSystem* file_system,
                                        const std::string& dir,
                                        StateLogOptions options = {});
  // A log that keeps nothing (tests and --in-memory).
  static std::unique_ptr<StateLog> InMemory();

  // Writes everything queued, then stops the writer thread.
  ~StateLog() override;
  StateLog(const StateLog&) = delete;
  StateLog& operator=(const StateLog&) = delete;

  // Queues the update for the writer thread and returns its sequence; never
  // waits for the disk. UNAVAILABLE once the log is broken.
  absl::StatusOr<uint64_t> Enqueue(const shard::state::v1::StateUpdate& update)
      override ABSL_LOCKS_EXCLUDED(mu_);
  // StateStore::WhenDurable: runs `done` on the writer thread right after
  // the fsync (or the failure) that decides it.
  void WhenDurable(uint64_t sequence, Durable done) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // Queues a snapshot of `state` when one is due. `state` must include
  // every queued record (the caller holds the lock it applies them under);
  // it is copied here (the only work done under the caller's lock) and
  // serialized and written by the writer thread. A failed snapshot is
  // logged and retried later (the journal still holds everything).
  void MaybeSnapshot(const server::CoordinatorState& state) override
      ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until everything queued (records and snapshots) was written.
  void Flush() ABSL_LOCKS_EXCLUDED(mu_);

  // Sequence of the last queued record.
  uint64_t last_sequence() const override ABSL_LOCKS_EXCLUDED(mu_);
  // Size of the last snapshot written or recovered, in bytes.
  uint64_t snapshot_bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  // OK, or why the log stopped accepting records.
  absl::Status broken() const override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A queued record (framed, with its sequence) or snapshot.
  struct QueuedRecord {
    uint64_t sequence;
    std::string framed;
  };
  struct QueuedSnapshot {
    uint64_t sequence;  // The state after this record.
    std::shared_ptr<const server::CoordinatorState> state;
  };
  using QueuedItem = std::variant<QueuedRecord, QueuedSnapshot>;

  StateLog(FileSystem* file_system, std::string dir, StateLogOptions options);
  absl::Status StartSegment(uint64_t first_sequence);
  std::string SegmentPath(uint64_t first_sequence) const;
  void WriterLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Appends and fsyncs `framed` (records up to `last`), then publishes
  // `last` as durable. False if the log broke.
  bool WriteGroup(const std::string& framed, uint64_t last, size_t records)
      ABSL_LOCKS_EXCLUDED(mu_);
  void WriteSnapshot(const QueuedSnapshot& queued) ABSL_LOCKS_EXCLUDED(mu_);
  void Break(const absl::Status& cause) ABSL_LOCKS_EXCLUDED(mu_);

  FileSystem* const file_system_;  // Null for the in-memory log.
  const std::string dir_;
  const StateLogOptions options_;
  // Touched by the writer thread only (and by Open before it starts).
  std::unique_ptr<AppendableFile> segment_;

  mutable absl::Mutex mu_;
  absl::CondVar changed_;  // Queue, durable sequence or broken changed.
  std::vector<QueuedItem> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;  // A batch is being written.
  uint64_t last_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t records_since_snapshot_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t snapshot_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  // The durable sequence, and the WhenDurable() callbacks waiting for it.
  sync::Watermark durability_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread writer_;
};

}  // namespace shard::storage

#endif  // SERVER_STORAGE_STATE_LOG_H_

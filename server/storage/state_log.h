// Durable coordinator state under a data directory: a write-ahead journal
// of state updates plus periodic snapshots.
//
// Layout: snapshot.pb (one framed StateSnapshot: the state after record S)
// and journal-<first sequence>.log segments of framed JournalRecords. A
// mutation is appended and fsynced before it is applied and answered, so
// kill -9 at any moment loses no acknowledged update. Every
// `snapshot_every` appends a snapshot is written atomically, a new segment
// starts and older segments are removed, which bounds replay time.
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
// append the log refuses all further appends (UNAVAILABLE): what reached the
// disk is unknown, so nothing may be written after it until a restart
// recovers. Not thread-safe: the service serialises calls.
#ifndef SERVER_STORAGE_STATE_LOG_H_
#define SERVER_STORAGE_STATE_LOG_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/storage/file_system.h"
#include "server/coordinator_state.h"
#include "shard/state/v1/updates.pb.h"

namespace shard::storage {

struct StateLogOptions {
  // Appends between snapshots.
  uint64_t snapshot_every = 10000;
  // Called after each successful durable append with the time spent
  // writing the record and the time spent in fsync (metrics). Runs on the
  // appending thread, under the caller's lock: keep it cheap.
  std::function<void(absl::Duration write, absl::Duration sync)> on_append;
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

class StateLog {
 public:
  // Recovers the state stored under `dir` (created if missing) in
  // kRepair mode and opens the log for appending. `file_system` must
  // outlive the log.
  static absl::StatusOr<OpenedLog> Open(FileSystem* file_system,
                                        const std::string& dir,
                                        StateLogOptions options = {});
  // A log that keeps nothing (tests and --in-memory).
  static std::unique_ptr<StateLog> InMemory();

  // Appends the update and makes it durable. UNAVAILABLE on failure (and
  // for every later call).
  absl::Status Append(const shard::state::v1::StateUpdate& update);

  // Writes a snapshot of `state` (which must include every appended update)
  // when one is due; a failed snapshot is logged and retried later (the
  // journal still holds everything).
  void MaybeSnapshot(const server::CoordinatorState& state);

  uint64_t last_sequence() const { return last_sequence_; }
  // Size of the last snapshot written or recovered, in bytes.
  uint64_t snapshot_bytes() const { return snapshot_bytes_; }

 private:
  StateLog(FileSystem* file_system, std::string dir, StateLogOptions options);
  absl::Status StartSegment(uint64_t first_sequence);
  std::string SegmentPath(uint64_t first_sequence) const;

  FileSystem* file_system_;  // Null for the in-memory log.
  std::string dir_;
  StateLogOptions options_;
  std::unique_ptr<AppendableFile> segment_;
  uint64_t last_sequence_ = 0;
  uint64_t appends_since_snapshot_ = 0;
  uint64_t snapshot_bytes_ = 0;
  absl::Status broken_;
};

}  // namespace shard::storage

#endif  // SERVER_STORAGE_STATE_LOG_H_

#include "server/replication/etcd_state_store.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "server/runtime/event_log.h"
#include "server/storage/record_codec.h"

namespace shard::server::replication {
namespace {

// The records of the batch under `key`, checked: consecutive, the first
// the key's sequence. DATA_LOSS naming the key otherwise.
absl::StatusOr<std::vector<shard::state::v1::JournalRecord>> DecodeBatch(
    const std::string& key, const std::string& value) {
  uint64_t first = 0;
  absl::string_view digits = key;
  if (!absl::ConsumePrefix(&digits, EtcdStateStore::kRecordPrefix) ||
      !absl::SimpleAtoi(digits, &first) ||
      key != EtcdStateStore::RecordKey(first)) {
    return absl::DataLossError(
        absl::StrCat("etcd key ", key, " is not a record key"));
  }
  auto damaged = [&key](absl::string_view why) {
    return absl::DataLossError(
        absl::StrCat("etcd records under ", key, " are damaged (", why, ")"));
  };
  absl::StatusOr<storage::DecodedRecords> decoded =
      storage::DecodeRecords(value);
  if (!decoded.ok()) return damaged(decoded.status().message());
  if (decoded->torn_tail || decoded->payloads.empty()) {
    return damaged("not whole records");
  }
  std::vector<shard::state::v1::JournalRecord> records(
      decoded->payloads.size());
  for (size_t i = 0; i < records.size(); ++i) {
    if (!records[i].ParseFromString(decoded->payloads[i]) ||
        records[i].sequence() != first + i) {
      return damaged(absl::StrCat("record ", i, " is not record ", first + i));
    }
  }
  return records;
}

// The sequence of the last record of the batch under `key`.
absl::Status LastOfBatch(const std::string& key, const std::string& value,
                         uint64_t* sequence) {
  absl::StatusOr<std::vector<shard::state::v1::JournalRecord>> records =
      DecodeBatch(key, value);
  if (!records.ok()) return records.status();
  *sequence = records->back().sequence();
  return absl::OkStatus();
}

}  // namespace

std::string EtcdStateStore::RecordKey(uint64_t sequence) {
  return absl::StrFormat("%s%020d", kRecordPrefix, sequence);
}

absl::StatusOr<EtcdStateStore::Recovered> EtcdStateStore::Recover(
    EtcdSession& session) {
  Recovered recovered;
  // The manifest, the chunks and the records at one revision, so that they
  // agree (and nothing else under the prefix, such as costs, is read).
  absl::StatusOr<EtcdEntries> manifests =
      session.List(std::string(kSnapshotManifestKey), &recovered.revision);
  if (!manifests.ok()) return manifests.status();
  absl::StatusOr<EtcdEntries> chunks =
      session.List(std::string(kSnapshotChunkPrefix), &recovered.revision);
  if (!chunks.ok()) return chunks.status();
  absl::StatusOr<EtcdEntries> records =
      session.List(std::string(kRecordPrefix), &recovered.revision);
  if (!records.ok()) return records.status();
  const std::string* manifest = nullptr;
  for (const auto& [key, value] : *manifests) {
    if (key == kSnapshotManifestKey) manifest = &value;
  }
  if (manifest != nullptr) {
    absl::StatusOr<DecodedSnapshot> snapshot =
        DecodeSnapshot(*manifest, *chunks);
    if (!snapshot.ok()) return snapshot.status();
    recovered.state = std::move(snapshot->state);
    recovered.last_sequence = recovered.snapshot_sequence = snapshot->sequence;
    recovered.snapshot_bytes = snapshot->bytes;
  }
  for (const auto& [key, value] : *records) {
    const uint64_t before = recovered.last_sequence;
    if (absl::Status s = ApplyRecords(key, value, recovered); !s.ok()) {
      return s;
    }
    recovered.records += recovered.last_sequence - before;
  }
  return recovered;
}

absl::StatusOr<EtcdStateStore::Position> EtcdStateStore::ReadPosition(
    EtcdSession& session) {
  Position position;
  absl::StatusOr<EtcdSession::Entry> manifest =
      session.GetEntry(std::string(kSnapshotManifestKey));
  if (manifest.ok()) {
    shard::state::v1::EtcdSnapshotManifest named;
    if (!named.ParseFromString(manifest->value)) {
      return absl::DataLossError(absl::StrCat("etcd key ", kSnapshotManifestKey,
                                              " is not a snapshot manifest"));
    }
    position.snapshot_sequence = named.sequence();
    position.snapshot_revision = manifest->mod_revision;
  } else if (!absl::IsNotFound(manifest.status())) {
    return manifest.status();
  }
  position.last_sequence = position.snapshot_sequence;
  absl::StatusOr<std::optional<std::pair<std::string, std::string>>> last =
      session.LastEntry(std::string(kRecordPrefix));
  if (!last.ok()) return last.status();
  if (last->has_value()) {
    if (absl::Status s = LastOfBatch((*last)->first, (*last)->second,
                                     &position.last_sequence);
        !s.ok()) {
      return s;
    }
  }
  if (position.last_sequence < position.snapshot_sequence) {
    return absl::DataLossError(
        absl::StrCat("the newest record in etcd (", position.last_sequence,
                     ") precedes the snapshot in force (record ",
                     position.snapshot_sequence, ")"));
  }
  return position;
}

std::string EtcdStateStore::EncodeBatch(
    const std::vector<shard::state::v1::JournalRecord>& records) {
  std::string batch;
  for (const auto& record : records) {
    batch += storage::EncodeRecord(record.SerializeAsString());
  }
  return batch;
}

absl::Status EtcdStateStore::ApplyRecords(const std::string& key,
                                          const std::string& value,
                                          Recovered& into) {
  absl::StatusOr<std::vector<shard::state::v1::JournalRecord>> records =
      DecodeBatch(key, value);
  if (!records.ok()) return records.status();
  for (const shard::state::v1::JournalRecord& record : *records) {
    const uint64_t sequence = record.sequence();
    if (sequence <= into.last_sequence) continue;
    if (sequence != into.last_sequence + 1) {
      return absl::DataLossError(
          absl::StrCat("etcd holds record ", sequence, " after record ",
                       into.last_sequence, ": the history has a gap"));
    }
    if (absl::Status s = into.state.Apply(record.update()); !s.ok()) {
      return absl::DataLossError(absl::StrCat(
          "etcd record ", sequence, " does not fit the state: ", s.message()));
    }
    into.last_sequence = sequence;
  }
  return absl::OkStatus();
}

EtcdStateStore::EtcdStateStore(EtcdSession* session,
                               EtcdSession::Leadership leadership,
                               Position position, Options options)
    : session_(session),
      leadership_(std::move(leadership)),
      options_(std::move(options)),
      durability_(position.last_sequence),
      last_sequence_(position.last_sequence),
      durable_(position.last_sequence),
      records_since_snapshot_(position.last_sequence -
                              position.snapshot_sequence),
      snapshot_sequence_(position.snapshot_sequence),
      previous_snapshot_revision_(position.snapshot_revision),
      writer_([this] { WriterLoop(); }) {}

EtcdStateStore::~EtcdStateStore() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  writer_.join();
  durability_.Break(absl::UnavailableError("the etcd store was closed"));
}

absl::StatusOr<uint64_t> EtcdStateStore::Enqueue(
    const shard::state::v1::StateUpdate& update) {
  absl::MutexLock lock(&mu_);
  if (!broken_.ok()) return broken_;
  const uint64_t sequence = ++last_sequence_;
  shard::state::v1::JournalRecord record;
  record.set_sequence(sequence);
  *record.mutable_update() = update;
  queue_.push_back(QueuedRecord{
      sequence, storage::EncodeRecord(record.SerializeAsString())});
  ++records_since_snapshot_;
  return sequence;
}

void EtcdStateStore::WhenDurable(uint64_t sequence, Durable done) {
  durability_.WhenReached(sequence, std::move(done));
}

void EtcdStateStore::MaybeSnapshot(const CoordinatorState& state) {
  {
    absl::MutexLock lock(&mu_);
    if (!broken_.ok() || pending_snapshot_.has_value() ||
        records_since_snapshot_ < options_.snapshot_every) {
      return;
    }
  }
  // Copied without mu_ (the writer need not wait for it); the caller's
  // lock keeps `state` and last_sequence_ still meanwhile.
  auto copy = std::make_shared<const CoordinatorState>(state);
  absl::MutexLock lock(&mu_);
  records_since_snapshot_ = 0;
  pending_snapshot_ = PendingSnapshot{last_sequence_, std::move(copy)};
}

void EtcdStateStore::WriterLoop() {
  while (true) {
    std::optional<PendingSnapshot> snapshot;
    std::string batch;
    uint64_t first = 0;
    uint64_t last = 0;
    size_t records = 0;
    {
      absl::MutexLock lock(&mu_);
      // A snapshot is due once the records it covers are durable.
      auto snapshot_ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return pending_snapshot_.has_value() &&
               durable_ >= pending_snapshot_->sequence;
      };
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty() || snapshot_ready();
      };
      mu_.Await(absl::Condition(&ready));
      if (!broken_.ok()) return;
      if (snapshot_ready()) {
        snapshot = std::move(pending_snapshot_);
        pending_snapshot_.reset();
      } else if (queue_.empty()) {
        return;  // Stopping with nothing left to write.
      } else {
        // One batch: everything queued, up to kMaxBatchBytes, ending at a
        // pending snapshot's record (so that the snapshot's deletion takes
        // whole batches).
        const uint64_t cut = pending_snapshot_.has_value()
                                 ? pending_snapshot_->sequence
                                 : std::numeric_limits<uint64_t>::max();
        first = queue_.front().sequence;
        while (!queue_.empty() &&
               (batch.empty() || (batch.size() + queue_.front().framed.size() <=
                                      kMaxBatchBytes &&
                                  last < cut))) {
          batch += queue_.front().framed;
          last = queue_.front().sequence;
          ++records;
          queue_.pop_front();
        }
      }
    }
    if (snapshot.has_value()) {
      WriteSnapshot(*snapshot);
    } else if (!WriteRecords(first, last, std::move(batch), records)) {
      return;
    }
  }
}

bool EtcdStateStore::WriteRecords(uint64_t first, uint64_t last,
                                  std::string batch, size_t records) {
  const absl::Time began = absl::Now();
  // The session tries member after member: failing here, etcd could not
  // be reached for its whole timeout.
  const absl::StatusOr<int64_t> written =
      session_->FencedPut(leadership_, {{RecordKey(first), batch}});
  if (written.ok() && options_.on_txn) {
    options_.on_txn(absl::Now() - began, records);
  }
  absl::Status broken;
  {
    absl::MutexLock lock(&mu_);
    ++transactions_;
    if (written.ok()) {
      durable_ = last;
    } else if (broken_.ok()) {
      broken_ = broken = absl::UnavailableError(absl::StrCat(
          "cannot make state durable in etcd (", written.status().message(),
          "); this replica stops leading and the next leader continues "
          "from what etcd holds"));
      queue_.clear();
      pending_snapshot_.reset();
    }
  }
  if (!written.ok()) {
    if (!broken.ok()) durability_.Break(broken);
    return false;
  }
  durability_.Advance(last);
  return true;
}

void EtcdStateStore::Abandon(const absl::Status& why) {
  {
    absl::MutexLock lock(&mu_);
    if (!broken_.ok()) return;
    broken_ = why;
    queue_.clear();
    pending_snapshot_.reset();
  }
  durability_.Break(why);
}

void EtcdStateStore::WriteSnapshot(const PendingSnapshot& pending) {
  const EncodedSnapshot encoded = EncodeSnapshot(
      *pending.state, pending.sequence, options_.snapshot_chunk_bytes);
  absl::StatusOr<int64_t> revision = absl::UnknownError("no chunk");
  for (const auto& chunk : encoded.chunks) {
    revision = session_->FencedPut(leadership_, {chunk});
    if (!revision.ok()) break;
  }
  if (revision.ok()) {
    // In force, and what it supersedes gone, in one step.
    revision = session_->FencedPut(
        leadership_, {{std::string(kSnapshotManifestKey), encoded.manifest}},
        {{std::string(kRecordPrefix), RecordKey(pending.sequence + 1)},
         {std::string(kSnapshotChunkPrefix),
          SnapshotChunksPrefix(pending.sequence)}});
  }
  if (!revision.ok()) {
    // The records stay; the next due point tries again (a deposed leader's
    // next record Txn breaks the store).
    LogEvent(
        absl::StrCat("etcd snapshot at record ", pending.sequence,
                     " failed, will retry: ", revision.status().message()));
    return;
  }
  if (previous_snapshot_revision_ > 0) {
    if (absl::Status compacted = session_->Compact(previous_snapshot_revision_);
        !compacted.ok()) {
      LogEvent(absl::StrCat("etcd compaction failed, will retry: ",
                            compacted.message()));
    }
  }
  previous_snapshot_revision_ = *revision;
  absl::MutexLock lock(&mu_);
  ++snapshots_;
  snapshot_sequence_ = pending.sequence;
}

uint64_t EtcdStateStore::last_sequence() const {
  absl::MutexLock lock(&mu_);
  return last_sequence_;
}

absl::Status EtcdStateStore::broken() const {
  absl::MutexLock lock(&mu_);
  return broken_;
}

uint64_t EtcdStateStore::transactions() const {
  absl::MutexLock lock(&mu_);
  return transactions_;
}

uint64_t EtcdStateStore::snapshots() const {
  absl::MutexLock lock(&mu_);
  return snapshots_;
}

uint64_t EtcdStateStore::snapshot_sequence() const {
  absl::MutexLock lock(&mu_);
  return snapshot_sequence_;
}

}  // namespace shard::server::replication

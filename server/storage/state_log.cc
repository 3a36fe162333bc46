#include "server/storage/state_log.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "server/runtime/event_log.h"
#include "server/storage/record_codec.h"

namespace shard::storage {
namespace {

constexpr char kSnapshotName[] = "snapshot.pb";
constexpr char kSegmentPrefix[] = "journal-";
constexpr char kSegmentSuffix[] = ".log";
constexpr int kSegmentDigits = 20;

// One journal segment file: its name and the first sequence it holds.
struct Segment {
  uint64_t first;
  std::string name;
};

// The journal segments among `names`, sorted by first sequence. A name that
// looks like a segment but is not one this log writes (journal-5.log) is
// refused rather than guessed at.
absl::StatusOr<std::vector<Segment>> FindSegments(
    const std::vector<std::string>& names) {
  std::vector<Segment> segments;
  for (const std::string& name : names) {
    absl::string_view digits = name;
    if (!absl::ConsumePrefix(&digits, kSegmentPrefix) ||
        !absl::ConsumeSuffix(&digits, kSegmentSuffix)) {
      continue;
    }
    uint64_t first;
    if (digits.size() != kSegmentDigits ||
        !std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit) ||
        !absl::SimpleAtoi(digits, &first)) {
      return absl::DataLossError(absl::StrCat(
          "unexpected file ", name,
          " in the data directory: journal segments "
          "are named ",
          kSegmentPrefix, "<", kSegmentDigits, " digits>", kSegmentSuffix,
          "; move it away if it does not belong here"));
    }
    segments.push_back({first, name});
  }
  std::sort(
      segments.begin(), segments.end(),
      [](const Segment& a, const Segment& b) { return a.first < b.first; });
  return segments;
}

absl::Status ReadSnapshot(FileSystem* fs, const std::string& path,
                          Recovered* recovered) {
  absl::StatusOr<std::string> contents = fs->ReadFile(path);
  if (absl::IsNotFound(contents.status())) return absl::OkStatus();
  if (!contents.ok()) return contents.status();
  auto corrupt = [&path](absl::string_view why) {
    return absl::DataLossError(
        absl::StrCat("snapshot ", path, " is corrupt (", why,
                     "); restore the data directory from a backup"));
  };
  absl::StatusOr<DecodedRecords> decoded = DecodeRecords(*contents);
  if (!decoded.ok()) return corrupt(decoded.status().message());
  shard::state::v1::StateSnapshot snapshot;
  if (decoded->torn_tail || decoded->payloads.size() != 1 ||
      !snapshot.ParseFromString(decoded->payloads[0])) {
    return corrupt("not one whole StateSnapshot record");
  }
  absl::StatusOr<server::CoordinatorState> state =
      server::CoordinatorState::FromSnapshot(snapshot);
  if (!state.ok()) return corrupt(state.status().message());
  recovered->state = *std::move(state);
  recovered->stats.snapshot_sequence = snapshot.sequence();
  recovered->snapshot_bytes = contents->size();
  return absl::OkStatus();
}

std::string DataLossAdvice() {
  return ". Refusing to start rather than drop or invent history; restore the "
         "data directory from a backup (shardd --check-data-dir tells whether "
         "a copy is sound)";
}

// Applies the records of the segment at `path`, each the sequence `*next`
// (advanced); those up to `snapshot_sequence` are in the snapshot already.
// DATA_LOSS naming the record's offset otherwise.
absl::Status ApplySegment(const std::string& path,
                          const DecodedRecords& decoded,
                          uint64_t snapshot_sequence, uint64_t* next,
                          Recovered* recovered) {
  for (size_t k = 0; k < decoded.payloads.size(); ++k) {
    auto bad_record = [&](absl::string_view why) {
      return absl::DataLossError(absl::StrCat(path, ": record at byte offset ",
                                              decoded.offsets[k], " ", why,
                                              DataLossAdvice()));
    };
    shard::state::v1::JournalRecord record;
    if (!record.ParseFromString(decoded.payloads[k])) {
      return bad_record("passes its checksum but is not a JournalRecord");
    }
    if (record.sequence() != *next) {
      return bad_record(absl::StrCat("has sequence ", record.sequence(),
                                     " where ", *next, " must follow"));
    }
    ++*next;
    if (record.sequence() <= snapshot_sequence) continue;  // In snapshot.
    if (absl::Status s = recovered->state.Apply(record.update()); !s.ok()) {
      return bad_record(
          absl::StrCat("does not fit the recovered state: ", s.message()));
    }
    ++recovered->stats.replayed_records;
  }
  return absl::OkStatus();
}

// Cuts the incomplete last record off the newest segment at `path`
// (`contents`), keeping it next to the journal as evidence.
absl::Status CutTornTail(FileSystem* fs, const std::string& path,
                         const std::string& contents,
                         const DecodedRecords& decoded) {
  const std::string kept = absl::StrCat(path, ".torn-", decoded.valid_bytes);
  if (absl::Status s = fs->WriteFileAtomically(
          kept, absl::string_view(contents).substr(decoded.valid_bytes));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = fs->Truncate(path, decoded.valid_bytes); !s.ok()) {
    return s;
  }
  server::LogEvent(absl::StrCat(
      "journal ", path, ": dropped an incomplete last record after byte ",
      decoded.valid_bytes, " (", contents.size() - decoded.valid_bytes,
      " bytes, kept in ", kept,
      "; a write interrupted by a crash, never acknowledged)"));
  return absl::OkStatus();
}

// Applies one journal segment's records after the snapshot's to
// `recovered`, advancing `next`; a torn tail is allowed in the newest
// segment only (and cut off there in kRepair mode).
absl::Status ReplaySegment(FileSystem* fs, const std::string& path,
                           bool last_segment, RecoveryMode mode,
                           uint64_t snapshot_sequence, uint64_t* next,
                           Recovered* recovered) {
  absl::StatusOr<std::string> contents = fs->ReadFile(path);
  if (!contents.ok()) return contents.status();
  absl::StatusOr<DecodedRecords> decoded = DecodeRecords(*contents);
  if (!decoded.ok()) {
    return absl::DataLossError(
        absl::StrCat(path, ": ", decoded.status().message(), DataLossAdvice()));
  }
  if (decoded->torn_tail && !last_segment) {
    return absl::DataLossError(
        absl::StrCat(path, ": ends in an incomplete record after byte ",
                     decoded->valid_bytes, " but is not the newest segment",
                     DataLossAdvice()));
  }
  if (absl::Status s =
          ApplySegment(path, *decoded, snapshot_sequence, next, recovered);
      !s.ok()) {
    return s;
  }
  if (decoded->torn_tail) {
    recovered->stats.dropped_torn_tail = true;
    if (mode == RecoveryMode::kRepair) {
      if (absl::Status s = CutTornTail(fs, path, *contents, *decoded);
          !s.ok()) {
        return s;
      }
    }
  }
  if (last_segment) {
    recovered->newest_segment = path;
    recovered->newest_segment_next = *next;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Recovered> Recover(FileSystem* fs, const std::string& dir,
                                  RecoveryMode mode) {
  Recovered recovered;
  if (absl::Status s =
          ReadSnapshot(fs, absl::StrCat(dir, "/", kSnapshotName), &recovered);
      !s.ok()) {
    return s;
  }
  const uint64_t snapshot_sequence = recovered.stats.snapshot_sequence;
  absl::StatusOr<std::vector<std::string>> names = fs->ListDir(dir);
  if (!names.ok()) return names.status();
  absl::StatusOr<std::vector<Segment>> segments = FindSegments(*names);
  if (!segments.ok()) return segments.status();

  // The journal is one chain of sequences 1, 2, 3, ... cut into segments,
  // each named after its first record; records up to the snapshot's
  // sequence are already in the snapshot.
  uint64_t next =
      segments->empty() ? snapshot_sequence + 1 : segments->front().first;
  if (next > snapshot_sequence + 1) {
    return absl::DataLossError(
        absl::StrCat("the journal starts at sequence ", next,
                     " but the snapshot holds "
                     "only up to ",
                     snapshot_sequence, DataLossAdvice()));
  }
  for (size_t i = 0; i < segments->size(); ++i) {
    const Segment& segment = (*segments)[i];
    const std::string path = absl::StrCat(dir, "/", segment.name);
    if (segment.first != next) {
      return absl::DataLossError(absl::StrCat(
          path, ": starts at sequence ", segment.first,
          " but the segment before it ends at ", next - 1, DataLossAdvice()));
    }
    const bool last_segment = i + 1 == segments->size();
    if (absl::Status s = ReplaySegment(fs, path, last_segment, mode,
                                       snapshot_sequence, &next, &recovered);
        !s.ok()) {
      return s;
    }
  }
  recovered.last_sequence = std::max(snapshot_sequence, next - 1);
  recovered.stats.jobs = recovered.state.jobs().size();
  return recovered;
}

StateLog::StateLog(FileSystem* file_system, std::string dir,
                   StateLogOptions options)
    : file_system_(file_system), dir_(std::move(dir)), options_(options) {}

StateLog::~StateLog() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    changed_.SignalAll();
  }
  if (writer_.joinable()) writer_.join();
  // The writer wrote everything queued, so nothing should be left.
  durability_.Break(absl::UnavailableError("the journal was closed"));
}

std::unique_ptr<StateLog> StateLog::InMemory() {
  return std::unique_ptr<StateLog>(new StateLog(nullptr, "", {}));
}

std::string StateLog::SegmentPath(uint64_t first_sequence) const {
  return absl::StrFormat("%s/%s%0*d%s", dir_, kSegmentPrefix, kSegmentDigits,
                         first_sequence, kSegmentSuffix);
}

absl::StatusOr<OpenedLog> StateLog::Open(FileSystem* fs, const std::string& dir,
                                         StateLogOptions options) {
  if (absl::Status s = fs->CreateDir(dir); !s.ok()) return s;
  absl::StatusOr<Recovered> recovered = Recover(fs, dir, RecoveryMode::kRepair);
  if (!recovered.ok()) return recovered.status();
  OpenedLog opened;
  opened.log = std::unique_ptr<StateLog>(new StateLog(fs, dir, options));
  opened.state = std::move(recovered->state);
  opened.stats = recovered->stats;
  StateLog& log = *opened.log;
  const uint64_t last = recovered->last_sequence;
  {
    absl::MutexLock lock(&log.mu_);
    log.last_sequence_ = last;
    log.snapshot_bytes_ = recovered->snapshot_bytes;
    log.records_since_snapshot_ = recovered->stats.replayed_records;
  }
  // Continue in the newest segment when the next record follows on in it;
  // otherwise (no segment, or one that ends before the snapshot) start one.
  if (!recovered->newest_segment.empty() &&
      recovered->newest_segment_next == last + 1) {
    absl::StatusOr<std::unique_ptr<AppendableFile>> segment =
        fs->OpenAppendable(recovered->newest_segment);
    if (!segment.ok()) return segment.status();
    log.segment_ = *std::move(segment);
  } else if (absl::Status s = log.StartSegment(last + 1); !s.ok()) {
    return s;
  }
  log.durability_.Advance(last);
  log.writer_ = std::thread([&log] { log.WriterLoop(); });
  return opened;
}

absl::Status StateLog::StartSegment(uint64_t first_sequence) {
  absl::StatusOr<std::unique_ptr<AppendableFile>> segment =
      file_system_->OpenAppendable(SegmentPath(first_sequence));
  if (!segment.ok()) return segment.status();
  segment_ = *std::move(segment);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> StateLog::Enqueue(
    const shard::state::v1::StateUpdate& update) {
  absl::ReleasableMutexLock lock(&mu_);
  if (!broken_.ok()) return broken_;
  const uint64_t sequence = ++last_sequence_;
  ++records_since_snapshot_;
  if (file_system_ == nullptr) {
    lock.Release();
    durability_.Advance(sequence);  // Kept nowhere: durable at once.
    return sequence;
  }
  shard::state::v1::JournalRecord record;
  record.set_sequence(sequence);
  *record.mutable_update() = update;
  queue_.push_back(
      QueuedRecord{sequence, EncodeRecord(record.SerializeAsString())});
  changed_.Signal();
  return sequence;
}

void StateLog::WhenDurable(uint64_t sequence, Durable done) {
  durability_.WhenReached(sequence, std::move(done));
}

void StateLog::MaybeSnapshot(const server::CoordinatorState& state) {
  uint64_t sequence;
  {
    absl::MutexLock lock(&mu_);
    if (file_system_ == nullptr || !broken_.ok() ||
        records_since_snapshot_ < options_.snapshot_every) {
      return;
    }
    records_since_snapshot_ = 0;
    sequence = last_sequence_;
  }
  // Copied without mu_ (the writer need not wait for it); the caller's
  // lock keeps `state` and last_sequence_ still meanwhile.
  auto copy = std::make_shared<const server::CoordinatorState>(state);
  absl::MutexLock lock(&mu_);
  queue_.push_back(QueuedSnapshot{sequence, std::move(copy)});
  changed_.Signal();
}

void StateLog::Flush() {
  absl::MutexLock lock(&mu_);
  while ((!queue_.empty() || writing_) && broken_.ok()) changed_.Wait(&mu_);
}

uint64_t StateLog::last_sequence() const {
  absl::MutexLock lock(&mu_);
  return last_sequence_;
}

uint64_t StateLog::snapshot_bytes() const {
  absl::MutexLock lock(&mu_);
  return snapshot_bytes_;
}

absl::Status StateLog::broken() const {
  absl::MutexLock lock(&mu_);
  return broken_;
}

void StateLog::WriterLoop() {
  while (true) {
    std::vector<QueuedItem> batch;
    {
      absl::MutexLock lock(&mu_);
      while (queue_.empty() && !stopping_) changed_.Wait(&mu_);
      if (queue_.empty()) return;  // Stopping with nothing left to write.
      batch.swap(queue_);
      writing_ = true;
    }
    // Consecutive records go out as one write and one fsync; a snapshot
    // waits until the records it covers are durable.
    std::string group;
    uint64_t group_last = 0;
    size_t group_records = 0;
    bool ok = true;
    for (QueuedItem& item : batch) {
      if (auto* record = std::get_if<QueuedRecord>(&item)) {
        group += record->framed;
        group_last = record->sequence;
        ++group_records;
        continue;
      }
      if (group_records > 0) {
        ok = WriteGroup(group, group_last, group_records);
        group.clear();
        group_records = 0;
      }
      if (!ok) break;
      WriteSnapshot(std::get<QueuedSnapshot>(item));
    }
    if (ok && group_records > 0) WriteGroup(group, group_last, group_records);
    absl::MutexLock lock(&mu_);
    writing_ = false;
    changed_.SignalAll();
  }
}

bool StateLog::WriteGroup(const std::string& framed, uint64_t last,
                          size_t records) {
  const absl::Time began = absl::Now();
  absl::Status status = segment_->Append(framed);
  const absl::Time written = absl::Now();
  if (status.ok()) status = segment_->Sync();
  if (!status.ok()) {
    Break(status);
    return false;
  }
  if (options_.on_sync) {
    options_.on_sync(written - began, absl::Now() - written, records);
  }
  durability_.Advance(last);
  return true;
}

void StateLog::Break(const absl::Status& cause) {
  const absl::Status broken = absl::UnavailableError(absl::StrCat(
      "cannot make state durable (", cause.message(),
      "); this coordinator refuses all calls until it is restarted"));
  server::LogEvent(broken.message());
  {
    absl::MutexLock lock(&mu_);
    broken_ = broken;
    queue_.clear();
    changed_.SignalAll();
  }
  durability_.Break(broken);
  if (options_.on_broken) options_.on_broken(broken);
}

void StateLog::WriteSnapshot(const QueuedSnapshot& queued) {
  const std::string contents = EncodeRecord(
      queued.state->ToSnapshot(queued.sequence).SerializeAsString());
  absl::Status status = file_system_->WriteFileAtomically(
      absl::StrCat(dir_, "/", kSnapshotName), contents);
  if (status.ok()) status = StartSegment(queued.sequence + 1);
  if (!status.ok()) {
    server::LogEvent(
        absl::StrCat("snapshot failed, will retry: ", status.message()));
    absl::MutexLock lock(&mu_);
    records_since_snapshot_ += options_.snapshot_every;  // Due again.
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    snapshot_bytes_ = contents.size();
  }
  // Segments before the new one are covered by the snapshot.
  absl::StatusOr<std::vector<std::string>> names = file_system_->ListDir(dir_);
  if (!names.ok()) return;
  absl::StatusOr<std::vector<Segment>> segments = FindSegments(*names);
  if (!segments.ok()) return;
  for (const Segment& segment : *segments) {
    if (segment.first <= queued.sequence) {
      file_system_->Remove(absl::StrCat(dir_, "/", segment.name)).IgnoreError();
    }
  }
}

}  // namespace shard::storage

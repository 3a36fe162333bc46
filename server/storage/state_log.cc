#include "server/storage/state_log.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "server/event_log.h"
#include "server/storage/record_codec.h"

namespace shard::storage {
namespace {

constexpr char kSnapshotName[] = "snapshot.pb";
constexpr char kSegmentPrefix[] = "journal-";
constexpr char kSegmentSuffix[] = ".log";

// First sequence numbers of the journal segments in `names`, sorted.
std::vector<uint64_t> SegmentStarts(const std::vector<std::string>& names) {
  std::vector<uint64_t> starts;
  for (absl::string_view name : names) {
    uint64_t first;
    if (absl::ConsumePrefix(&name, kSegmentPrefix) &&
        absl::ConsumeSuffix(&name, kSegmentSuffix) &&
        absl::SimpleAtoi(name, &first)) {
      starts.push_back(first);
    }
  }
  std::sort(starts.begin(), starts.end());
  return starts;
}

absl::Status ReadSnapshot(FileSystem* fs, const std::string& path,
                          OpenedLog* opened, uint64_t* bytes) {
  absl::StatusOr<std::string> contents = fs->ReadFile(path);
  if (absl::IsNotFound(contents.status())) return absl::OkStatus();
  if (!contents.ok()) return contents.status();
  absl::StatusOr<DecodedRecords> decoded = DecodeRecords(*contents);
  shard::state::v1::StateSnapshot snapshot;
  if (!decoded.ok() || decoded->torn_tail || decoded->payloads.size() != 1 ||
      !snapshot.ParseFromString(decoded->payloads[0])) {
    return absl::DataLossError(
        absl::StrCat("snapshot ", path,
                     " is corrupt; restore the data directory from a "
                     "backup"));
  }
  opened->state = server::CoordinatorState::FromSnapshot(snapshot);
  opened->stats.snapshot_sequence = snapshot.sequence();
  *bytes = contents->size();
  return absl::OkStatus();
}

}  // namespace

StateLog::StateLog(FileSystem* file_system, std::string dir,
                   StateLogOptions options)
    : file_system_(file_system), dir_(std::move(dir)), options_(options) {}

std::unique_ptr<StateLog> StateLog::InMemory() {
  return std::unique_ptr<StateLog>(new StateLog(nullptr, "", {}));
}

std::string StateLog::SegmentPath(uint64_t first_sequence) const {
  return absl::StrFormat("%s/%s%020d%s", dir_, kSegmentPrefix, first_sequence,
                         kSegmentSuffix);
}

absl::StatusOr<OpenedLog> StateLog::Open(FileSystem* fs, const std::string& dir,
                                         StateLogOptions options) {
  if (absl::Status s = fs->CreateDir(dir); !s.ok()) return s;
  OpenedLog opened;
  opened.log = std::unique_ptr<StateLog>(new StateLog(fs, dir, options));
  StateLog& log = *opened.log;
  if (absl::Status s = ReadSnapshot(fs, absl::StrCat(dir, "/", kSnapshotName),
                                    &opened, &log.snapshot_bytes_);
      !s.ok()) {
    return s;
  }
  log.last_sequence_ = opened.stats.snapshot_sequence;

  absl::StatusOr<std::vector<std::string>> names = fs->ListDir(dir);
  if (!names.ok()) return names.status();
  const std::vector<uint64_t> starts = SegmentStarts(*names);
  for (size_t i = 0; i < starts.size(); ++i) {
    const std::string path = log.SegmentPath(starts[i]);
    absl::StatusOr<std::string> contents = fs->ReadFile(path);
    if (!contents.ok()) return contents.status();
    absl::StatusOr<DecodedRecords> decoded = DecodeRecords(*contents);
    if (!decoded.ok()) {
      return absl::DataLossError(absl::StrCat(
          path, ": ", decoded.status().message(),
          ". Refusing to start rather than drop history; restore the data "
          "directory from a backup, or truncate this file at that offset to "
          "accept losing the updates after it"));
    }
    const bool last_segment = i + 1 == starts.size();
    if (decoded->torn_tail && !last_segment) {
      return absl::DataLossError(absl::StrCat(
          path, " ends in a torn record but is not the newest segment"));
    }
    for (const std::string& payload : decoded->payloads) {
      shard::state::v1::JournalRecord record;
      if (!record.ParseFromString(payload)) {
        return absl::DataLossError(
            absl::StrCat(path,
                         ": a record with a valid checksum does not "
                         "parse as a JournalRecord"));
      }
      if (record.sequence() <= log.last_sequence_) continue;  // In snapshot.
      if (record.sequence() != log.last_sequence_ + 1) {
        return absl::DataLossError(
            absl::StrCat(path, ": journal jumps from sequence ",
                         log.last_sequence_, " to ", record.sequence()));
      }
      opened.state.Apply(record.update());
      log.last_sequence_ = record.sequence();
      ++opened.stats.replayed_records;
    }
    if (decoded->torn_tail) {
      server::LogEvent(absl::StrCat(
          "journal ", path, ": dropped a torn record after byte ",
          decoded->valid_bytes, " (", contents->size() - decoded->valid_bytes,
          " bytes; a write interrupted by a crash, never acknowledged)"));
      if (absl::Status s = fs->Truncate(path, decoded->valid_bytes); !s.ok()) {
        return s;
      }
      opened.stats.dropped_torn_tail = true;
    }
  }
  opened.stats.jobs = opened.state.jobs().size();
  log.appends_since_snapshot_ = opened.stats.replayed_records;
  // Continue in the newest segment, or start one.
  if (starts.empty()) {
    if (absl::Status s = log.StartSegment(log.last_sequence_ + 1); !s.ok()) {
      return s;
    }
  } else {
    absl::StatusOr<std::unique_ptr<AppendableFile>> segment =
        fs->OpenAppendable(log.SegmentPath(starts.back()));
    if (!segment.ok()) return segment.status();
    log.segment_ = *std::move(segment);
  }
  return opened;
}

absl::Status StateLog::StartSegment(uint64_t first_sequence) {
  absl::StatusOr<std::unique_ptr<AppendableFile>> segment =
      file_system_->OpenAppendable(SegmentPath(first_sequence));
  if (!segment.ok()) return segment.status();
  segment_ = *std::move(segment);
  return absl::OkStatus();
}

absl::Status StateLog::Append(const shard::state::v1::StateUpdate& update) {
  if (!broken_.ok()) return broken_;
  if (file_system_ == nullptr) {
    ++last_sequence_;
    return absl::OkStatus();
  }
  shard::state::v1::JournalRecord record;
  record.set_sequence(last_sequence_ + 1);
  *record.mutable_update() = update;
  const absl::Time began = absl::Now();
  absl::Status status =
      segment_->Append(EncodeRecord(record.SerializeAsString()));
  const absl::Time written = absl::Now();
  if (status.ok()) status = segment_->Sync();
  if (!status.ok()) {
    broken_ = absl::UnavailableError(absl::StrCat(
        "cannot make state durable (", status.message(),
        "); this coordinator refuses changes until it is restarted"));
    server::LogEvent(broken_.message());
    return broken_;
  }
  ++last_sequence_;
  ++appends_since_snapshot_;
  if (options_.on_append) {
    options_.on_append(written - began, absl::Now() - written);
  }
  return absl::OkStatus();
}

void StateLog::MaybeSnapshot(const server::CoordinatorState& state) {
  if (file_system_ == nullptr || !broken_.ok() ||
      appends_since_snapshot_ < options_.snapshot_every) {
    return;
  }
  const std::string contents =
      EncodeRecord(state.ToSnapshot(last_sequence_).SerializeAsString());
  absl::Status status = file_system_->WriteFileAtomically(
      absl::StrCat(dir_, "/", kSnapshotName), contents);
  if (status.ok()) status = StartSegment(last_sequence_ + 1);
  if (!status.ok()) {
    server::LogEvent(
        absl::StrCat("snapshot failed, will retry: ", status.message()));
    return;
  }
  snapshot_bytes_ = contents.size();
  appends_since_snapshot_ = 0;
  // Segments before the new one are covered by the snapshot.
  absl::StatusOr<std::vector<std::string>> names = file_system_->ListDir(dir_);
  if (names.ok()) {
    for (uint64_t start : SegmentStarts(*names)) {
      if (start <= last_sequence_) {
        file_system_->Remove(SegmentPath(start)).IgnoreError();
      }
    }
  }
}

}  // namespace shard::storage

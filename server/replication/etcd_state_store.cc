#include "server/replication/etcd_state_store.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace shard::server::replication {
std::string EtcdStateStore::RecordKey(uint64_t sequence) {
  return absl::StrFormat("%s%020d", kRecordPrefix, sequence);
}

absl::StatusOr<EtcdStateStore::Recovered> EtcdStateStore::Recover(
    EtcdSession& session) {
  Recovered recovered;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> records =
      session.List(std::string(kRecordPrefix), &recovered.revision);
  if (!records.ok()) return records.status();
  for (const auto& [key, value] : *records) {
    if (absl::Status s = ApplyRecord(key, value, recovered); !s.ok()) return s;
  }
  return recovered;
}

absl::StatusOr<uint64_t> EtcdStateStore::LastSequence(EtcdSession& session) {
  absl::StatusOr<std::optional<std::string>> last =
      session.LastKey(std::string(kRecordPrefix));
  if (!last.ok()) return last.status();
  if (!last->has_value()) return 0;
  uint64_t sequence = 0;
  absl::string_view digits = **last;
  if (!absl::ConsumePrefix(&digits, kRecordPrefix) ||
      !absl::SimpleAtoi(digits, &sequence)) {
    return absl::DataLossError(
        absl::StrCat("etcd key ", **last, " is not a record key"));
  }
  return sequence;
}

absl::Status EtcdStateStore::ApplyRecord(const std::string& key,
                                         const std::string& value,
                                         Recovered& into) {
  uint64_t sequence = 0;
  absl::string_view digits = key;
  if (!absl::ConsumePrefix(&digits, kRecordPrefix) ||
      !absl::SimpleAtoi(digits, &sequence) || key != RecordKey(sequence)) {
    return absl::DataLossError(
        absl::StrCat("etcd key ", key, " is not a record key"));
  }
  if (sequence <= into.last_sequence) return absl::OkStatus();
  shard::state::v1::JournalRecord record;
  if (!record.ParseFromString(value) || record.sequence() != sequence) {
    return absl::DataLossError(absl::StrCat(
        "etcd record ", key, " does not parse as record ", sequence));
  }
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
  return absl::OkStatus();
}

EtcdStateStore::EtcdStateStore(EtcdSession* session,
                               EtcdSession::Leadership leadership,
                               uint64_t last_sequence, TxnObserver on_txn)
    : session_(session),
      leadership_(std::move(leadership)),
      on_txn_(std::move(on_txn)),
      waiters_(last_sequence),
      last_sequence_(last_sequence),
      writer_([this] { WriterLoop(); }) {}

EtcdStateStore::~EtcdStateStore() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  writer_.join();
  waiters_.Close("the etcd store was closed");
}

absl::StatusOr<uint64_t> EtcdStateStore::Enqueue(
    const shard::state::v1::StateUpdate& update) {
  absl::MutexLock lock(&mu_);
  if (!broken_.ok()) return broken_;
  const uint64_t sequence = ++last_sequence_;
  shard::state::v1::JournalRecord record;
  record.set_sequence(sequence);
  *record.mutable_update() = update;
  queue_.emplace_back(RecordKey(sequence), record.SerializeAsString());
  queue_last_ = sequence;
  return sequence;
}

void EtcdStateStore::WhenDurable(uint64_t sequence, Durable done) {
  waiters_.Add(sequence, std::move(done));
}

void EtcdStateStore::WriterLoop() {
  while (true) {
    std::vector<std::pair<std::string, std::string>> batch;
    uint64_t last = 0;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty() || !broken_.ok()) return;
      // One Txn: everything queued, up to kMaxRecordsPerTxn records.
      const size_t take = std::min(queue_.size(), kMaxRecordsPerTxn);
      batch.assign(std::make_move_iterator(queue_.begin()),
                   std::make_move_iterator(queue_.begin() + take));
      queue_.erase(queue_.begin(), queue_.begin() + take);
      last = queue_last_ - queue_.size();
    }
    const absl::Time began = absl::Now();
    absl::Status written = session_->FencedPut(leadership_, batch);
    if (written.ok() && on_txn_) on_txn_(absl::Now() - began, batch.size());
    absl::Status broken;
    {
      absl::MutexLock lock(&mu_);
      ++transactions_;
      if (!written.ok()) {
        broken_ = broken = absl::UnavailableError(absl::StrCat(
            "cannot make state durable in etcd (", written.message(),
            "); this replica stops leading and the next leader continues "
            "from what etcd holds"));
        queue_.clear();
      }
    }
    if (broken.ok()) {
      waiters_.Advance(last);
    } else {
      waiters_.Break(broken);
    }
  }
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

}  // namespace shard::server::replication

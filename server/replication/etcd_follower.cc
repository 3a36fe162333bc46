#include "server/replication/etcd_follower.h"

#include <utility>

namespace shard::server::replication {

absl::StatusOr<std::unique_ptr<EtcdFollower>> EtcdFollower::Start(
    EtcdSession* session) {
  absl::StatusOr<EtcdStateStore::Recovered> recovered =
      EtcdStateStore::Recover(*session);
  if (!recovered.ok()) return recovered.status();
  absl::StatusOr<std::unique_ptr<EtcdSession::PrefixWatch>> watch =
      session->Watch(std::string(EtcdStateStore::kRecordPrefix),
                     recovered->revision + 1);
  if (!watch.ok()) return watch.status();
  return std::unique_ptr<EtcdFollower>(
      new EtcdFollower(*std::move(recovered), *std::move(watch)));
}

EtcdFollower::EtcdFollower(EtcdStateStore::Recovered recovered,
                           std::unique_ptr<EtcdSession::PrefixWatch> watch)
    : watch_(std::move(watch)),
      copy_(std::move(recovered)),
      watcher_([this] { WatchLoop(); }) {}

EtcdFollower::~EtcdFollower() {
  watch_->Cancel();
  watcher_.join();
}

void EtcdFollower::WatchLoop() {
  while (true) {
    absl::StatusOr<std::vector<EtcdSession::Change>> puts = watch_->Next();
    absl::MutexLock lock(&mu_);
    if (!puts.ok()) {
      status_ = puts.status();
      return;
    }
    for (const EtcdSession::Change& put : *puts) {
      if (absl::Status s =
              EtcdStateStore::ApplyRecords(put.key, put.value, copy_);
          !s.ok()) {
        status_ = s;
        return;
      }
    }
  }
}

uint64_t EtcdFollower::applied() const {
  absl::MutexLock lock(&mu_);
  return copy_.last_sequence;
}

bool EtcdFollower::AwaitApplied(uint64_t sequence, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto done = [this, sequence]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return copy_.last_sequence >= sequence || !status_.ok();
  };
  mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
  return copy_.last_sequence >= sequence;
}

CoordinatorState EtcdFollower::state() const {
  absl::MutexLock lock(&mu_);
  return copy_.state;
}

absl::Status EtcdFollower::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

}  // namespace shard::server::replication

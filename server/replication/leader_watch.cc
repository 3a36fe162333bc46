#include "server/replication/leader_watch.h"

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace shard::server::replication {
namespace {

// Between a watch that ended and the next one.
constexpr absl::Duration kReopenPause = absl::Milliseconds(100);

constexpr char kLeaderKey[] = "leader";

}  // namespace

LeaderWatch::LeaderWatch(EtcdSession* session, int64_t start_revision,
                         OnChange on_change)
    : session_(session),
      on_change_(std::move(on_change)),
      next_revision_(start_revision),
      thread_([this] { Loop(); }) {}

LeaderWatch::~LeaderWatch() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (open_ != nullptr) open_->Cancel();
  }
  thread_.join();
}

void LeaderWatch::Loop() {
  while (true) {
    absl::StatusOr<std::unique_ptr<EtcdSession::PrefixWatch>> watch =
        session_->WatchKey(kLeaderKey, next_revision_);
    if (watch.ok()) {
      {
        absl::MutexLock lock(&mu_);
        if (stopping_) return;
        open_ = watch->get();
      }
      Follow(**watch);
      absl::MutexLock lock(&mu_);
      open_ = nullptr;
    }
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), kReopenPause)) {
      return;
    }
  }
}

void LeaderWatch::Follow(EtcdSession::PrefixWatch& watch) {
  while (true) {
    absl::StatusOr<std::vector<EtcdSession::Change>> changes = watch.Next();
    if (!changes.ok()) {
      // History compacted past next_revision_: watch from now on (the
      // owner's reads cover the changes in between).
      if (absl::IsDataLoss(changes.status())) next_revision_ = 0;
      return;
    }
    for (const EtcdSession::Change& change : *changes) {
      on_change_(change.deleted ? std::string() : change.value,
                 change.revision);
      next_revision_ = change.revision + 1;
    }
  }
}

}  // namespace shard::server::replication

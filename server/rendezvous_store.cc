#include "server/rendezvous_store.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shard::server {
namespace {

absl::Status DrainingError() {
  return absl::UnavailableError("coordinator is draining");
}

}  // namespace

absl::Status RendezvousStore::CheckKey(const std::string& key) const {
  if (key.empty() || key.size() > limits_.max_key_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("store key must be 1..",
                                                   limits_.max_key_bytes,
                                                   " bytes, got ", key.size()));
  }
  return absl::OkStatus();
}

absl::Status RendezvousStore::CheckRoomFor(const Space& space,
                                           const std::string& key) const {
  if (space.size() >= limits_.max_keys_per_space && space.count(key) == 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("store holds the maximum of ", limits_.max_keys_per_space,
                     " keys for this job generation"));
  }
  return absl::OkStatus();
}

RendezvousStore::Space& RendezvousStore::SpaceFor(const Scope& scope) {
  spaces_.erase(spaces_.lower_bound(Scope(scope.first, 0)),
                spaces_.lower_bound(scope));
  return spaces_[scope];
}

absl::Status RendezvousStore::CheckLive(const Scope& scope) const {
  if (draining_) return DrainingError();
  auto ended = ended_.find(scope.first);
  if (ended != ended_.end() && scope.second <= ended->second) {
    return absl::AbortedError(absl::StrCat("generation ", scope.second,
                                           " of job \"", scope.first,
                                           "\" ended while waiting: re-join"));
  }
  return absl::OkStatus();
}

void RendezvousStore::EndGeneration(const std::string& job_id,
                                    uint64_t generation) {
  absl::MutexLock lock(&mu_);
  uint64_t& ended = ended_[job_id];
  ended = std::max(ended, generation);
  spaces_.erase(spaces_.lower_bound(Scope(job_id, 0)),
                spaces_.upper_bound(Scope(job_id, ended)));
}

bool RendezvousStore::AwaitKeys(const Scope& scope,
                                const std::vector<std::string>& keys,
                                absl::Time deadline) {
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!CheckLive(scope).ok()) return true;
    auto it = spaces_.find(scope);
    if (it == spaces_.end()) return keys.empty();
    for (const std::string& key : keys) {
      if (it->second.count(key) == 0) return false;
    }
    return true;
  };
  mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  return ready() && CheckLive(scope).ok();
}

absl::Status RendezvousStore::Set(const Scope& scope, const std::string& key,
                                  std::string value) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  if (value.size() > limits_.max_value_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("store value must be at most ", limits_.max_value_bytes,
                     " bytes, got ", value.size()));
  }
  absl::MutexLock lock(&mu_);
  if (draining_) return DrainingError();
  Space& space = SpaceFor(scope);
  if (absl::Status s = CheckRoomFor(space, key); !s.ok()) return s;
  space[key] = std::move(value);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> RendezvousStore::Get(
    const Scope& scope, const std::string& key, absl::Time deadline) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (draining_) return DrainingError();
  SpaceFor(scope);
  const bool found = AwaitKeys(scope, {key}, deadline);
  if (absl::Status s = CheckLive(scope); !s.ok()) return s;
  auto space = spaces_.find(scope);
  if (!found || space == spaces_.end()) return std::optional<std::string>();
  auto entry = space->second.find(key);
  if (entry == space->second.end()) return std::optional<std::string>();
  return std::optional<std::string>(entry->second);
}

absl::StatusOr<int64_t> RendezvousStore::Add(const Scope& scope,
                                             const std::string& key,
                                             int64_t delta) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (draining_) return DrainingError();
  Space& space = SpaceFor(scope);
  if (absl::Status s = CheckRoomFor(space, key); !s.ok()) return s;
  int64_t value = 0;
  auto it = space.find(key);
  if (it != space.end() && !absl::SimpleAtoi(it->second, &value)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "store key \"", key, "\" holds a value that is not an integer"));
  }
  value += delta;
  space[key] = absl::StrCat(value);
  return value;
}

absl::StatusOr<std::string> RendezvousStore::CompareSet(
    const Scope& scope, const std::string& key, const std::string& expected,
    std::string desired) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  if (desired.size() > limits_.max_value_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "store value must be at most ", limits_.max_value_bytes, " bytes"));
  }
  absl::MutexLock lock(&mu_);
  if (draining_) return DrainingError();
  Space& space = SpaceFor(scope);
  auto it = space.find(key);
  if (it == space.end()) {
    if (!expected.empty()) return expected;
    if (absl::Status s = CheckRoomFor(space, key); !s.ok()) return s;
    space[key] = desired;
    return desired;
  }
  if (it->second == expected) it->second = std::move(desired);
  return it->second;
}

absl::StatusOr<bool> RendezvousStore::Wait(const Scope& scope,
                                           const std::vector<std::string>& keys,
                                           absl::Time deadline) {
  for (const std::string& key : keys) {
    if (absl::Status s = CheckKey(key); !s.ok()) return s;
  }
  absl::MutexLock lock(&mu_);
  if (draining_) return DrainingError();
  SpaceFor(scope);
  const bool ready = AwaitKeys(scope, keys, deadline);
  if (absl::Status s = CheckLive(scope); !s.ok()) return s;
  return ready;
}

absl::StatusOr<bool> RendezvousStore::Delete(const Scope& scope,
                                             const std::string& key) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (draining_) return DrainingError();
  return SpaceFor(scope).erase(key) > 0;
}

int64_t RendezvousStore::Count(const Scope& scope) {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(SpaceFor(scope).size());
}

void RendezvousStore::Forget(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  spaces_.erase(spaces_.lower_bound(Scope(job_id, 0)),
                spaces_.upper_bound(Scope(job_id, UINT64_MAX)));
  ended_.erase(job_id);
}

void RendezvousStore::Drain() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
}

}  // namespace shard::server

#include "server/core/rendezvous_store.h"

#include <malloc.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace shard::server {
namespace {

constexpr size_t kTrimAfterFreedBytes = size_t{16} << 20;

}  // namespace

absl::Status RendezvousStore::CheckKey(const std::string& key) const {
  if (key.empty() || key.size() > limits_.max_key_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("store key must be 1..",
                                                   limits_.max_key_bytes,
                                                   " bytes, got ", key.size()));
  }
  return absl::OkStatus();
}

absl::Status RendezvousStore::CheckValue(const std::string& value) const {
  if (value.size() > limits_.max_value_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("store value must be at most ", limits_.max_value_bytes,
                     " bytes, got ", value.size()));
  }
  return absl::OkStatus();
}

absl::Status RendezvousStore::Put(const Scope& scope, Space& space,
                                  const std::string& key, std::string value) {
  auto existing = space.find(key);
  if (existing == space.end() && space.size() >= limits_.max_keys_per_space) {
    return absl::ResourceExhaustedError(
        absl::StrCat("store holds the maximum of ", limits_.max_keys_per_space,
                     " keys for this job generation"));
  }
  const size_t freed =
      existing == space.end() ? 0 : EntryBytes(key, existing->second);
  const size_t added = EntryBytes(key, value);
  if (total_bytes_ - freed + added > limits_.max_total_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the rendezvous store holds ", total_bytes_, " bytes; storing ", added,
        " more would exceed its budget of ", limits_.max_total_bytes,
        " bytes (shardd --store-max-bytes); delete keys or end generations"));
  }
  if (added > freed) {
    if (absl::Status s = CheckTenantBytes(scope.first, added - freed);
        !s.ok()) {
      return s;
    }
  }
  total_bytes_ = total_bytes_ - freed + added;
  size_t& job_bytes = job_bytes_[scope.first];
  job_bytes = job_bytes - freed + added;
  space.insert_or_assign(key, std::move(value));
  return absl::OkStatus();
}

absl::Status RendezvousStore::CheckTenantBytes(const std::string& job_id,
                                               size_t more) const {
  if (!tenant_of_) return absl::OkStatus();
  const std::shared_ptr<const TenantLimits> tenant = tenant_of_(job_id);
  if (tenant == nullptr || !tenant->max_store_bytes) return absl::OkStatus();
  uint64_t used = 0;
  tenant->jobs.ForEachMatch(job_bytes_,
                            [&](const auto& entry) { used += entry.second; });
  return CheckTenantQuota(tenant.get(), &TenantLimits::max_store_bytes,
                          "store_bytes", used, more);
}

void RendezvousStore::Forget(const std::string& job_id, size_t bytes) {
  auto it = job_bytes_.find(job_id);
  if (it == job_bytes_.end()) return;
  it->second -= bytes;
  if (it->second == 0) job_bytes_.erase(it);
}

void RendezvousStore::DropSpaces(std::map<Scope, Space>::iterator first,
                                 std::map<Scope, Space>::iterator last,
                                 AfterUnlock& then) {
  size_t freed = 0;
  std::vector<Scope> dropped;
  for (auto it = first; it != last; ++it) {
    dropped.push_back(it->first);
    size_t space_bytes = 0;
    for (const auto& [key, value] : it->second) {
      space_bytes += EntryBytes(key, value);
    }
    Forget(it->first.first, space_bytes);
    freed += space_bytes;
  }
  spaces_.erase(first, last);
  for (const Scope& scope : dropped) parked_.Wake(TopicOf(scope), then);
  total_bytes_ -= freed;
  // Give large frees back to the system: without this glibc keeps the
  // pages of a big ended generation in its arenas. Trimming walks every
  // arena, so it runs after the caller let go of this store's lock and the
  // coordinator's (which ends generations under its own).
  if (freed >= kTrimAfterFreedBytes) then.Add([] { malloc_trim(0); });
}

absl::StatusOr<RendezvousStore::Space*> RendezvousStore::LiveSpace(
    const Scope& scope) {
  if (draining_) return absl::UnavailableError("coordinator is draining");
  auto it = spaces_.find(scope);
  if (it == spaces_.end()) {
    return absl::AbortedError(absl::StrCat("generation ", scope.second,
                                           " of job \"", scope.first,
                                           "\" ended: re-join"));
  }
  return &it->second;
}

void RendezvousStore::OpenGeneration(const Scope& scope) {
  absl::MutexLock lock(&mu_);
  spaces_.try_emplace(scope);
}

void RendezvousStore::EndGeneration(const Scope& scope, AfterUnlock& then) {
  absl::MutexLock lock(&mu_);
  auto it = spaces_.find(scope);
  if (it != spaces_.end()) DropSpaces(it, std::next(it), then);
}

void RendezvousStore::EndJob(const std::string& job_id, AfterUnlock& then) {
  absl::MutexLock lock(&mu_);
  DropSpaces(spaces_.lower_bound(Scope(job_id, 0)),
             spaces_.upper_bound(Scope(job_id, UINT64_MAX)), then);
}

void RendezvousStore::Drain() {
  UnlockThenRun lock(&mu_);
  draining_ = true;
  parked_.WakeAll(lock.then());
}

RendezvousStore::RendezvousStore(RendezvousLimits limits,
                                 TenantLimitsOf tenant_of)
    : limits_(limits), tenant_of_(std::move(tenant_of)) {}

RendezvousStore::~RendezvousStore() {
  UnlockThenRun lock(&mu_);
  parked_.EndAll(lock.then());
}

size_t RendezvousStore::open_spaces() const {
  absl::MutexLock lock(&mu_);
  return spaces_.size();
}

size_t RendezvousStore::total_bytes() const {
  absl::MutexLock lock(&mu_);
  return total_bytes_;
}

size_t RendezvousStore::BytesOf(const JobPattern& jobs) const {
  absl::MutexLock lock(&mu_);
  size_t bytes = 0;
  jobs.ForEachMatch(job_bytes_,
                    [&](const auto& entry) { bytes += entry.second; });
  return bytes;
}

std::string RendezvousStore::TopicOf(const Scope& scope) {
  // Job ids are printable ASCII: a newline cannot occur in one.
  return absl::StrCat(scope.first, "\n", scope.second);
}

namespace {

bool AllSet(const std::map<std::string, std::string>& space,
            const std::vector<std::string>& keys) {
  return std::all_of(keys.begin(), keys.end(), [&](const std::string& key) {
    return space.count(key) != 0;
  });
}

std::optional<std::string> ValueOfFirstKey(
    const std::map<std::string, std::string>& space,
    const std::vector<std::string>& keys) {
  auto entry = space.find(keys.front());
  if (entry == space.end()) return std::nullopt;
  return entry->second;
}

}  // namespace

// The decision of a parked get or wait (see ParkedCalls); runs under mu_.
template <typename T>
struct RendezvousStore::ParkedKeys {
  RendezvousStore* store;
  Scope scope;
  std::vector<std::string> keys;
  T (*answer)(const Space&, const std::vector<std::string>&);
  Reply<T> reply;

  bool operator()(ParkedCalls::Why why, AfterUnlock& then)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(store->mu_) {
    if (why == ParkedCalls::Why::kWoken && !store->Settled(scope, keys)) {
      return false;
    }
    absl::StatusOr<T> result;
    if (why == ParkedCalls::Why::kCancelled) {
      result = absl::CancelledError("the client cancelled the call");
    } else if (why == ParkedCalls::Why::kEnded) {
      result = absl::UnavailableError("coordinator is shutting down");
    } else {
      result = store->AnswerNow(scope, keys, answer);
    }
    then.Add(Deliver(std::move(reply), std::move(result)));
    return true;
  }
};

bool RendezvousStore::Settled(const Scope& scope,
                              const std::vector<std::string>& keys) {
  absl::StatusOr<Space*> space = LiveSpace(scope);
  return !space.ok() || AllSet(**space, keys);
}

template <typename T>
absl::StatusOr<T> RendezvousStore::AnswerNow(
    const Scope& scope, const std::vector<std::string>& keys,
    T (*answer)(const Space&, const std::vector<std::string>&)) {
  absl::StatusOr<Space*> space = LiveSpace(scope);
  if (!space.ok()) return space.status();
  return answer(**space, keys);
}

template <typename T>
AfterUnlock::Task RendezvousStore::Deliver(Reply<T> reply,
                                           absl::StatusOr<T> result) {
  return [reply = std::move(reply), result = std::move(result)]() mutable {
    std::move(reply)(std::move(result));
  };
}

template <typename T>
void RendezvousStore::Park(const Scope& scope, std::vector<std::string> keys,
                           absl::Time deadline,
                           T (*answer)(const Space&,
                                       const std::vector<std::string>&),
                           Reply<T> reply) {
  for (const std::string& key : keys) {
    if (absl::Status s = CheckKey(key); !s.ok()) {
      return std::move(reply)(s);
    }
  }
  UnlockThenRun lock(&mu_);
  if (Settled(scope, keys) || deadline <= absl::Now()) {
    lock.then().Add(
        Deliver<T>(std::move(reply), AnswerNow<T>(scope, keys, answer)));
    return;
  }
  std::shared_ptr<Cancellation> cancellation = reply.cancellation();
  parked_.Park(
      TopicOf(scope), deadline,
      ParkedKeys<T>{this, scope, std::move(keys), answer, std::move(reply)},
      cancellation, lock.then());
}

void RendezvousStore::StartGet(const Scope& scope, const std::string& key,
                               absl::Time deadline,
                               Reply<std::optional<std::string>> reply) {
  Park<std::optional<std::string>>(scope, {key}, deadline, &ValueOfFirstKey,
                                   std::move(reply));
}

void RendezvousStore::StartWait(const Scope& scope,
                                const std::vector<std::string>& keys,
                                absl::Time deadline, Reply<bool> reply) {
  Park<bool>(scope, keys, deadline, &AllSet, std::move(reply));
}

absl::Status RendezvousStore::Set(const Scope& scope, const std::string& key,
                                  std::string value) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  if (absl::Status s = CheckValue(value); !s.ok()) return s;
  UnlockThenRun lock(&mu_);
  absl::StatusOr<Space*> space = LiveSpace(scope);
  if (!space.ok()) return space.status();
  if (absl::Status s = Put(scope, **space, key, std::move(value)); !s.ok())
    return s;
  parked_.Wake(TopicOf(scope), lock.then());
  return absl::OkStatus();
}

absl::StatusOr<int64_t> RendezvousStore::Add(const Scope& scope,
                                             const std::string& key,
                                             int64_t delta) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  UnlockThenRun lock(&mu_);
  absl::StatusOr<Space*> space = LiveSpace(scope);
  if (!space.ok()) return space.status();
  int64_t value = 0;
  auto it = (*space)->find(key);
  if (it != (*space)->end() && !absl::SimpleAtoi(it->second, &value)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "store key \"", key, "\" holds a value that is not an integer"));
  }
  int64_t sum;
  if (__builtin_add_overflow(value, delta, &sum)) {
    return absl::OutOfRangeError(
        absl::StrCat("store key \"", key, "\" holds ", value, "; adding ",
                     delta, " overflows a signed 64-bit integer"));
  }
  if (absl::Status s = Put(scope, **space, key, absl::StrCat(sum)); !s.ok()) {
    return s;
  }
  parked_.Wake(TopicOf(scope), lock.then());
  return sum;
}

absl::StatusOr<std::string> RendezvousStore::CompareSet(
    const Scope& scope, const std::string& key, const std::string& expected,
    std::string desired) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  if (absl::Status s = CheckValue(desired); !s.ok()) return s;
  UnlockThenRun lock(&mu_);
  absl::StatusOr<Space*> space = LiveSpace(scope);
  if (!space.ok()) return space.status();
  auto it = (*space)->find(key);
  if (it == (*space)->end()) {
    if (!expected.empty()) return expected;
    if (absl::Status s = Put(scope, **space, key, desired); !s.ok()) return s;
    parked_.Wake(TopicOf(scope), lock.then());
    return desired;
  }
  if (it->second != expected) return it->second;
  if (absl::Status s = Put(scope, **space, key, desired); !s.ok()) return s;
  return desired;
}

absl::StatusOr<bool> RendezvousStore::Delete(const Scope& scope,
                                             const std::string& key) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Space*> space = LiveSpace(scope);
  if (!space.ok()) return space.status();
  auto it = (*space)->find(key);
  if (it == (*space)->end()) return false;
  const size_t freed = EntryBytes(key, it->second);
  total_bytes_ -= freed;
  Forget(scope.first, freed);
  (*space)->erase(it);
  return true;
}

absl::StatusOr<int64_t> RendezvousStore::Count(const Scope& scope) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Space*> space = LiveSpace(scope);
  if (!space.ok()) return space.status();
  return static_cast<int64_t>((*space)->size());
}

}  // namespace shard::server

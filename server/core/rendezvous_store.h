// Key-value spaces for rendezvous, one per (job, generation), with c10d
// Store semantics: set, get with wait, atomic add, compare-set, wait for
// keys, delete, count.
//
// A space exists exactly while its generation lives: OpenGeneration() when
// the world forms, EndGeneration() / EndJob() when it ends, which frees its
// memory and answers its waiting calls ABORTED. Every operation checks, under
// this class's lock, that its space exists, so a call that passed the
// caller's generation check just before the generation ended answers
// ABORTED and never re-creates the space. Kept in memory only: process
// groups are re-formed after a coordinator restart. Checks keys, sizes and
// integer overflow, and bounds the bytes all spaces hold together, and a
// tenant's spaces under its quota (RESOURCE_EXHAUSTED beyond). Thread-safe.
// Waiting gets and waits are parked (ParkedCalls: no thread each) and end when
// their keys are set, at their deadline, when their generation ends (ABORTED),
// on Drain() (UNAVAILABLE) or when cancelled (CANCELLED). They are answered by
// the thread that ends their wait, outside every lock: a setter once it let go
// of this store's lock; EndGeneration() and EndJob(), called under the
// coordinator's lock, leave theirs to the caller's AfterUnlock.
#ifndef SERVER_CORE_RENDEZVOUS_STORE_H_
#define SERVER_CORE_RENDEZVOUS_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/state/tenant_limits.h"
#include "server/waiting/after_unlock.h"
#include "server/waiting/parked_calls.h"
#include "server/waiting/reply.h"

namespace shard::server {

struct RendezvousLimits {
  size_t max_key_bytes = 1024;
  size_t max_value_bytes = size_t{1} << 20;
  size_t max_keys_per_space = 65536;
  // All spaces together: key and value bytes plus kEntryOverheadBytes per
  // key.
  size_t max_total_bytes = size_t{256} << 20;
};

class RendezvousStore {
 public:
  using Scope = std::pair<std::string, uint64_t>;  // (job id, generation)

  // What one key costs beyond its key and value bytes (map node, strings).
  static constexpr size_t kEntryOverheadBytes = 96;

  // `tenant_of` (unset: no tenants) adds each tenant's quota of store
  // bytes to the limits: a tenant's spaces together stay under it.
  explicit RendezvousStore(RendezvousLimits limits = {},
                           TenantLimitsOf tenant_of = nullptr);
  // Ends every parked call (UNAVAILABLE).
  ~RendezvousStore();

  // Creates the (empty) space of a generation that just formed; a no-op if
  // it exists.
  void OpenGeneration(const Scope& scope) ABSL_LOCKS_EXCLUDED(mu_);
  // The generation is over: its space is dropped and its waiting calls
  // answer ABORTED (in `then`, with the trim of a large space's memory).
  void EndGeneration(const Scope& scope, AfterUnlock& then)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Ends every generation of the job (a deleted job).
  void EndJob(const std::string& job_id, AfterUnlock& then)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Wakes every waiter; from now on calls answer UNAVAILABLE.
  void Drain() ABSL_LOCKS_EXCLUDED(mu_);

  // Each operation answers ABORTED if the scope's generation is not open,
  // UNAVAILABLE once draining, INVALID_ARGUMENT for bad keys or sizes.
  absl::Status Set(const Scope& scope, const std::string& key,
                   std::string value) ABSL_LOCKS_EXCLUDED(mu_);
  // Answers the value, or nullopt if the key was not set by `deadline`;
  // parks the call until then. `reply` runs once, never under a lock.
  void StartGet(const Scope& scope, const std::string& key, absl::Time deadline,
                Reply<std::optional<std::string>> reply)
      ABSL_LOCKS_EXCLUDED(mu_);
  // FAILED_PRECONDITION if the stored value is not a decimal integer;
  // OUT_OF_RANGE if the sum overflows int64 (the value is unchanged).
  absl::StatusOr<int64_t> Add(const Scope& scope, const std::string& key,
                              int64_t delta) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::string> CompareSet(const Scope& scope,
                                         const std::string& key,
                                         const std::string& expected,
                                         std::string desired)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Answers true once all keys are set, false if not by `deadline`; parks
  // the call until then. `reply` runs once, never under a lock.
  void StartWait(const Scope& scope, const std::vector<std::string>& keys,
                 absl::Time deadline, Reply<bool> reply)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<bool> Delete(const Scope& scope, const std::string& key)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<int64_t> Count(const Scope& scope) ABSL_LOCKS_EXCLUDED(mu_);

  // Number of open spaces, for tests.
  size_t open_spaces() const ABSL_LOCKS_EXCLUDED(mu_);
  // Bytes all open spaces hold (as counted against max_total_bytes).
  size_t total_bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  // Bytes the spaces of the jobs `jobs` matches hold (a tenant's).
  size_t BytesOf(const JobPattern& jobs) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Space = std::map<std::string, std::string>;

  static size_t EntryBytes(const std::string& key, const std::string& value) {
    return key.size() + value.size() + kEntryOverheadBytes;
  }
  absl::Status CheckKey(const std::string& key) const;
  absl::Status CheckValue(const std::string& value) const;
  // Stores key = value in `space` (of `scope`) unless that exceeds the
  // space's key limit, the total byte budget or its tenant's quota
  // (RESOURCE_EXHAUSTED, nothing changed).
  absl::Status Put(const Scope& scope, Space& space, const std::string& key,
                   std::string value) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the spaces in [first, last) and their bytes.
  // RESOURCE_EXHAUSTED when `more` bytes in a space of `job_id` would pass
  // its tenant's quota of store bytes.
  absl::Status CheckTenantBytes(const std::string& job_id, size_t more) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `bytes` of the job's spaces were freed.
  void Forget(const std::string& job_id, size_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropSpaces(std::map<Scope, Space>::iterator first,
                  std::map<Scope, Space>::iterator last, AfterUnlock& then)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The scope's open space; ABORTED if its generation is not open,
  // UNAVAILABLE if draining.
  absl::StatusOr<Space*> LiveSpace(const Scope& scope)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static std::string TopicOf(const Scope& scope);
  // Parks a call for `keys` of `scope` (answered at once if they are all
  // set or the space is not live): `answer` computes the reply from the
  // live space when the keys are set or the deadline passed.
  template <typename T>
  void Park(const Scope& scope, std::vector<std::string> keys,
            absl::Time deadline,
            T (*answer)(const Space&, const std::vector<std::string>&),
            Reply<T> reply) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether a call for `keys` has its answer: all set, or the space is not
  // live (ended, draining).
  bool Settled(const Scope& scope, const std::vector<std::string>& keys)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  template <typename T>
  absl::StatusOr<T> AnswerNow(const Scope& scope,
                              const std::vector<std::string>& keys,
                              T (*answer)(const Space&,
                                          const std::vector<std::string>&))
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  template <typename T>
  static AfterUnlock::Task Deliver(Reply<T> reply, absl::StatusOr<T> result);
  template <typename T>
  struct ParkedKeys;

  const RendezvousLimits limits_;
  const TenantLimitsOf tenant_of_;
  mutable absl::Mutex mu_;
  std::map<Scope, Space> spaces_ ABSL_GUARDED_BY(mu_);
  size_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // The bytes of each job's spaces (jobs holding none are left out), for
  // its tenant's quota.
  std::map<std::string, size_t, std::less<>> job_bytes_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  // Gets and waits for keys, by scope. Declared last: destroyed first.
  ParkedCalls parked_{&mu_};
};

}  // namespace shard::server

#endif  // SERVER_CORE_RENDEZVOUS_STORE_H_

// Key-value spaces for rendezvous, one per (job, generation), with c10d
// Store semantics: set, get with wait, atomic add, compare-set, wait for
// keys, delete, count.
//
// Kept in memory only: process groups are re-formed after a coordinator
// restart. A space is dropped when a newer generation of its job is used, or
// by Forget(). Callers validate that the generation is current; this class
// checks keys and sizes. Thread-safe; waits end at their deadline or on
// Drain() (UNAVAILABLE).
#ifndef SERVER_RENDEZVOUS_STORE_H_
#define SERVER_RENDEZVOUS_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shard::server {

struct RendezvousLimits {
  size_t max_key_bytes = 1024;
  size_t max_value_bytes = size_t{1} << 20;
  size_t max_keys_per_space = 65536;
};

class RendezvousStore {
 public:
  using Scope = std::pair<std::string, uint64_t>;  // (job id, generation)

  explicit RendezvousStore(RendezvousLimits limits = {}) : limits_(limits) {}

  absl::Status Set(const Scope& scope, const std::string& key,
                   std::string value) ABSL_LOCKS_EXCLUDED(mu_);
  // The value, or nullopt if the key was not set by `deadline`.
  absl::StatusOr<std::optional<std::string>> Get(const Scope& scope,
                                                 const std::string& key,
                                                 absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_);
  // FAILED_PRECONDITION if the stored value is not a decimal integer.
  absl::StatusOr<int64_t> Add(const Scope& scope, const std::string& key,
                              int64_t delta) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::string> CompareSet(const Scope& scope,
                                         const std::string& key,
                                         const std::string& expected,
                                         std::string desired)
      ABSL_LOCKS_EXCLUDED(mu_);
  // True once all keys are set; false if not by `deadline`.
  absl::StatusOr<bool> Wait(const Scope& scope,
                            const std::vector<std::string>& keys,
                            absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<bool> Delete(const Scope& scope, const std::string& key)
      ABSL_LOCKS_EXCLUDED(mu_);
  int64_t Count(const Scope& scope) ABSL_LOCKS_EXCLUDED(mu_);

  // Drops every space and ended generation of the job (a deleted job; one
  // re-created under the same id starts from generation 1 again). Call
  // EndGeneration first to wake waiters.
  void Forget(const std::string& job_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Generations up to `generation` of the job are over: their spaces are
  // dropped and their waiting calls answer ABORTED.
  void EndGeneration(const std::string& job_id, uint64_t generation)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Wakes every waiter; from now on calls answer UNAVAILABLE.
  void Drain() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Space = std::map<std::string, std::string>;

  absl::Status CheckKey(const std::string& key) const;
  // The scope's space, created on first use; drops older generations.
  Space& SpaceFor(const Scope& scope) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckRoomFor(const Space& space, const std::string& key) const;
  // ABORTED if the scope's generation ended (or UNAVAILABLE if draining).
  absl::Status CheckLive(const Scope& scope) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits until all keys are present in the scope or the deadline passes.
  bool AwaitKeys(const Scope& scope, const std::vector<std::string>& keys,
                 absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RendezvousLimits limits_;
  absl::Mutex mu_;
  std::map<Scope, Space> spaces_ ABSL_GUARDED_BY(mu_);
  // Per job, the newest generation that ended.
  std::map<std::string, uint64_t> ended_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shard::server

#endif  // SERVER_RENDEZVOUS_STORE_H_

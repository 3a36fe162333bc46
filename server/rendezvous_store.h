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
// integer overflow. Thread-safe; waits end at their deadline, when their
// generation ends, or on Drain() (UNAVAILABLE).
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

  // Creates the (empty) space of a generation that just formed; a no-op if
  // it exists.
  void OpenGeneration(const Scope& scope) ABSL_LOCKS_EXCLUDED(mu_);
  // The generation is over: its space is dropped and its waiting calls
  // answer ABORTED.
  void EndGeneration(const Scope& scope) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends every generation of the job (a deleted job).
  void EndJob(const std::string& job_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Wakes every waiter; from now on calls answer UNAVAILABLE.
  void Drain() ABSL_LOCKS_EXCLUDED(mu_);

  // Each operation answers ABORTED if the scope's generation is not open,
  // UNAVAILABLE once draining, INVALID_ARGUMENT for bad keys or sizes.
  absl::Status Set(const Scope& scope, const std::string& key,
                   std::string value) ABSL_LOCKS_EXCLUDED(mu_);
  // The value, or nullopt if the key was not set by `deadline`.
  absl::StatusOr<std::optional<std::string>> Get(const Scope& scope,
                                                 const std::string& key,
                                                 absl::Time deadline)
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
  // True once all keys are set; false if not by `deadline`.
  absl::StatusOr<bool> Wait(const Scope& scope,
                            const std::vector<std::string>& keys,
                            absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<bool> Delete(const Scope& scope, const std::string& key)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<int64_t> Count(const Scope& scope) ABSL_LOCKS_EXCLUDED(mu_);

  // Number of open spaces, for tests.
  size_t open_spaces() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Space = std::map<std::string, std::string>;

  absl::Status CheckKey(const std::string& key) const;
  absl::Status CheckValue(const std::string& value) const;
  absl::Status CheckRoomFor(const Space& space, const std::string& key) const;
  // The scope's open space; ABORTED if its generation is not open,
  // UNAVAILABLE if draining.
  absl::StatusOr<Space*> LiveSpace(const Scope& scope)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits until all keys are present in the scope, the deadline passes or
  // the space ends; then the space as LiveSpace() finds it.
  absl::StatusOr<Space*> AwaitKeys(const Scope& scope,
                                   const std::vector<std::string>& keys,
                                   absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RendezvousLimits limits_;
  mutable absl::Mutex mu_;
  std::map<Scope, Space> spaces_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shard::server

#endif  // SERVER_RENDEZVOUS_STORE_H_

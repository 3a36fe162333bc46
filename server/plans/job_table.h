// Objects of type T kept per job, by the job's incarnation (a job deleted
// and re-created under its id gets a new one), made on first use. Entries
// of jobs no longer held are dropped when a new entry is made and by
// Retain, so the table holds about the jobs there are.
//
// Thread-safe (its own mutex, taken after the core's when both are held).
#ifndef SERVER_PLANS_JOB_TABLE_H_
#define SERVER_PLANS_JOB_TABLE_H_

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace shard::server {

template <typename T>
class JobTable {
 public:
  // The entry of `incarnation`, made by make() on first use; making one
  // first drops the entries whose incarnation is not in live() (the jobs
  // held; called only then).
  std::shared_ptr<T> ForJob(
      uint64_t incarnation,
      absl::FunctionRef<absl::flat_hash_set<uint64_t>()> live,
      absl::FunctionRef<std::shared_ptr<T>()> make) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (auto found = entries_.find(incarnation); found != entries_.end()) {
      return found->second;
    }
    RetainLocked(live());
    std::shared_ptr<T> made = make();
    entries_.emplace(incarnation, made);
    return made;
  }

  // The job's entry, or null when none was made.
  std::shared_ptr<const T> Find(uint64_t incarnation) const
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto found = entries_.find(incarnation);
    return found == entries_.end() ? nullptr : found->second;
  }

  // Drops the entries whose incarnation is not in `live`.
  void Retain(const absl::flat_hash_set<uint64_t>& live)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    RetainLocked(live);
  }

 private:
  void RetainLocked(const absl::flat_hash_set<uint64_t>& live)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::erase_if(entries_, [&live](const auto& entry) {
      return !live.contains(entry.first);
    });
  }

  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<T>> entries_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace shard::server

#endif  // SERVER_PLANS_JOB_TABLE_H_

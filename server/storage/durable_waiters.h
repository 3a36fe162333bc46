// The WhenDurable() callbacks of a StateStore, by sequence, and the one
// rule that decides them: a callback runs with OK once the store's durable
// sequence reaches it, with the store's error once it broke, and at once
// (on the calling thread) when that is already decided. Shared by the local
// journal and the etcd store. Callbacks always run outside this object's
// lock. Thread-safe.
#ifndef SERVER_STORAGE_DURABLE_WAITERS_H_
#define SERVER_STORAGE_DURABLE_WAITERS_H_

#include <cstdint>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/storage/state_store.h"

namespace shard::storage {

class DurableWaiters {
 public:
  // Everything up to `durable` is durable already (what recovery found).
  explicit DurableWaiters(uint64_t durable) : durable_(durable) {}
  // Runs every callback still kept with UNAVAILABLE "`closed`": none
  // should be left, but each must run exactly once.
  void Close(absl::string_view closed) ABSL_LOCKS_EXCLUDED(mu_);

  // StateStore::WhenDurable.
  void Add(uint64_t sequence, StateStore::Durable done)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Everything up to `durable` is durable now (a lower value than before
  // changes nothing): runs the callbacks it decides.
  void Advance(uint64_t durable) ABSL_LOCKS_EXCLUDED(mu_);
  // The store broke with `error`: runs every kept callback with it; later
  // callbacks for what is not durable get it at once.
  void Break(const absl::Status& error) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Runs (outside mu_) the callbacks decided by now.
  void RunDecided() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  uint64_t durable_ ABSL_GUARDED_BY(mu_);
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  std::multimap<uint64_t, StateStore::Durable> pending_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shard::storage

#endif  // SERVER_STORAGE_DURABLE_WAITERS_H_

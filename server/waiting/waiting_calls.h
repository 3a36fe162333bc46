// Counts the calls that are blocked waiting (JoinJob for its world, store
// gets and waits for keys) against one limit, so that a flood of waiters is
// answered RESOURCE_EXHAUSTED instead of exhausting the server's memory.
// The limit follows what the coordinator serves: `base` (shardd
// --max-waiting-calls) plus kPerRank for each rank held
// (CoordinatorState::ranks_held: a rank's join waits for its world, then
// its process group's rendezvous waits for a key), so a job of any allowed
// size forms on the defaults.
// Thread-safe.
#ifndef SERVER_WAITING_WAITING_CALLS_H_
#define SERVER_WAITING_WAITING_CALLS_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/state/tenant_limits.h"

namespace shard::server {

class WaitingCalls {
 public:
  enum class Kind { kJoin, kStoreGet, kStoreWait };
  static constexpr size_t kKinds = 3;
  static const char* KindName(Kind kind);

  // A waiting call; leaving its scope ends the wait. Movable, not copyable.
  class Slot {
   public:
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&&) = delete;
    Slot(const Slot&) = delete;
    ~Slot();

   private:
    friend class WaitingCalls;
    Slot(WaitingCalls* calls, Kind kind, std::string tenant)
        : calls_(calls), kind_(kind), tenant_(std::move(tenant)) {}
    WaitingCalls* calls_;  // Null once moved from.
    Kind kind_;
    std::string tenant_;  // Counted for this tenant ("": none).
  };

  // Waiting calls allowed per rank of the jobs held.
  static constexpr size_t kPerRank = 2;

  // `tenant_of` (unset: no tenants) names the tenant of a call's job.
  explicit WaitingCalls(size_t base, TenantLimitsOf tenant_of = nullptr)
      : base_(base), tenant_of_(std::move(tenant_of)) {}

  // A slot for one more waiting call about `job_id`, or RESOURCE_EXHAUSTED
  // at the limit (naming it and the flag that raises it) or at its
  // tenant's quota (naming the tenant). `incoming_ranks`: ranks the call
  // itself would add to those held (a join that makes its job count),
  // counted before the decision.
  absl::StatusOr<Slot> Enter(Kind kind, absl::string_view job_id,
                             uint64_t incoming_ranks = 0)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Calls of `tenant` waiting now (metrics).
  size_t waiting_of(absl::string_view tenant) const ABSL_LOCKS_EXCLUDED(mu_);
  // Calls of `kind` waiting now.
  size_t waiting(Kind kind) const ABSL_LOCKS_EXCLUDED(mu_);
  // The limit now: base + kPerRank x ranks held.
  size_t limit() const;
  // The jobs hold `ranks` ranks now (CoordinatorState::ranks_held).
  // Lock-free: called after every decision of the core.
  void SetRanksHeld(uint64_t ranks) {
    ranks_held_.store(ranks, std::memory_order_relaxed);
  }

 private:
  void Leave(Kind kind, const std::string& tenant) ABSL_LOCKS_EXCLUDED(mu_);

  const size_t base_;
  const TenantLimitsOf tenant_of_;
  mutable absl::Mutex mu_;
  std::atomic<uint64_t> ranks_held_{0};
  size_t total_ ABSL_GUARDED_BY(mu_) = 0;
  std::array<size_t, kKinds> by_kind_ ABSL_GUARDED_BY(mu_) = {};
  // Tenants with calls waiting, and how many.
  absl::flat_hash_map<std::string, size_t> by_tenant_ ABSL_GUARDED_BY(mu_);
};

// When a wait of `wait_ms` asked for by a request ends: at most `max_wait`
// from now, and not after the call's deadline.
absl::Time WaitDeadline(uint32_t wait_ms, absl::Duration max_wait,
                        absl::Time call_deadline);

}  // namespace shard::server

#endif  // SERVER_WAITING_WAITING_CALLS_H_

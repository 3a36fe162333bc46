// What one tenant of `shardd --auth-policy` may hold at once: its jobs are
// those its pattern matches (no two tenants' patterns overlap), and each
// part of the coordinator that keeps a resource checks the tenant's quota
// for it beside the global limit, at the same moment and under the same
// lock: jobs and ranks held (the core), rendezvous store bytes (the
// store), cost bytes (the cost store, charged to the uploader's tenant),
// waiting calls (WaitingCalls). Plain data, immutable once built, but for
// the refusals it counts.
#ifndef SERVER_STATE_TENANT_LIMITS_H_
#define SERVER_STATE_TENANT_LIMITS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/state/job_pattern.h"

namespace shard::server {

// Counts the calls refused for a tenant's quota, by tenant and resource
// (metrics). Thread-safe.
class QuotaRefusals {
 public:
  void Add(const std::string& tenant, absl::string_view resource)
      ABSL_LOCKS_EXCLUDED(mu_);
  // ((tenant, resource), refusals) so far.
  std::map<std::pair<std::string, std::string>, uint64_t> Counts() const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> counts_
      ABSL_GUARDED_BY(mu_);
};

struct TenantLimits {
  std::string tenant;  // Its name in the policy.
  JobPattern jobs;
  // Unset: only the global limit applies.
  std::optional<uint64_t> max_jobs;
  std::optional<uint64_t> max_ranks;
  std::optional<uint64_t> max_store_bytes;
  std::optional<uint64_t> max_cost_bytes;
  std::optional<uint64_t> max_waiting_calls;
  // Where refusals are counted (null: not counted).
  std::shared_ptr<QuotaRefusals> refusals;
};

// The limits of the tenant whose jobs include `job_id` (null: none, only
// the global limits apply). Called under the callers' locks: quick, and
// never calls back into the coordinator.
using TenantLimitsOf =
    std::function<std::shared_ptr<const TenantLimits>(absl::string_view)>;

// OK when the tenant of `limits` (null: none) may go from `used` to
// `used + more` of `resource` ("jobs", "ranks", "store bytes", ...), which
// `quota` limits; else RESOURCE_EXHAUSTED naming the tenant, what it holds
// and its quota (counted in limits->refusals).
absl::Status CheckTenantQuota(const TenantLimits* limits,
                              std::optional<uint64_t> TenantLimits::*quota,
                              absl::string_view resource, uint64_t used,
                              uint64_t more);

}  // namespace shard::server

#endif  // SERVER_STATE_TENANT_LIMITS_H_

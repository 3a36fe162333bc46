#include "server/state/tenant_limits.h"

#include "absl/strings/str_cat.h"

namespace shard::server {
namespace {

absl::Status TenantQuotaExceeded(const TenantLimits& limits,
                                 absl::string_view resource, uint64_t used,
                                 uint64_t more, uint64_t limit) {
  return absl::ResourceExhaustedError(
      absl::StrCat("tenant '", limits.tenant, "' (jobs \"", limits.jobs.text(),
                   "\") is at its quota of ", resource, ": it holds ", used,
                   ", ", more, " more would pass ", limit,
                   " (shardd --auth-policy); other tenants are not affected"));
}

}  // namespace

void QuotaRefusals::Add(const std::string& tenant, absl::string_view resource) {
  absl::MutexLock lock(&mu_);
  ++counts_[{tenant, std::string(resource)}];
}

std::map<std::pair<std::string, std::string>, uint64_t> QuotaRefusals::Counts()
    const {
  absl::MutexLock lock(&mu_);
  return counts_;
}

absl::Status CheckTenantQuota(const TenantLimits* limits,
                              std::optional<uint64_t> TenantLimits::*quota,
                              absl::string_view resource, uint64_t used,
                              uint64_t more) {
  if (limits == nullptr || !(limits->*quota).has_value()) {
    return absl::OkStatus();
  }
  const uint64_t limit = *(limits->*quota);
  if (used + more <= limit) return absl::OkStatus();
  if (limits->refusals != nullptr)
    limits->refusals->Add(limits->tenant, resource);
  return TenantQuotaExceeded(*limits, resource, used, more, limit);
}

}  // namespace shard::server

#include "server/security/policy_holder.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/security/audit_line.h"
#include "server/security/policy_file.h"

namespace shard::security {

absl::StatusOr<std::shared_ptr<PolicyHolder>> PolicyHolder::Load(
    std::string path) {
  std::shared_ptr<PolicyHolder> holder(new PolicyHolder(std::move(path)));
  if (absl::Status s = holder->Read(false); !s.ok()) return s;
  return holder;
}

std::shared_ptr<const AccessPolicy> PolicyHolder::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

absl::Status PolicyHolder::Reload() { return Read(false); }

absl::Status PolicyHolder::ReloadIfChanged() { return Read(true); }

absl::Status PolicyHolder::Read(bool only_if_changed) {
  absl::MutexLock reading(&read_mu_);
  absl::StatusOr<AccessPolicy> policy =
      absl::InvalidArgumentError(absl::StrCat("cannot read ", path_));
  // nullopt: the file could not be read.
  std::optional<std::string> text = ReadPolicyText(path_);
  if (only_if_changed && text == last_text_) return absl::OkStatus();
  if (text) policy = ParsePolicy(*text, path_, refusals_);
  last_text_ = std::move(text);
  if (!policy.ok()) {
    AuditRecord refused;
    refused.call = "LoadPolicy";
    refused.outcome = "refused";
    refused.reason =
        absl::StrCat(policy.status().message(),
                     Current() == nullptr ? "" : "; the policy in force stays");
    Audit(refused);
    return policy.status();
  }
  AuditRecord loaded;
  loaded.call = "LoadPolicy";
  loaded.outcome = "loaded";
  loaded.reason =
      absl::StrCat(path_, ": ", policy->principals().size(), " principals, ",
                   policy->tenants().size(), " tenants");
  {
    absl::MutexLock lock(&mu_);
    current_ = std::make_shared<const AccessPolicy>(*std::move(policy));
  }
  Audit(loaded);
  return absl::OkStatus();
}

server::TenantLimitsOf TenantLimitsFrom(std::shared_ptr<PolicyHolder> holder) {
  return [holder = std::move(holder)](absl::string_view job_id)
             -> std::shared_ptr<const server::TenantLimits> {
    std::shared_ptr<const AccessPolicy> policy = holder->Current();
    const server::TenantLimits* tenant = policy->TenantOf(job_id);
    if (tenant == nullptr) return nullptr;
    // Shares the policy's ownership: valid after a reload replaced it.
    return std::shared_ptr<const server::TenantLimits>(std::move(policy),
                                                       tenant);
  };
}

}  // namespace shard::security

#include "server/security/access_policy.h"

#include <utility>

namespace shard::security {
absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kViewer:
      return "viewer";
    case Role::kMember:
      return "member";
    case Role::kAdmin:
      return "admin";
  }
  return "?";
}

std::optional<Role> RoleNamed(absl::string_view name) {
  for (Role role : {Role::kViewer, Role::kMember, Role::kAdmin}) {
    if (RoleName(role) == name) return role;
  }
  return std::nullopt;
}

bool Principal::Holds(Role role, absl::string_view job_id) const {
  for (const Grant& grant : grants) {
    const bool enough = grant.role == role || role == Role::kViewer;
    if (enough && grant.jobs.Matches(job_id)) return true;
  }
  return false;
}

bool Principal::HoldsAnywhere(Role role) const {
  for (const Grant& grant : grants) {
    if (grant.role == role) return true;
  }
  return false;
}

bool Principal::IsClusterAdmin() const {
  for (const Grant& grant : grants) {
    if (grant.role == Role::kAdmin && grant.jobs.MatchesEveryJob()) {
      return true;
    }
  }
  return false;
}

AccessPolicy::AccessPolicy(
    std::vector<Principal> principals, std::map<Digest, size_t> by_token_digest,
    std::map<std::string, size_t, std::less<>> by_identity,
    std::vector<server::TenantLimits> tenants)
    : principals_(std::move(principals)),
      by_token_digest_(std::move(by_token_digest)),
      by_identity_(std::move(by_identity)),
      tenants_(std::move(tenants)) {}

const Principal* AccessPolicy::ByTokenDigest(const Digest& digest) const {
  const auto found = by_token_digest_.find(digest);
  return found == by_token_digest_.end() ? nullptr
                                         : &principals_[found->second];
}

const Principal* AccessPolicy::ByIdentity(absl::string_view identity) const {
  const auto found = by_identity_.find(identity);
  return found == by_identity_.end() ? nullptr : &principals_[found->second];
}

const server::TenantLimits* AccessPolicy::TenantOf(
    absl::string_view job_id) const {
  for (const server::TenantLimits& tenant : tenants_) {
    if (tenant.jobs.Matches(job_id)) return &tenant;
  }
  return nullptr;
}

const server::TenantLimits* AccessPolicy::UploaderTenantOf(
    const Principal& principal) const {
  for (const server::TenantLimits& tenant : tenants_) {
    bool includes_all = principal.HoldsAnywhere(Role::kMember);
    for (const Grant& grant : principal.grants) {
      if (grant.role == Role::kMember && !tenant.jobs.Includes(grant.jobs)) {
        includes_all = false;
      }
    }
    if (includes_all) return &tenant;
  }
  return nullptr;
}

}  // namespace shard::security

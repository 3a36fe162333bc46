#include "server/security/access_policy.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shard::security {
namespace {

bool IsJobIdCharacter(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

}  // namespace

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

absl::StatusOr<JobPattern> JobPattern::Parse(absl::string_view text) {
  const bool prefix = absl::EndsWith(text, "*");
  absl::string_view body = prefix ? text.substr(0, text.size() - 1) : text;
  if (!prefix && body.empty()) {
    return absl::InvalidArgumentError(
        "a job pattern is \"*\", \"PREFIX*\" or one job id; it is empty");
  }
  if (body.size() > 128) {
    return absl::InvalidArgumentError(
        "a job pattern is at most 128 characters before its \"*\"");
  }
  for (char c : body) {
    if (!IsJobIdCharacter(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job pattern \"", text,
          "\" has a character job ids cannot have (they are [A-Za-z0-9._-]"
          "; a \"*\" may only end the pattern)"));
    }
  }
  return JobPattern(std::string(body), !prefix);
}

bool JobPattern::Matches(absl::string_view job_id) const {
  return exact_ ? job_id == prefix_ : absl::StartsWith(job_id, prefix_);
}

bool JobPattern::Overlaps(const JobPattern& other) const {
  if (exact_ && other.exact_) return prefix_ == other.prefix_;
  if (exact_) return other.Matches(prefix_);
  if (other.exact_) return Matches(other.prefix_);
  return absl::StartsWith(prefix_, other.prefix_) ||
         absl::StartsWith(other.prefix_, prefix_);
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
    std::vector<Tenant> tenants)
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

const Tenant* AccessPolicy::TenantOf(absl::string_view job_id) const {
  for (const Tenant& tenant : tenants_) {
    if (tenant.jobs.Matches(job_id)) return &tenant;
  }
  return nullptr;
}

}  // namespace shard::security

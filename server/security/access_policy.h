// Who may do what under `shardd --auth-policy`: principals (a bearer
// token, kept as its SHA-256 digest, or an mTLS client identity), each
// with a name and grants (a role on a pattern of job ids), and tenants (a
// pattern of job ids with quotas: server/state/tenant_limits.h).
// policy_file.h builds one from the
// policy file; call_rules.h says which role each RPC needs.
//
// Roles: `viewer` reads a job (GetJob, PreviewShard, ListJobs shows it);
// `member` runs it (creates it, joins, streams, commits, uses its store,
// uploads costs) and reads it; `admin` deletes it and reads it. A
// principal with `admin` on "*" is a cluster admin: it may also drain the
// coordinator. Roles do not imply one another otherwise: an admin cannot
// join or commit, a member cannot delete.
//
// Thread-safety: immutable once built; every method is thread-safe.
#ifndef SERVER_SECURITY_ACCESS_POLICY_H_
#define SERVER_SECURITY_ACCESS_POLICY_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/state/job_pattern.h"
#include "server/state/tenant_limits.h"

namespace shard::security {

enum class Role { kViewer, kMember, kAdmin };

// "viewer", "member", "admin".
absl::string_view RoleName(Role role);
std::optional<Role> RoleNamed(absl::string_view name);

using server::JobPattern;

struct Grant {
  Role role;
  JobPattern jobs;
};

struct Principal {
  // [A-Za-z0-9._-]{1,64}, unique in the policy; audit lines and errors
  // name a caller by it.
  std::string name;
  std::vector<Grant> grants;

  // A grant of `role` matches `job_id`; a viewer call is also allowed by
  // a member or admin grant.
  bool Holds(Role role, absl::string_view job_id) const;
  // Some grant of `role` (any pattern): uploading costs, which name no job
  // yet, needs the member role on some job.
  bool HoldsAnywhere(Role role) const;
  // `admin` on "*".
  bool IsClusterAdmin() const;
};

class AccessPolicy {
 public:
  using Digest = std::array<uint8_t, 32>;

  // Requires what PolicyFile checks: unique names, digests and
  // identities; tenants that do not overlap.
  AccessPolicy(std::vector<Principal> principals,
               std::map<Digest, size_t> by_token_digest,
               std::map<std::string, size_t, std::less<>> by_identity,
               std::vector<server::TenantLimits> tenants);

  // The principal a bearer token's SHA-256 digest names (null: none).
  const Principal* ByTokenDigest(const Digest& digest) const;
  // The principal a client certificate identity names (a URI SAN, DNS SAN
  // or the subject's CN; null: none).
  const Principal* ByIdentity(absl::string_view identity) const;
  // The tenant whose pattern matches `job_id` (null: none).
  const server::TenantLimits* TenantOf(absl::string_view job_id) const;
  // The tenant whose jobs include every job `principal` is a member of:
  // the one its cost uploads (which name no job) are charged to (null:
  // none, or its member grants span several tenants).
  const server::TenantLimits* UploaderTenantOf(
      const Principal& principal) const;

  const std::vector<Principal>& principals() const { return principals_; }
  const std::vector<server::TenantLimits>& tenants() const { return tenants_; }
  // Some principal is named by a certificate identity.
  bool NamesIdentities() const { return !by_identity_.empty(); }

 private:
  std::vector<Principal> principals_;
  std::map<Digest, size_t> by_token_digest_;
  std::map<std::string, size_t, std::less<>> by_identity_;
  std::vector<server::TenantLimits> tenants_;
};

}  // namespace shard::security

#endif  // SERVER_SECURITY_ACCESS_POLICY_H_

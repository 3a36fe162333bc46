// The --auth-policy file: YAML a person writes by hand (docs/operations.md
// "Tenants" shows the format and a policy for two teams):
//
//   tenants:                      # optional
//     - name: team-a
//       jobs: "team-a-*"          # "*", "PREFIX*" or one job id
//       quota: {jobs: 20, ranks: 512, store_bytes: 16777216,
//               cost_bytes: 268435456, waiting_calls: 1024}  # each optional
//   principals:
//     - name: team-a-trainer
//       token_sha256: 3f5c...     # 64 lowercase hex digits; or
//       # identity: spiffe://cluster.local/ns/team-a/sa/trainer
//       grants:
//         - {role: member, jobs: "team-a-*"}
//
// Every mistake is refused with "FILE:LINE: reason": YAML syntax, an
// unknown key (a misspelt key is never silently ignored), a missing or
// malformed value, a principal with both or neither of token_sha256 and
// identity, a repeated name, digest or identity, tenants whose patterns
// overlap. Stateless; thread-safe.
#ifndef SERVER_SECURITY_POLICY_FILE_H_
#define SERVER_SECURITY_POLICY_FILE_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/security/access_policy.h"
#include "server/state/tenant_limits.h"

namespace shard::security {

// The policy in `text`; errors name `file` ("FILE:LINE: reason"). Its
// tenants count their quota refusals in `refusals` (null: not counted).
absl::StatusOr<AccessPolicy> ParsePolicy(
    absl::string_view text, absl::string_view file,
    std::shared_ptr<server::QuotaRefusals> refusals = nullptr);

// The bytes of the file at `path`; nullopt if it cannot be read.
std::optional<std::string> ReadPolicyText(const std::string& path);

// ParsePolicy of the file at `path`; INVALID_ARGUMENT naming it if it
// cannot be read.
absl::StatusOr<AccessPolicy> ReadPolicyFile(const std::string& path);

}  // namespace shard::security

#endif  // SERVER_SECURITY_POLICY_FILE_H_

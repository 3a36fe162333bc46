// The role each shard.v1.Coordinator RPC needs under --auth-policy, in
// one table: the server's checks, the docs' permission matrix and the
// attack-matrix test all read it. Stateless; thread-safe.
#ifndef SERVER_SECURITY_CALL_RULES_H_
#define SERVER_SECURITY_CALL_RULES_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/security/access_policy.h"

namespace shard::security {

// What a call's role is checked against.
enum class CallScope {
  kJob,      // The job the request names.
  kAnyJob,   // The role on some job (PutCosts: costs name no job yet).
  kListing,  // Allowed; the answer shows only the jobs the caller views.
  kCluster,  // The role on every job ("*"): a cluster admin.
};

struct CallRule {
  absl::string_view rpc;  // The method's name in shard.v1.Coordinator.
  Role role;
  CallScope scope;
};

// Every RPC of shard.v1.Coordinator, in the proto's order.
absl::Span<const CallRule> CallRules();

// The rule of `rpc`; every RPC has one (a missing one is a programming
// error: the server refuses the call as PERMISSION_DENIED).
const CallRule* FindCallRule(absl::string_view rpc);

// OK when `principal` may make the call `rule` describes on `job_id`
// (ignored but for kJob); else PERMISSION_DENIED naming the principal,
// the call, the job and the role it lacks.
absl::Status Authorize(const Principal& principal, const CallRule& rule,
                       absl::string_view job_id);

}  // namespace shard::security

#endif  // SERVER_SECURITY_CALL_RULES_H_

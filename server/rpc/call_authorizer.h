// Who makes a call, and whether it may:
// - under --auth-policy, the principal that the call's bearer token (by
//   its SHA-256 digest) or, when it carries none, its verified client
//   certificate names (its URI SANs, then its DNS SANs, then its subject
//   CN; under --tls-client-ca), checked against call_rules.h on the job
//   the request names;
// - under --auth-token-file / --admin-token-file, one tenant: every call
//   needs the member or the admin token, DeleteJob and Drain the admin
//   token when one is set;
// - with neither, every call is allowed.
// Each denial and each admin call allowed is one audit line
// (server/security/audit_line.h). Thread-safe; owns nothing but the
// policy holder's share; the tokens must outlive it.
#ifndef SERVER_RPC_CALL_AUTHORIZER_H_
#define SERVER_RPC_CALL_AUTHORIZER_H_

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/server_context.h"
#include "server/security/access_policy.h"
#include "server/security/bearer_token.h"
#include "server/security/call_rules.h"
#include "server/security/policy_holder.h"
#include "server/state/tenant_limits.h"

namespace shard::server {

struct CallAuthorizerOptions {
  const security::BearerToken* token = nullptr;
  const security::BearerToken* admin_token = nullptr;
  // --auth-policy (null: the tokens above decide).
  std::shared_ptr<security::PolicyHolder> policy;
  // Each denial, by reason: "unauthenticated" or "no_role" (metrics).
  std::function<void(absl::string_view reason)> on_denied;
};

class CallAuthorizer {
 public:
  explicit CallAuthorizer(CallAuthorizerOptions options);

  // OK when the call may go on; else UNAUTHENTICATED (no credential the
  // coordinator knows) or PERMISSION_DENIED (a known caller without the
  // role `rule` needs on `job_id`), audited.
  absl::Status Check(grpc::ServerContextBase* context,
                     const security::CallRule& rule,
                     absl::string_view job_id) const;

  // ListJobs' filter: whether the caller may view a job (every job
  // without a policy). Valid while `context` is.
  std::function<bool(absl::string_view job_id)> ViewFilter(
      grpc::ServerContextBase* context) const;

  // The tenant the caller's cost uploads are charged to (null: none, or
  // no policy). Valid while `context` is.
  std::shared_ptr<const TenantLimits> UploaderTenant(
      grpc::ServerContextBase* context) const;

  // A stream's check before each chunk: Check() again whenever the policy
  // in force changed since the last; a credential no longer known is
  // PERMISSION_DENIED (revoked) rather than UNAUTHENTICATED. Valid while
  // `context` is; call from one thread at a time.
  std::function<absl::Status()> Recheck(grpc::ServerContextBase* context,
                                        const security::CallRule& rule,
                                        std::string job_id) const;

 private:
  // The token flags' rule.
  absl::Status CheckTokens(grpc::ServerContextBase* context,
                           const security::CallRule& rule,
                           absl::string_view job_id) const;
  // The principal the call's credential names in `policy`, or
  // UNAUTHENTICATED.
  static absl::StatusOr<const security::Principal*> Identify(
      grpc::ServerContextBase* context, const security::AccessPolicy& policy);
  // Check() against `policy`.
  absl::Status CheckPolicy(grpc::ServerContextBase* context,
                           const security::AccessPolicy& policy,
                           const security::CallRule& rule,
                           absl::string_view job_id) const;
  // Audits and counts a denial; returns it.
  absl::Status Denied(grpc::ServerContextBase* context,
                      const security::CallRule& rule, absl::string_view job_id,
                      absl::string_view principal, absl::Status denial) const;
  // Audits an admin call allowed.
  static void AuditAllowed(grpc::ServerContextBase* context,
                           const security::CallRule& rule,
                           absl::string_view job_id,
                           absl::string_view principal);
  // One audit line for the call.
  static void AuditCall(grpc::ServerContextBase* context,
                        const security::CallRule& rule,
                        absl::string_view job_id, absl::string_view principal,
                        absl::string_view outcome, absl::string_view reason);

  const CallAuthorizerOptions options_;
};

}  // namespace shard::server

#endif  // SERVER_RPC_CALL_AUTHORIZER_H_

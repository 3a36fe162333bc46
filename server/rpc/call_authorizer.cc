#include "server/rpc/call_authorizer.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpc/grpc_security_constants.h"
#include "server/security/audit_line.h"

namespace shard::server {
namespace {

using security::CallRule;
using security::Role;

std::optional<absl::string_view> AuthorizationOf(
    grpc::ServerContextBase* context) {
  const auto& metadata = context->client_metadata();
  const auto found = metadata.find("authorization");
  if (found == metadata.end()) return std::nullopt;
  return absl::string_view(found->second.data(), found->second.size());
}

// The verified client certificate's identities, most specific first.
std::vector<std::string> CertificateIdentities(
    grpc::ServerContextBase* context) {
  std::vector<std::string> identities;
  const std::shared_ptr<const grpc::AuthContext> auth = context->auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return identities;
  for (const char* property :
       {GRPC_PEER_URI_PROPERTY_NAME, GRPC_PEER_DNS_PROPERTY_NAME,
        GRPC_X509_CN_PROPERTY_NAME}) {
    for (const grpc::string_ref& value : auth->FindPropertyValues(property)) {
      identities.emplace_back(value.data(), value.size());
    }
  }
  return identities;
}

}  // namespace

CallAuthorizer::CallAuthorizer(CallAuthorizerOptions options)
    : options_(std::move(options)) {}

absl::Status CallAuthorizer::Check(grpc::ServerContextBase* context,
                                   const CallRule& rule,
                                   absl::string_view job_id) const {
  if (options_.policy != nullptr) {
    return CheckPolicy(context, *options_.policy->Current(), rule, job_id);
  }
  return CheckTokens(context, rule, job_id);
}

absl::Status CallAuthorizer::CheckTokens(grpc::ServerContextBase* context,
                                         const CallRule& rule,
                                         absl::string_view job_id) const {
  const security::BearerToken* token = options_.token;
  const security::BearerToken* admin = options_.admin_token;
  const bool admin_call = rule.role == Role::kAdmin;
  if (token == nullptr && (admin == nullptr || !admin_call)) {
    if (admin_call) AuditAllowed(context, rule, job_id, "-");
    return absl::OkStatus();
  }
  const std::optional<absl::string_view> authorization =
      AuthorizationOf(context);
  const bool is_admin = admin != nullptr && admin->Check(authorization).ok();
  const bool is_member = token != nullptr && token->Check(authorization).ok();
  if (admin_call && admin != nullptr) {
    if (is_admin) {
      AuditAllowed(context, rule, job_id, "admin-token");
      return absl::OkStatus();
    }
    if (is_member) {
      return Denied(context, rule, job_id, "member-token",
                    absl::PermissionDeniedError(
                        "this call needs the admin token (shardd "
                        "--admin-token-file); the token given is a member's, "
                        "which cannot delete jobs or drain the coordinator"));
    }
    return Denied(
        context, rule, job_id, "",
        absl::UnauthenticatedError("this call needs the admin token (shardd "
                                   "--admin-token-file): pass its file with "
                                   "--auth-token-file"));
  }
  if (is_member || is_admin) {
    if (admin_call) AuditAllowed(context, rule, job_id, "member-token");
    return absl::OkStatus();
  }
  return Denied(context, rule, job_id, "", token->Check(authorization));
}

absl::StatusOr<const security::Principal*> CallAuthorizer::Identify(
    grpc::ServerContextBase* context, const security::AccessPolicy& policy) {
  if (const std::optional<absl::string_view> authorization =
          AuthorizationOf(context)) {
    absl::StatusOr<security::TokenDigest> digest =
        security::PresentedTokenDigest(authorization);
    if (!digest.ok()) return digest.status();
    if (const security::Principal* principal = policy.ByTokenDigest(*digest)) {
      return principal;
    }
    return absl::UnauthenticatedError(
        "the bearer token names no principal of the coordinator's "
        "--auth-policy");
  }
  const std::vector<std::string> identities = CertificateIdentities(context);
  for (const std::string& identity : identities) {
    if (const security::Principal* principal = policy.ByIdentity(identity)) {
      return principal;
    }
  }
  if (!identities.empty()) {
    return absl::UnauthenticatedError(
        absl::StrCat("the client certificate's identities (",
                     absl::StrJoin(identities, ", "),
                     ") name no principal of the coordinator's --auth-policy"));
  }
  return absl::UnauthenticatedError(
      "this coordinator needs a credential: a bearer token "
      "(--auth-token-file) or a client certificate (--tls-cert)");
}

absl::Status CallAuthorizer::CheckPolicy(grpc::ServerContextBase* context,
                                         const security::AccessPolicy& policy,
                                         const CallRule& rule,
                                         absl::string_view job_id) const {
  absl::StatusOr<const security::Principal*> principal =
      Identify(context, policy);
  if (!principal.ok()) {
    return Denied(context, rule, job_id, "", principal.status());
  }
  const std::string& name = (*principal)->name;
  if (absl::Status s = security::Authorize(**principal, rule, job_id);
      !s.ok()) {
    return Denied(context, rule, job_id, name, s);
  }
  if (rule.role == Role::kAdmin) AuditAllowed(context, rule, job_id, name);
  return absl::OkStatus();
}

absl::Status CallAuthorizer::Denied(grpc::ServerContextBase* context,
                                    const CallRule& rule,
                                    absl::string_view job_id,
                                    absl::string_view principal,
                                    absl::Status denial) const {
  AuditCall(context, rule, job_id, principal.empty() ? "-" : principal,
            "denied", denial.message());
  if (options_.on_denied) {
    options_.on_denied(absl::IsUnauthenticated(denial) ? "unauthenticated"
                                                       : "no_role");
  }
  return denial;
}

void CallAuthorizer::AuditAllowed(grpc::ServerContextBase* context,
                                  const CallRule& rule,
                                  absl::string_view job_id,
                                  absl::string_view principal) {
  AuditCall(context, rule, job_id, principal, "allowed", "");
}

void CallAuthorizer::AuditCall(grpc::ServerContextBase* context,
                               const CallRule& rule, absl::string_view job_id,
                               absl::string_view principal,
                               absl::string_view outcome,
                               absl::string_view reason) {
  security::AuditRecord record;
  record.call = rule.rpc;
  record.principal = principal;
  record.job = job_id;
  record.outcome = outcome;
  const std::string peer = context->peer();
  record.peer = peer;
  record.reason = std::string(reason);
  security::Audit(record);
}

std::function<bool(absl::string_view)> CallAuthorizer::ViewFilter(
    grpc::ServerContextBase* context) const {
  if (options_.policy == nullptr) {
    return [](absl::string_view) { return true; };
  }
  std::shared_ptr<const security::AccessPolicy> policy =
      options_.policy->Current();
  absl::StatusOr<const security::Principal*> principal =
      Identify(context, *policy);
  if (!principal.ok()) return [](absl::string_view) { return false; };
  return [policy, caller = *principal](absl::string_view job_id) {
    return caller->Holds(Role::kViewer, job_id);
  };
}

std::shared_ptr<const TenantLimits> CallAuthorizer::UploaderTenant(
    grpc::ServerContextBase* context) const {
  if (options_.policy == nullptr) return nullptr;
  std::shared_ptr<const security::AccessPolicy> policy =
      options_.policy->Current();
  absl::StatusOr<const security::Principal*> principal =
      Identify(context, *policy);
  if (!principal.ok()) return nullptr;
  const TenantLimits* tenant = policy->UploaderTenantOf(**principal);
  if (tenant == nullptr) return nullptr;
  return std::shared_ptr<const TenantLimits>(std::move(policy), tenant);
}

std::function<absl::Status()> CallAuthorizer::Recheck(
    grpc::ServerContextBase* context, const CallRule& rule,
    std::string job_id) const {
  if (options_.policy == nullptr) return [] { return absl::OkStatus(); };
  return [this, context, &rule, job_id = std::move(job_id),
          checked = options_.policy->Current()]() mutable {
    std::shared_ptr<const security::AccessPolicy> now =
        options_.policy->Current();
    if (now == checked) return absl::OkStatus();
    checked = now;
    absl::Status allowed = CheckPolicy(context, *now, rule, job_id);
    if (absl::IsUnauthenticated(allowed)) {
      // The stream was opened with a credential that has been revoked.
      return absl::PermissionDeniedError(absl::StrCat(
          "the credential this stream was opened with was revoked from "
          "the coordinator's --auth-policy: ",
          allowed.message()));
    }
    return allowed;
  };
}

}  // namespace shard::server

#include "server/security/call_rules.h"

#include "absl/strings/str_cat.h"

namespace shard::security {
namespace {

constexpr CallRule kRules[] = {
    {"CreateJob", Role::kMember, CallScope::kJob},
    {"GetJob", Role::kViewer, CallScope::kJob},
    {"ListJobs", Role::kViewer, CallScope::kListing},
    {"JoinJob", Role::kMember, CallScope::kJob},
    {"Heartbeat", Role::kMember, CallScope::kJob},
    {"Leave", Role::kMember, CallScope::kJob},
    {"StreamShard", Role::kMember, CallScope::kJob},
    {"PreviewShard", Role::kViewer, CallScope::kJob},
    {"CommitProgress", Role::kMember, CallScope::kJob},
    {"StoreSet", Role::kMember, CallScope::kJob},
    {"StoreGet", Role::kMember, CallScope::kJob},
    {"StoreAdd", Role::kMember, CallScope::kJob},
    {"StoreCompareSet", Role::kMember, CallScope::kJob},
    {"StoreWait", Role::kMember, CallScope::kJob},
    {"StoreDelete", Role::kMember, CallScope::kJob},
    {"StoreCount", Role::kMember, CallScope::kJob},
    {"DeleteJob", Role::kAdmin, CallScope::kJob},
    {"PutCosts", Role::kMember, CallScope::kAnyJob},
    {"Drain", Role::kAdmin, CallScope::kCluster},
};

}  // namespace

absl::Span<const CallRule> CallRules() { return kRules; }

const CallRule* FindCallRule(absl::string_view rpc) {
  for (const CallRule& rule : kRules) {
    if (rule.rpc == rpc) return &rule;
  }
  return nullptr;
}

absl::Status Authorize(const Principal& principal, const CallRule& rule,
                       absl::string_view job_id) {
  switch (rule.scope) {
    case CallScope::kListing:
      return absl::OkStatus();
    case CallScope::kJob:
      if (principal.Holds(rule.role, job_id)) return absl::OkStatus();
      return absl::PermissionDeniedError(absl::StrCat(
          "principal '", principal.name, "' may not call ", rule.rpc,
          " on job '", job_id, "': it needs the ", RoleName(rule.role),
          " role on that job (shardd --auth-policy)"));
    case CallScope::kAnyJob:
      if (principal.HoldsAnywhere(rule.role)) return absl::OkStatus();
      return absl::PermissionDeniedError(
          absl::StrCat("principal '", principal.name, "' may not call ",
                       rule.rpc, ": it needs the ", RoleName(rule.role),
                       " role on some job (shardd --auth-policy)"));
    case CallScope::kCluster:
      if (principal.IsClusterAdmin()) return absl::OkStatus();
      return absl::PermissionDeniedError(absl::StrCat(
          "principal '", principal.name, "' may not call ", rule.rpc,
          ": it needs the admin role on every job (\"*\", shardd "
          "--auth-policy)"));
  }
  return absl::PermissionDeniedError("unknown call scope");
}

}  // namespace shard::security

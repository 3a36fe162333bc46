// The audit trail of --auth-policy and the tokens: one line on shardd's
// event log (stderr, "<RFC 3339 UTC time> audit ...") per admin call
// allowed, per denial and per policy load, with the fields in this order:
//
//   audit call=DeleteJob principal=team-a-admin job="team-a-bert"
//       outcome=allowed peer="ipv4:10.0.3.7:51234"
//   audit call=StoreSet principal=team-b-trainer job="team-a-bert"
//       outcome=denied reason="principal 'team-b-trainer' may not ..."
//   audit call=LoadPolicy outcome=loaded reason="/etc/shard/policy.yaml: ..."
//
// principal is the caller's name in the policy ("-" when unknown; under
// the token flags "member-token" or "admin-token"), never a token. In a
// quoted value a quote or backslash gets a backslash and a control or
// non-ASCII byte is \xHH, so a line stays one line whatever a caller sends.
// Empty fields are left out. Thread-safe (LogEvent is).
#ifndef SERVER_SECURITY_AUDIT_LINE_H_
#define SERVER_SECURITY_AUDIT_LINE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace shard::security {

struct AuditRecord {
  absl::string_view call;       // An RPC's name, or "LoadPolicy".
  absl::string_view principal;  // Empty: left out.
  absl::string_view job;        // Empty: left out.
  absl::string_view outcome;    // allowed, denied, loaded, refused.
  absl::string_view peer;       // Empty: left out.
  std::string reason;           // Empty: left out.
};

// "audit call=... principal=... job=\"...\" outcome=... ...".
std::string FormatAudit(const AuditRecord& record);
// Writes FormatAudit(record) to the event log.
void Audit(const AuditRecord& record);

}  // namespace shard::security

#endif  // SERVER_SECURITY_AUDIT_LINE_H_

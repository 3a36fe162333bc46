#include "server/security/audit_line.h"

#include "absl/strings/str_cat.h"
#include "server/runtime/event_log.h"

namespace shard::security {
namespace {

// `value` between double quotes: a quote or backslash gets a backslash,
// a control or non-ASCII byte becomes \xHH.
void AddQuoted(std::string& line, absl::string_view key,
               absl::string_view value) {
  if (value.empty()) return;
  absl::StrAppend(&line, " ", key, "=\"");
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      line.push_back('\\');
      line.push_back(c);
    } else if (byte < 0x20 || byte >= 0x7f) {
      absl::StrAppend(&line, "\\x", absl::Hex(byte, absl::kZeroPad2));
    } else {
      line.push_back(c);
    }
  }
  line.push_back('"');
}

}  // namespace

std::string FormatAudit(const AuditRecord& record) {
  std::string line = absl::StrCat("audit call=", record.call);
  if (!record.principal.empty()) {
    absl::StrAppend(&line, " principal=", record.principal);
  }
  AddQuoted(line, "job", record.job);
  absl::StrAppend(&line, " outcome=", record.outcome);
  AddQuoted(line, "peer", record.peer);
  AddQuoted(line, "reason", record.reason);
  return line;
}

void Audit(const AuditRecord& record) { server::LogEvent(FormatAudit(record)); }

}  // namespace shard::security

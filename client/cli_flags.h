// Command-line flags of the form "--name value" or "--name=value".
//
// Parsing checks every flag against the set the command accepts, so a typo
// is an error naming the accepted flags instead of being ignored.
#ifndef CLIENT_CLI_FLAGS_H_
#define CLIENT_CLI_FLAGS_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace shard::client {

class CliFlags {
 public:
  // Parses `args` (no program name, no command). Every element must be a
  // flag in `accepted` followed by its value. INVALID_ARGUMENT otherwise.
  static absl::StatusOr<CliFlags> Parse(const std::vector<std::string>& args,
                                        const std::set<std::string>& accepted);

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  // INVALID_ARGUMENT when a required flag is missing.
  absl::StatusOr<std::string> String(const std::string& name) const;
  std::string String(const std::string& name,
                     const std::string& fallback) const;
  // Decimal unsigned integer; INVALID_ARGUMENT for anything else.
  absl::StatusOr<uint64_t> Uint64(const std::string& name) const;
  absl::StatusOr<uint64_t> Uint64(const std::string& name,
                                  uint64_t fallback) const;
  // A decimal number such as 0.05.
  absl::StatusOr<double> Double(const std::string& name, double fallback) const;
  // "true" or "false".
  absl::StatusOr<bool> Bool(const std::string& name, bool fallback) const;
  // An absl duration such as "30s" or "5m".
  absl::StatusOr<absl::Duration> Duration(const std::string& name,
                                          absl::Duration fallback) const;

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace shard::client

#endif  // CLIENT_CLI_FLAGS_H_

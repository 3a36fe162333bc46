// Checks shardd's TLS files before it listens, so that a wrong file is a
// bad flag (exit 2, naming the file and what is wrong) rather than a
// listener that fails to start for no stated reason.
//
// CheckServerTls parses the certificate (chain) and the private key, checks
// that the key belongs to the chain's first certificate and that the
// certificate is valid now, and that the client CA bundle (when given)
// holds at least one certificate. Errors are INVALID_ARGUMENT naming the
// flag and the file; never the key's content. Stateless; thread-safe.
#ifndef SERVER_SECURITY_TLS_MATERIAL_H_
#define SERVER_SECURITY_TLS_MATERIAL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace shard::security {

struct TlsFiles {
  std::string cert_file;
  std::string cert_pem;
  std::string key_file;
  std::string key_pem;
  std::string client_ca_file;  // Empty: no client CA.
  std::string client_ca_pem;
};

// Certificates expiring within this much time are warned about.
inline constexpr absl::Duration kExpiryWarning = absl::Hours(30 * 24);

// OK with warnings to log (a certificate that expires within
// kExpiryWarning of `now`), or the first problem found.
absl::StatusOr<std::vector<std::string>> CheckServerTls(const TlsFiles& files,
                                                        absl::Time now);

}  // namespace shard::security

#endif  // SERVER_SECURITY_TLS_MATERIAL_H_

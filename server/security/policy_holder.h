// The --auth-policy in force. Read at start (Load: a bad file is an
// error, shardd exits 2), re-read by Reload() (SIGHUP) and by
// ReloadIfChanged() (PolicyFileWatch: a Kubernetes Secret rotated under a
// mounted file). A file that does not parse is refused with its
// "FILE:LINE: reason" and the policy in force stays. Every load, taken or
// refused, is one audit line (audit_line.h).
//
// Thread-safety: every method is thread-safe; Current() is a short
// critical section, and a policy once handed out stays valid for as long
// as its holder keeps the pointer.
#ifndef SERVER_SECURITY_POLICY_HOLDER_H_
#define SERVER_SECURITY_POLICY_HOLDER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/security/access_policy.h"
#include "server/state/tenant_limits.h"

namespace shard::security {

class PolicyHolder {
 public:
  // The policy in `path`, or its error (INVALID_ARGUMENT).
  static absl::StatusOr<std::shared_ptr<PolicyHolder>> Load(std::string path);

  std::shared_ptr<const AccessPolicy> Current() const;
  // Re-reads the file: OK once its policy is in force, else the error
  // (the policy in force stays).
  absl::Status Reload();
  // Reload() when the file's bytes differ from the last read (taken or
  // refused), so a refused file, or one that cannot be read, is reported
  // once; OK when unchanged.
  absl::Status ReloadIfChanged();

  const std::string& path() const { return path_; }
  // The tenants' quota refusals, across reloads.
  const server::QuotaRefusals& quota_refusals() const { return *refusals_; }

 private:
  explicit PolicyHolder(std::string path) : path_(std::move(path)) {}
  // Reads the file; when `only_if_changed` and its bytes are the last
  // read's, does nothing.
  absl::Status Read(bool only_if_changed);

  const std::string path_;
  const std::shared_ptr<server::QuotaRefusals> refusals_ =
      std::make_shared<server::QuotaRefusals>();
  mutable absl::Mutex mu_;
  std::shared_ptr<const AccessPolicy> current_ ABSL_GUARDED_BY(mu_);
  // Serializes reads, so that two reloads do not interleave.
  absl::Mutex read_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // The file's bytes at the last read (nullopt: it could not be read).
  std::optional<std::string> last_text_ ABSL_GUARDED_BY(read_mu_) = "";
};

// The tenant of a job under the policy in force at each call (for
// CoordinatorOptions::tenant_limits_of); keeps `holder` alive.
server::TenantLimitsOf TenantLimitsFrom(std::shared_ptr<PolicyHolder> holder);

}  // namespace shard::security

#endif  // SERVER_SECURITY_POLICY_HOLDER_H_

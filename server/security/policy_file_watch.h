// Re-reads the --auth-policy file every `interval` on a thread of its own
// (PolicyHolder::ReloadIfChanged), so that a rotated Kubernetes Secret (a
// new ..data directory swapped in under the mounted file) takes effect
// without a signal. Stops, joining its thread, when destroyed.
// Thread-safety: construct and destroy on one thread.
#ifndef SERVER_SECURITY_POLICY_FILE_WATCH_H_
#define SERVER_SECURITY_POLICY_FILE_WATCH_H_

#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/security/policy_holder.h"

namespace shard::security {

class PolicyFileWatch {
 public:
  PolicyFileWatch(std::shared_ptr<PolicyHolder> holder,
                  absl::Duration interval);
  ~PolicyFileWatch();
  PolicyFileWatch(const PolicyFileWatch&) = delete;
  PolicyFileWatch& operator=(const PolicyFileWatch&) = delete;

 private:
  void Run();

  const std::shared_ptr<PolicyHolder> holder_;
  const absl::Duration interval_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace shard::security

#endif  // SERVER_SECURITY_POLICY_FILE_WATCH_H_

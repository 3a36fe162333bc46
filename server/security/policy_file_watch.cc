#include "server/security/policy_file_watch.h"

#include <utility>

namespace shard::security {

PolicyFileWatch::PolicyFileWatch(std::shared_ptr<PolicyHolder> holder,
                                 absl::Duration interval)
    : holder_(std::move(holder)), interval_(interval) {
  thread_ = std::thread([this] { Run(); });
}

PolicyFileWatch::~PolicyFileWatch() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void PolicyFileWatch::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), interval_)) return;
    }
    // A refused file is audited by the holder; the policy in force stays.
    holder_->ReloadIfChanged().IgnoreError();
  }
}

}  // namespace shard::security

#include "server/rpc/queue_handover.h"

#include <vector>

namespace shard::server {

void QueueHandover::Send(QueueEvent* event) {
  absl::MutexLock lock(&mu_);
  const bool alarm_set = !sent_.empty();
  sent_.push_back(event);
  if (alarm_set) return;
  // Set under mu_: a Happened that follows finds the event sent, and the
  // alarm is never set twice before it fired. Due in the past, it is
  // queued before Set returns, with no timer.
  alarm_.Set(queue_, gpr_inf_past(GPR_CLOCK_MONOTONIC), this);
}

void QueueHandover::Happened(bool) {
  std::vector<QueueEvent*> batch;
  {
    absl::MutexLock lock(&mu_);
    batch.swap(sent_);
  }
  for (QueueEvent* event : batch) event->Happened(true);
}

}  // namespace shard::server

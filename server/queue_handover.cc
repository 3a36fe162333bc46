#include "server/queue_handover.h"

#include <utility>

namespace shard::server {

void QueueHandover::Send(QueueEvent* event) {
  absl::MutexLock lock(&mu_);
  sent_.push_back(event);
  if (alarm_set_) return;
  alarm_set_ = true;
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
    alarm_set_ = false;
  }
  for (QueueEvent* event : batch) event->Happened(true);
}

}  // namespace shard::server

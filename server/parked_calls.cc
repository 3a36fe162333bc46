#include "server/parked_calls.h"

#include <vector>

#include "absl/time/clock.h"

namespace shard::server {

ParkedCalls::ParkedCalls(absl::Mutex* owner_mu)
    : owner_mu_(owner_mu), timer_([this] { TimerLoop(); }) {}

ParkedCalls::~ParkedCalls() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    timer_cv_.Signal();
  }
  timer_.join();
}

void ParkedCalls::Park(const std::string& topic, absl::Time deadline,
                       Decision decision,
                       const std::shared_ptr<Cancellation>& cancellation,
                       AfterUnlock& then) {
  absl::MutexLock lock(&mu_);
  const Id id = next_id_++;
  const bool earliest =
      by_deadline_.empty() || deadline < by_deadline_.begin()->first;
  auto call = calls_.emplace(id, Call{topic, deadline, std::move(decision)});
  by_topic_[topic].insert(id);
  by_deadline_.emplace(deadline, id);
  if (earliest) timer_cv_.Signal();
  if (cancellation != nullptr &&
      !cancellation->OnCancel([this, id]() { Cancel(id); })) {
    Decide(call.first, Why::kCancelled, then);  // The client left before.
  }
}

bool ParkedCalls::Decide(std::map<Id, Call>::iterator call, Why why,
                         AfterUnlock& then) {
  if (!call->second.decision(why, then)) return false;
  auto topic = by_topic_.find(call->second.topic);
  topic->second.erase(call->first);
  if (topic->second.empty()) by_topic_.erase(topic);
  by_deadline_.erase({call->second.deadline, call->first});
  calls_.erase(call);  // Destroys the decision and what it holds.
  return true;
}

void ParkedCalls::Wake(const std::string& topic, AfterUnlock& then) {
  absl::MutexLock lock(&mu_);
  auto found = by_topic_.find(topic);
  if (found == by_topic_.end()) return;
  // Decide() may erase the topic's entry: iterate over a copy.
  const std::vector<Id> ids(found->second.begin(), found->second.end());
  for (Id id : ids) Decide(calls_.find(id), Why::kWoken, then);
}

void ParkedCalls::WakeAll(AfterUnlock& then) {
  absl::MutexLock lock(&mu_);
  for (auto it = calls_.begin(); it != calls_.end();) {
    auto next = std::next(it);
    Decide(it, Why::kWoken, then);
    it = next;
  }
}

void ParkedCalls::EndAll(AfterUnlock& then) {
  absl::MutexLock lock(&mu_);
  while (!calls_.empty()) Decide(calls_.begin(), Why::kEnded, then);
}

void ParkedCalls::Cancel(Id id) {
  UnlockThenRun owner(owner_mu_);
  absl::MutexLock lock(&mu_);
  auto call = calls_.find(id);
  if (call != calls_.end()) Decide(call, Why::kCancelled, owner.then());
}

size_t ParkedCalls::parked() const {
  absl::MutexLock lock(&mu_);
  return calls_.size();
}

void ParkedCalls::TimerLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      if (by_deadline_.empty()) {
        timer_cv_.Wait(&mu_);
        continue;
      }
      const absl::Time next = by_deadline_.begin()->first;
      if (next > absl::Now()) {
        timer_cv_.WaitWithDeadline(&mu_, next);
        continue;
      }
    }
    // Something is due: decisions need the owner's mutex, taken first.
    UnlockThenRun owner(owner_mu_);
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
      // A decision must finish an expired call; never spin if one does not.
      if (!Decide(calls_.find(by_deadline_.begin()->second), Why::kDeadline,
                  owner.then())) {
        break;
      }
    }
  }
}

}  // namespace shard::server

#include "server/waiting/parked_calls.h"

#include <algorithm>
#include <vector>

#include "absl/time/clock.h"

namespace shard::server {

ParkedCalls::ParkedCalls(absl::Mutex* owner_mu, LockHoldObserver on_owner_held)
    : owner_mu_(owner_mu),
      on_owner_held_(std::move(on_owner_held)),
      timer_([this] { TimerLoop(); }) {}

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
  if (by_topic_.find(topic) == by_topic_.end()) return;
  if (!waking_.insert(topic).second) return;  // Its pass has not started.
  then.Add([this, topic] { DecideTopic(topic); });
}

void ParkedCalls::DecideTopic(const std::string& topic) {
  std::vector<Id> woken;
  {
    absl::MutexLock lock(&mu_);
    waking_.erase(topic);
    auto found = by_topic_.find(topic);
    if (found == by_topic_.end()) return;
    woken.assign(found->second.begin(), found->second.end());
  }
  DecideWoken(woken);
}

void ParkedCalls::WakeAll(AfterUnlock& then) {
  absl::MutexLock lock(&mu_);
  std::vector<Id> woken;
  woken.reserve(calls_.size());
  for (const auto& [id, call] : calls_) woken.push_back(id);
  then.Add([this, woken = std::move(woken)] { DecideWoken(woken); });
}

void ParkedCalls::HoldingOwner(absl::FunctionRef<void(AfterUnlock&)> decide) {
  UnlockThenRun owner(owner_mu_, &on_owner_held_);
  decide(owner.then());
}

void ParkedCalls::DecideWoken(const std::vector<Id>& woken) {
  for (size_t begin = 0; begin < woken.size(); begin += kBatch) {
    const size_t end = std::min(woken.size(), begin + kBatch);
    HoldingOwner([&](AfterUnlock& then) {
      absl::MutexLock lock(&mu_);
      for (size_t i = begin; i < end; ++i) {
        // Ended meanwhile (deadline, cancellation) if no longer parked.
        auto call = calls_.find(woken[i]);
        if (call != calls_.end()) Decide(call, Why::kWoken, then);
      }
    });
  }
}

void ParkedCalls::EndAll(AfterUnlock& then) {
  absl::MutexLock lock(&mu_);
  while (!calls_.empty()) Decide(calls_.begin(), Why::kEnded, then);
}

void ParkedCalls::Cancel(Id id) {
  HoldingOwner([&](AfterUnlock& then) {
    absl::MutexLock lock(&mu_);
    auto call = calls_.find(id);
    if (call != calls_.end()) Decide(call, Why::kCancelled, then);
  });
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
    bool more = true;
    while (more) {
      HoldingOwner([&](AfterUnlock& then) { more = EndDueCalls(then); });
    }
  }
}

bool ParkedCalls::EndDueCalls(AfterUnlock& then) {
  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  for (size_t ended = 0; ended < kBatch; ++ended) {
    if (by_deadline_.empty() || by_deadline_.begin()->first > now) {
      return false;
    }
    // A decision must finish an expired call; never spin if one does not.
    if (!Decide(calls_.find(by_deadline_.begin()->second), Why::kDeadline,
                then)) {
      return false;
    }
  }
  return true;
}

}  // namespace shard::server

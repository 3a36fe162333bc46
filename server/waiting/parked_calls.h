// Calls that wait for a condition on state their owner guards with its own
// mutex, parked without a thread each (they are answered through gRPC's
// callback API). The owner parks a call with a decision function and, after
// changing the state of a topic (a job, a store space), wakes that topic:
// only its calls are examined again, nothing else is. A timer thread ends
// each call at its deadline and its Cancellation (reply.h) ends it at once.
// The answers the decisions give run on the thread that woke, timed out or
// cancelled the call, once it let go of every lock (after_unlock.h): a
// parked call costs no thread of its own at any point.
//
// Wakes and deadlines decide at most kBatch calls per hold of the owner's
// mutex: a wake asks its topic's calls after the waker let go of the mutex,
// taking it again for each batch (so the change that forms a world of
// 8,000 does not hold the owner's lock while 8,000 joins are decided), and
// the timer ends due calls a batch at a time (EndAll, at shutdown, ends
// every call in the caller's hold). Each hold ParkedCalls takes itself (a
// batch, the timer's, a cancellation's) is reported to the owner's
// `on_owner_held`.
//
// Locking: Park(), Wake(), WakeAll(), EndAll() and parked() must be called
// with the owner's mutex held; they add what they decide (and, for wakes,
// the deciding itself) to the caller's AfterUnlock, which must run on this
// thread before the owner destroys this object. The destructor is called
// without the mutex (it, a cancellation and the timer thread take it).
// Decisions run with the owner's mutex held and must not call back into
// this object. The owner calls EndAll() before destroying it.
#ifndef SERVER_WAITING_PARKED_CALLS_H_
#define SERVER_WAITING_PARKED_CALLS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/waiting/after_unlock.h"
#include "server/waiting/reply.h"

namespace shard::server {

class ParkedCalls {
 public:
  enum class Why {
    kWoken,      // Its topic changed; the decision may keep it waiting.
    kDeadline,   // Its deadline passed.
    kCancelled,  // Its Cancellation: the client went away.
    kEnded,      // EndAll(): the owner shuts down.
  };
  // Decides the call for `why`: adds its answer (and whatever else it
  // decided) to `then` and returns true, or returns false to keep the call
  // waiting (only allowed for kWoken).
  using Decision = absl::AnyInvocable<bool(Why why, AfterUnlock& then)>;

  // The most calls one hold of the owner's mutex decides.
  static constexpr size_t kBatch = 64;

  // `on_owner_held` is told how long each hold of the owner's mutex
  // ParkedCalls takes lasted.
  explicit ParkedCalls(absl::Mutex* owner_mu,
                       LockHoldObserver on_owner_held = {});
  ~ParkedCalls();
  ParkedCalls(const ParkedCalls&) = delete;
  ParkedCalls& operator=(const ParkedCalls&) = delete;

  // Parks a call on `topic` until `decision` answers it. A `cancellation`
  // (may be null) ends it when the client goes away, at once if it did
  // already; it must not fire after this ParkedCalls is destroyed.
  void Park(const std::string& topic, absl::Time deadline, Decision decision,
            const std::shared_ptr<Cancellation>& cancellation,
            AfterUnlock& then) ABSL_LOCKS_EXCLUDED(mu_);
  // Asks the calls of `topic` (every call) again, in `then`. Wakes of a
  // topic whose calls have not been asked yet since the last one add
  // nothing: the asking reads the state then (so a thousand members
  // removed in one hold of the owner's mutex cost one pass over the
  // topic's calls, not a thousand).
  void Wake(const std::string& topic, AfterUnlock& then)
      ABSL_LOCKS_EXCLUDED(mu_);
  void WakeAll(AfterUnlock& then) ABSL_LOCKS_EXCLUDED(mu_);
  void EndAll(AfterUnlock& then) ABSL_LOCKS_EXCLUDED(mu_);
  size_t parked() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Id = uint64_t;
  struct Call {
    std::string topic;
    absl::Time deadline;
    Decision decision;
  };

  // Asks the call's decision about `why`; finishes the call unless it
  // keeps waiting. Returns whether it finished.
  bool Decide(std::map<Id, Call>::iterator call, Why why, AfterUnlock& then)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `decide` holding the owner's mutex (reporting the hold), then
  // what it added to the AfterUnlock.
  void HoldingOwner(absl::FunctionRef<void(AfterUnlock&)> decide)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Asks the calls `woken` that are still parked, kBatch per hold of the
  // owner's mutex. Called holding no lock.
  void DecideWoken(const std::vector<Id>& woken) ABSL_LOCKS_EXCLUDED(mu_);
  // The pass a Wake(topic) scheduled: the topic's calls now, asked.
  void DecideTopic(const std::string& topic) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the call if it is still parked (its client went away).
  void Cancel(Id id) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends up to kBatch calls whose deadline passed; whether any is left.
  bool EndDueCalls(AfterUnlock& then) ABSL_LOCKS_EXCLUDED(mu_);
  void TimerLoop() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex* const owner_mu_;
  const LockHoldObserver on_owner_held_;
  mutable absl::Mutex mu_;  // Taken after owner_mu_, never before it.
  absl::CondVar timer_cv_;
  Id next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<Id, Call> calls_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::set<Id>> by_topic_ ABSL_GUARDED_BY(mu_);
  // Topics woken whose pass has not started.
  std::set<std::string> waking_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<absl::Time, Id>> by_deadline_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread timer_;
};

}  // namespace shard::server

#endif  // SERVER_WAITING_PARKED_CALLS_H_

// ParkedCalls: a wake asks only its topic's calls, deadlines, cancellation
// and shutdown each end a call exactly once with their reason, and the
// answers run on the thread that ended the wait, after it let go of the
// owner's lock. Wakes and deadlines decide at most kBatch calls per hold of
// the owner's lock, never in the waker's own hold, and every hold
// ParkedCalls takes is reported.
#include "server/waiting/parked_calls.h"

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace shard::server {
namespace {

using Why = ParkedCalls::Why;

class ParkedCallsTest : public ::testing::Test {
 protected:
  // Parks call `name` on `topic`: its decision lets it go once `ready_`
  // holds it (or for any reason but a wake), recording the reason.
  void Park(const std::string& topic, const std::string& name,
            absl::Time deadline = absl::InfiniteFuture(),
            std::shared_ptr<Cancellation> cancellation = nullptr) {
    UnlockThenRun lock(&owner_);
    calls_.Park(
        topic, deadline,
        [this, name](Why why, AfterUnlock& then)
            ABSL_NO_THREAD_SAFETY_ANALYSIS {
              ++asked_[name];
              ++asked_in_hold_;
              if (why == Why::kWoken && ready_.count(name) == 0) return false;
              then.Add([this, name, why] {
                // The owner's lock is free: taking it here must not block.
                const bool owner_free = owner_.TryLock();
                if (owner_free) owner_.Unlock();
                absl::MutexLock lock(&results_mu_);
                ended_[name] = why;
                answered_on_[name] = std::this_thread::get_id();
                owner_free_[name] = owner_free;
              });
              return true;
            },
        cancellation, lock.then());
  }
  // Wakes `topic` (every topic if empty) as an owner does, with the
  // owner's lock held, after marking `ready` as settled.
  void Wake(const std::string& topic, const std::vector<std::string>& ready) {
    UnlockThenRun lock(&owner_);
    for (const std::string& name : ready) ready_[name] = true;
    if (topic.empty()) {
      calls_.WakeAll(lock.then());
    } else {
      calls_.Wake(topic, lock.then());
    }
  }
  void EndAll() {
    UnlockThenRun lock(&owner_);
    calls_.EndAll(lock.then());
  }
  // Whether `name` was answered on `thread` with the owner's lock free.
  bool AnsweredOutsideTheLockOn(const std::string& name,
                                std::thread::id thread) {
    absl::MutexLock lock(&results_mu_);
    return answered_on_[name] == thread && owner_free_[name];
  }
  // Waits until `name` ended; its reason.
  std::optional<Why> Ended(const std::string& name,
                           absl::Duration wait = absl::Seconds(30)) {
    absl::MutexLock lock(&results_mu_);
    auto done = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return ended_.count(name) > 0;
    };
    results_mu_.AwaitWithTimeout(absl::Condition(&done), wait);
    auto found = ended_.find(name);
    if (found == ended_.end()) return std::nullopt;
    return found->second;
  }
  size_t Parked() {
    absl::MutexLock lock(&owner_);
    return calls_.parked();
  }

  // Parks `count` calls on `topic`, named prefix0, prefix1, ...
  std::vector<std::string> ParkMany(const std::string& topic,
                                    const std::string& prefix, size_t count,
                                    absl::Time deadline) {
    std::vector<std::string> names;
    for (size_t i = 0; i < count; ++i) {
      names.push_back(prefix + std::to_string(i));
      Park(topic, names.back(), deadline);
    }
    return names;
  }
  // How many calls each hold ParkedCalls took of owner_ asked so far.
  std::vector<int> Holds() {
    absl::MutexLock lock(&owner_);
    return holds_;
  }

  absl::Mutex owner_;
  std::map<std::string, int> asked_;   // Under owner_.
  std::map<std::string, bool> ready_;  // Under owner_.
  int asked_in_hold_ = 0;              // Under owner_.
  std::vector<int> holds_;             // Under owner_.
  absl::Mutex results_mu_;
  std::map<std::string, Why> ended_;
  std::map<std::string, std::thread::id> answered_on_;
  std::map<std::string, bool> owner_free_;
  ParkedCalls calls_{&owner_,
                     [this](absl::Duration) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                       holds_.push_back(std::exchange(asked_in_hold_, 0));
                     }};
};

// Many wakes of one topic in one hold of the owner's lock (a thousand
// members removed at once) ask its calls once, not once per wake.
TEST_F(ParkedCallsTest, WakesOfATopicInOneHoldAskItsCallsOnce) {
  ParkMany("job", "w", 100, absl::InfiniteFuture());
  {
    UnlockThenRun lock(&owner_);
    for (int i = 0; i < 1000; ++i) calls_.Wake("job", lock.then());
  }
  absl::MutexLock lock(&owner_);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(asked_["w" + std::to_string(i)], 1) << "w" << i;
  }
  EXPECT_EQ(calls_.parked(), 100u);
}

TEST_F(ParkedCallsTest, AWakeAsksOnlyTheCallsOfItsTopic) {
  Park("job-a", "a1");
  Park("job-a", "a2");
  Park("job-b", "b1");
  Wake("job-a", {"a1"});
  // Answered by the waker before its Wake returned, not by another thread.
  EXPECT_EQ(Ended("a1", absl::ZeroDuration()), Why::kWoken);
  EXPECT_TRUE(AnsweredOutsideTheLockOn("a1", std::this_thread::get_id()));
  {
    absl::MutexLock lock(&owner_);
    EXPECT_EQ(asked_["a2"], 1);  // Asked, and it keeps waiting.
    EXPECT_EQ(asked_.count("b1"), 0u);
    EXPECT_EQ(calls_.parked(), 2u);
  }
  EndAll();
}

TEST_F(ParkedCallsTest, ACallEndsAtItsDeadline) {
  Park("job", "soon", absl::Now() + absl::Milliseconds(50));
  Park("job", "later");
  EXPECT_EQ(Ended("soon"), Why::kDeadline);
  EXPECT_EQ(Parked(), 1u);
  {
    absl::MutexLock lock(&results_mu_);
    EXPECT_TRUE(owner_free_["soon"]);  // The timer answers after unlocking.
    EXPECT_NE(answered_on_["soon"], std::this_thread::get_id());
  }
  EndAll();
}

TEST_F(ParkedCallsTest, CancelEndsThatCallOnceAndLaterCancelsDoNothing) {
  auto cancellation = std::make_shared<Cancellation>();
  Park("job", "cancelled", absl::InfiniteFuture(), cancellation);
  Park("job", "other");
  EXPECT_EQ(Parked(), 2u);
  cancellation->Cancel();
  // The cancelling thread answers, before Cancel returns.
  EXPECT_EQ(Ended("cancelled", absl::ZeroDuration()), Why::kCancelled);
  EXPECT_TRUE(
      AnsweredOutsideTheLockOn("cancelled", std::this_thread::get_id()));
  cancellation->Cancel();
  EXPECT_EQ(Parked(), 1u);
  {
    absl::MutexLock lock(&owner_);
    EXPECT_EQ(asked_["cancelled"], 1);
  }
  EndAll();
}

TEST_F(ParkedCallsTest, ACallWhoseClientLeftBeforeItParkedEndsAtOnce) {
  auto cancellation = std::make_shared<Cancellation>();
  cancellation->Cancel();
  Park("job", "gone", absl::InfiniteFuture(), cancellation);
  EXPECT_EQ(Ended("gone", absl::ZeroDuration()), Why::kCancelled);
  EXPECT_EQ(Parked(), 0u);
  EndAll();
}

TEST_F(ParkedCallsTest, EndAllEndsEveryCall) {
  Park("job-a", "a");
  Park("job-b", "b");
  EndAll();
  EXPECT_EQ(Parked(), 0u);
  EXPECT_EQ(Ended("a", absl::ZeroDuration()), Why::kEnded);
  EXPECT_EQ(Ended("b", absl::ZeroDuration()), Why::kEnded);
}

TEST_F(ParkedCallsTest, WakeAllAsksEveryTopic) {
  Park("job-a", "a");
  Park("job-b", "b");
  Wake("", {"a", "b"});
  EXPECT_EQ(Ended("a", absl::ZeroDuration()), Why::kWoken);
  EXPECT_EQ(Ended("b", absl::ZeroDuration()), Why::kWoken);
}

TEST_F(ParkedCallsTest, AWakeDecidesAfterTheWakerUnlocksABatchPerHold) {
  const size_t count = 2 * ParkedCalls::kBatch + 10;
  const std::vector<std::string> names =
      ParkMany("job", "c", count, absl::InfiniteFuture());
  {
    UnlockThenRun lock(&owner_);
    for (const std::string& name : names) ready_[name] = true;
    calls_.Wake("job", lock.then());
    // Nothing is decided in the waker's own hold, however many are woken.
    EXPECT_TRUE(asked_.empty());
  }
  // Decided before the waker's unlock returned, on its thread, each batch
  // in a hold of its own.
  EXPECT_EQ(Parked(), 0u);
  for (const std::string& name : {names.front(), names.back()}) {
    EXPECT_TRUE(AnsweredOutsideTheLockOn(name, std::this_thread::get_id()));
  }
  const int batch = ParkedCalls::kBatch;
  EXPECT_EQ(Holds(), (std::vector<int>{batch, batch, 10}));
}

TEST_F(ParkedCallsTest, TheTimerEndsDueCallsABatchPerHold) {
  const size_t count = ParkedCalls::kBatch + 5;
  const std::vector<std::string> names =
      ParkMany("job", "due", count, absl::Now() + absl::Milliseconds(200));
  for (const std::string& name : names) {
    EXPECT_EQ(Ended(name), Why::kDeadline);
  }
  const std::vector<int> holds = Holds();
  EXPECT_EQ(std::accumulate(holds.begin(), holds.end(), 0u), count);
  EXPECT_LE(*std::max_element(holds.begin(), holds.end()),
            static_cast<int>(ParkedCalls::kBatch));
}

}  // namespace
}  // namespace shard::server

// ParkedCalls: a wake asks only its topic's calls, deadlines, cancellation
// and shutdown each end a call exactly once with their reason, and the
// answers run on the thread that ended the wait, after it let go of the
// owner's lock.
#include "server/parked_calls.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
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

  absl::Mutex owner_;
  std::map<std::string, int> asked_;   // Under owner_.
  std::map<std::string, bool> ready_;  // Under owner_.
  absl::Mutex results_mu_;
  std::map<std::string, Why> ended_;
  std::map<std::string, std::thread::id> answered_on_;
  std::map<std::string, bool> owner_free_;
  ParkedCalls calls_{&owner_};
};

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

}  // namespace
}  // namespace shard::server

// ParkedCalls: a wake asks only its topic's calls, deadlines, cancellation
// and shutdown each end a call exactly once with their reason, and the
// completions run on the pool.
#include "server/parked_calls.h"

#include <map>
#include <memory>
#include <optional>
#include <string>

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
    absl::MutexLock lock(&owner_);
    calls_.Park(
        topic, deadline,
        [this, name](Why why) ABSL_NO_THREAD_SAFETY_ANALYSIS
        -> std::optional<ParkedCalls::Completion> {
          ++asked_[name];
          if (why == Why::kWoken && ready_.count(name) == 0) {
            return std::nullopt;
          }
          return [this, name, why] {
            absl::MutexLock lock(&results_mu_);
            ended_[name] = why;
          };
        },
        cancellation);
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
  ParkedCalls calls_{&owner_, 2};
};

TEST_F(ParkedCallsTest, AWakeAsksOnlyTheCallsOfItsTopic) {
  Park("job-a", "a1");
  Park("job-a", "a2");
  Park("job-b", "b1");
  {
    absl::MutexLock lock(&owner_);
    ready_["a1"] = true;
    calls_.Wake("job-a");
  }
  EXPECT_EQ(Ended("a1"), Why::kWoken);
  absl::MutexLock lock(&owner_);
  EXPECT_EQ(asked_["a2"], 1);  // Asked, and it keeps waiting.
  EXPECT_EQ(asked_.count("b1"), 0u);
  EXPECT_EQ(calls_.parked(), 2u);
  calls_.EndAll();
}

TEST_F(ParkedCallsTest, ACallEndsAtItsDeadline) {
  Park("job", "soon", absl::Now() + absl::Milliseconds(50));
  Park("job", "later");
  EXPECT_EQ(Ended("soon"), Why::kDeadline);
  EXPECT_EQ(Parked(), 1u);
  absl::MutexLock lock(&owner_);
  calls_.EndAll();
}

TEST_F(ParkedCallsTest, CancelEndsThatCallOnceAndLaterCancelsDoNothing) {
  auto cancellation = std::make_shared<Cancellation>();
  Park("job", "cancelled", absl::InfiniteFuture(), cancellation);
  Park("job", "other");
  EXPECT_EQ(Parked(), 2u);
  cancellation->Cancel();
  EXPECT_EQ(Ended("cancelled"), Why::kCancelled);
  cancellation->Cancel();
  EXPECT_EQ(Parked(), 1u);
  absl::MutexLock lock(&owner_);
  EXPECT_EQ(asked_["cancelled"], 1);
  calls_.EndAll();
}

TEST_F(ParkedCallsTest, ACallWhoseClientLeftBeforeItParkedEndsAtOnce) {
  auto cancellation = std::make_shared<Cancellation>();
  cancellation->Cancel();
  Park("job", "gone", absl::InfiniteFuture(), cancellation);
  EXPECT_EQ(Ended("gone"), Why::kCancelled);
  EXPECT_EQ(Parked(), 0u);
  absl::MutexLock lock(&owner_);
  calls_.EndAll();
}

TEST_F(ParkedCallsTest, EndAllEndsEveryCall) {
  Park("job-a", "a");
  Park("job-b", "b");
  {
    absl::MutexLock lock(&owner_);
    calls_.EndAll();
    EXPECT_EQ(calls_.parked(), 0u);
  }
  EXPECT_EQ(Ended("a"), Why::kEnded);
  EXPECT_EQ(Ended("b"), Why::kEnded);
}

TEST_F(ParkedCallsTest, WakeAllAsksEveryTopic) {
  Park("job-a", "a");
  Park("job-b", "b");
  {
    absl::MutexLock lock(&owner_);
    ready_["a"] = ready_["b"] = true;
    calls_.WakeAll();
  }
  EXPECT_EQ(Ended("a"), Why::kWoken);
  EXPECT_EQ(Ended("b"), Why::kWoken);
}

}  // namespace
}  // namespace shard::server

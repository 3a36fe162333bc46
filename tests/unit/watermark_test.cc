// sync::Watermark, the one mechanism for waiting on progress another thread
// makes: each callback runs exactly once, when its value is reached (on the
// raiser's thread, outside the watermark's lock) or with the break's error.
#include "common/sync/watermark.h"

#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace shard::sync {
namespace {

TEST(WatermarkTest, ACallbackRunsOnceItsValueIsReachedAndNotBefore) {
  Watermark mark(5);
  std::vector<uint64_t> woken;
  mark.WhenReached(5, [&](absl::Status s) {  // Reached already: at once.
    EXPECT_TRUE(s.ok());
    woken.push_back(5);
  });
  EXPECT_EQ(woken, std::vector<uint64_t>{5});
  for (uint64_t value : {9, 7, 12}) {
    mark.WhenReached(value, [&woken, value](absl::Status s) {
      EXPECT_TRUE(s.ok());
      woken.push_back(value);
    });
  }
  mark.Advance(6);
  EXPECT_EQ(woken.size(), 1u);
  mark.Advance(9);  // 7 and 9, lowest first.
  EXPECT_EQ(woken, (std::vector<uint64_t>{5, 7, 9}));
  mark.Advance(8);  // Lower: changes nothing.
  EXPECT_EQ(mark.reached(), 9u);
  mark.Advance(12);
  EXPECT_EQ(woken, (std::vector<uint64_t>{5, 7, 9, 12}));
  mark.Advance(100);  // Nothing left to run twice.
  EXPECT_EQ(woken.size(), 4u);
}

TEST(WatermarkTest, TheRaiserRunsTheCallbacksOutsideTheLock) {
  Watermark mark;
  std::thread::id ran_on;
  mark.WhenReached(3, [&](absl::Status) {
    ran_on = std::this_thread::get_id();
    // Re-entering would deadlock if the raiser still held the lock.
    mark.WhenReached(1, [](absl::Status) {});
    EXPECT_EQ(mark.reached(), 3u);
  });
  std::thread raiser([&] { mark.Advance(3); });
  const std::thread::id raiser_id = raiser.get_id();
  raiser.join();
  EXPECT_EQ(ran_on, raiser_id);
}

TEST(WatermarkTest, ABreakTellsEveryWaiterAndEveryLaterOneItsFirstError) {
  Watermark mark;
  mark.Advance(10);
  absl::Status waiting, later, reached_before;
  mark.WhenReached(20, [&](absl::Status s) { waiting = s; });
  mark.Break(absl::UnavailableError("disk full"));
  EXPECT_EQ(waiting, absl::UnavailableError("disk full"));
  mark.Break(absl::UnavailableError("closed"));  // The cause is kept.
  mark.WhenReached(30, [&](absl::Status s) { later = s; });
  EXPECT_EQ(later, absl::UnavailableError("disk full"));
  mark.WhenReached(10, [&](absl::Status s) { reached_before = s; });
  EXPECT_TRUE(reached_before.ok());
  EXPECT_EQ(mark.AwaitReached(11, absl::InfiniteFuture()),
            absl::UnavailableError("disk full"));
}

TEST(WatermarkTest, AwaitReachedEndsWhenReachedOrAtItsDeadline) {
  Watermark mark;
  EXPECT_EQ(mark.AwaitReached(1, absl::Now() + absl::Milliseconds(20)).code(),
            absl::StatusCode::kDeadlineExceeded);
  absl::Notification waiting;
  std::thread raiser([&] {
    waiting.WaitForNotification();
    mark.Advance(2);
  });
  waiting.Notify();
  EXPECT_TRUE(mark.AwaitReached(2, absl::InfiniteFuture()).ok());
  raiser.join();
  // The timed-out wait's callback ran when 1 was reached, after its waiter
  // had returned: nothing dangles.
  EXPECT_TRUE(mark.AwaitReached(1, absl::InfinitePast()).ok());
}

}  // namespace
}  // namespace shard::sync

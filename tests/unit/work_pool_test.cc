// WorkPool: every task runs exactly once, in order on one thread, and the
// destructor runs what was queued before it joins.
#include "server/runtime/work_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace shard::server {
namespace {

TEST(WorkPoolTest, OneThreadRunsTasksInTheOrderTheyWereQueued) {
  std::vector<int> order;
  absl::Mutex mu;
  {
    WorkPool pool(1);
    for (int i = 0; i < 100; ++i) {
      pool.Schedule([&, i] {
        absl::MutexLock lock(&mu);
        order.push_back(i);
      });
    }
  }
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

int ThisThreadsNice() {
  return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
}

// Epoch orders' rests run on such a pool, so that they yield the CPU to
// the threads serving calls.
TEST(WorkPoolTest, ANicePoolsThreadsRunAtALowerPriority) {
  const int base = ThisThreadsNice();
  int seen = base;
  {
    WorkPool pool(1, /*nice=*/10);
    pool.Schedule([&] { seen = ThisThreadsNice(); });
  }
  EXPECT_EQ(seen, std::min(base + 10, 19));
  EXPECT_EQ(ThisThreadsNice(), base) << "the caller's priority changed";
}

TEST(WorkPoolTest, TheDestructorRunsEveryQueuedTaskOnce) {
  std::atomic<int> runs{0};
  absl::Notification release;
  {
    WorkPool pool(2);
    // Both threads block until the pool is being destroyed, so the other
    // tasks are still queued when the destructor starts.
    for (int i = 0; i < 2; ++i) {
      pool.Schedule([&] { release.WaitForNotification(); });
    }
    for (int i = 0; i < 1000; ++i) pool.Schedule([&] { ++runs; });
    release.Notify();
  }
  EXPECT_EQ(runs.load(), 1000);
}

TEST(WorkPoolTest, TasksRunConcurrentlyOnSeveralThreads) {
  absl::Mutex mu;
  int running = 0;
  absl::Notification all_running;
  WorkPool pool(3);  // Destroyed first: its tasks use the locals above.
  for (int i = 0; i < 3; ++i) {
    pool.Schedule([&] {
      absl::MutexLock lock(&mu);
      if (++running == 3) all_running.Notify();
      // Each task holds its thread until all three run at once.
      mu.Await(absl::Condition(
          +[](int* n) { return *n == 3; }, &running));
    });
  }
  EXPECT_TRUE(all_running.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST(WorkPoolTest, MoveOnlyTasksAreAccepted) {
  auto value = std::make_unique<int>(7);
  std::atomic<int> seen{0};
  {
    WorkPool pool(1);
    pool.Schedule([value = std::move(value), &seen] { seen = *value; });
  }
  EXPECT_EQ(seen.load(), 7);
}

}  // namespace
}  // namespace shard::server

#include "server/plans/epoch_order_cache.h"

#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/plan/spec/job_spec.h"
#include "gtest/gtest.h"
#include "tests/support/work_scale.h"

namespace shard::server {
namespace {

shard::v1::JobSpec ShuffledSpec(uint64_t n) {
  shard::v1::JobSpec spec;
  spec.set_dataset_size(n);
  spec.set_world_size(4);
  spec.set_shuffle(true);
  spec.set_torch_randperm(shard::v1::TORCH_RANDPERM_LEGACY);
  return spec;
}

// A liveness bound for a Get, not a timing check: under AddressSanitizer
// on 2 shared cores a 20,000,000-sample shuffle next to another test's took
// longer than 30 s.
absl::Time Soon() { return absl::Now() + absl::Minutes(5); }

const JobIncarnation kJob{"j", 1};

TEST(EpochOrderCacheTest, ConcurrentCallersShareOneOrder) {
  EpochOrderCache cache;
  const shard::v1::JobSpec spec = ShuffledSpec(200000);
  std::vector<std::shared_ptr<const plan::EpochOrder>> got(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back(
        [&, i] { got[i] = *cache.Get(kJob, spec, 3, Soon()); });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& order : got) EXPECT_EQ(order.get(), got[0].get());
  EXPECT_EQ(got[0]->MemoryBytes(), 200000u * 4);
}

TEST(EpochOrderCacheTest, PreparesTheNextEpochInTheBackground) {
  EpochOrderCache cache;
  const shard::v1::JobSpec spec = ShuffledSpec(1000);
  ASSERT_TRUE(cache.Get(kJob, spec, 0, Soon()).ok());
  // Bounded wait for the prefetch thread to publish epoch 1.
  for (int i = 0; i < 500 && cache.size() < 2; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(cache.size(), 2u);
}

TEST(EpochOrderCacheTest, DropsEpochsOlderThanThePreviousOne) {
  EpochOrderCache cache;
  cache.Stop();  // No prefetch: the cache holds exactly what was asked.
  const shard::v1::JobSpec spec = ShuffledSpec(100);
  auto epoch0 = *cache.Get(kJob, spec, 0, Soon());
  ASSERT_TRUE(cache.Get(kJob, spec, 1, Soon()).ok());
  EXPECT_EQ(cache.size(), 2u);
  ASSERT_TRUE(cache.Get(kJob, spec, 2, Soon()).ok());
  EXPECT_EQ(cache.size(), 2u);      // Epochs 1 and 2.
  EXPECT_EQ(epoch0->size(), 100u);  // Still readable by its holder.
  cache.Forget(kJob.incarnation);
  EXPECT_EQ(cache.size(), 0u);
}

// Waits (bounded) until the cache holds `n` orders.
void AwaitSize(const EpochOrderCache& cache, size_t n) {
  for (int i = 0; i < 500 && cache.size() != n; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
}

TEST(EpochOrderCacheTest, HoldsAtMostThePreviousTheCurrentAndTheNextOrder) {
  EpochOrderCache cache;
  const shard::v1::JobSpec spec = ShuffledSpec(1000);
  ASSERT_TRUE(cache.Get(kJob, spec, 0, Soon()).ok());
  AwaitSize(cache, 2);  // 0 and the prepared 1.
  ASSERT_EQ(cache.size(), 2u);
  // The first rank reaches epoch 1 while epoch 0 may still be read (or
  // re-opened): epoch 0 stays, and epoch 2 is prepared for the next turn,
  // so a trainer that never commits still finds every epoch ready.
  ASSERT_TRUE(cache.Get(kJob, spec, 1, Soon()).ok());
  AwaitSize(cache, 3);
  EXPECT_EQ(cache.size(), 3u);
  // Epoch 2: epoch 0 goes, epoch 3 is prepared.
  ASSERT_TRUE(cache.Get(kJob, spec, 2, Soon()).ok());
  AwaitSize(cache, 3);
  EXPECT_EQ(cache.size(), 3u);
  // A commit reached epoch 3: everything before goes, 4 is prepared.
  cache.ReleaseBefore(kJob, spec, 3);
  AwaitSize(cache, 2);
  EXPECT_EQ(cache.size(), 2u);
}

// A large preparation's rest queues behind the fronts of later ones, but a
// small order prepared after it is finished at once: a stream of a small
// job never waits for a large job's shuffle.
TEST(EpochOrderCacheTest, ASmallPreparationDoesNotWaitForALargeOnesRest) {
  EpochOrderCache cache;
  const uint64_t size = testing::LargeOrderSize(50000000);  // About 0.5 s.
  const shard::v1::JobSpec large = ShuffledSpec(size);
  cache.Prepare({"large", 1}, large, 0);
  cache.Prepare({"small", 2}, ShuffledSpec(1000), 0);
  AwaitSize(cache, 2);  // Both started.
  ASSERT_TRUE(cache.Get({"small", 2}, ShuffledSpec(1000), 0, Soon()).ok());
  absl::Notification published;
  uint64_t large_final = 0;
  cache.WhenReady(cache.ClaimOrder({"large", 1}, large, 0),
                  [&](absl::StatusOr<EpochOrderCache::Order> order) {
                    ASSERT_TRUE(order.ok());
                    large_final = (*order)->FinalPrefix();
                    published.Notify();
                  });
  published.WaitForNotification();
  EXPECT_LT(large_final, size) << "the small order waited for the "
                                  "large one's shuffle";
}

// The order a claim publishes, once allocated (its shuffle may go on).
EpochOrderCache::Order ClaimedOrder(EpochOrderCache& cache,
                                    const JobIncarnation& job,
                                    const shard::v1::JobSpec& spec) {
  absl::Notification published;
  EpochOrderCache::Order order;
  cache.WhenReady(cache.ClaimOrder(job, spec, 0),
                  [&](absl::StatusOr<EpochOrderCache::Order> outcome) {
                    ASSERT_TRUE(outcome.ok()) << outcome.status();
                    order = *outcome;
                    published.Notify();
                  });
  published.WaitForNotification();
  return order;
}

// After a restart every job's trainers claim at once: a front claimed while
// every compute thread shuffles another order's rest does not wait for it.
TEST(EpochOrderCacheTest, AClaimedFrontDoesNotWaitForARunningRest) {
  EpochOrderCache cache(/*compute_threads=*/1);
  const uint64_t size = testing::LargeOrderSize(50000000);  // About 0.5 s.
  const shard::v1::JobSpec large = ShuffledSpec(size);
  EpochOrderCache::Order first = ClaimedOrder(cache, {"first", 1}, large);
  // Past its front (131,072 entries): its rest has the only compute thread.
  ASSERT_TRUE(first->progress()->AwaitFinal(1 << 18, Soon()).ok());
  EpochOrderCache::Order second = ClaimedOrder(cache, {"second", 2}, large);
  ASSERT_TRUE(second->progress()->AwaitFinal(0, Soon()).ok());
  EXPECT_LT(first->FinalPrefix(), size)
      << "the second order's front waited for the first one's rest";
}

TEST(EpochOrderCacheTest, IdentityOrderIsNotCached) {
  EpochOrderCache cache;
  shard::v1::JobSpec spec = ShuffledSpec(100);
  spec.set_shuffle(false);
  auto order = *cache.Get(kJob, spec, 0, Soon());
  EXPECT_EQ(order->At(42), 42u);
  EXPECT_EQ(cache.size(), 0u);
}

// A job deleted and re-created under the same id is another incarnation:
// it gets its own orders, never the deleted job's.
TEST(EpochOrderCacheTest, ReCreatedJobNeverSeesTheDeletedJobsOrder) {
  EpochOrderCache cache;
  shard::v1::JobSpec old_spec = ShuffledSpec(100000);
  shard::v1::JobSpec new_spec = ShuffledSpec(1000);
  new_spec.set_seed(7);
  auto old_order = *cache.Get({"x", 1}, old_spec, 1, Soon());
  cache.Forget(1);
  auto new_order = *cache.Get({"x", 2}, new_spec, 1, Soon());
  EXPECT_EQ(new_order->size(), 1000u);
  EXPECT_EQ(old_order->size(), 100000u);
  for (uint64_t i = 0; i < new_order->size(); ++i) {
    ASSERT_LT(new_order->At(i), 1000u);
  }
}

// Forget() also drops the deleted job's queued preparations: none of them
// fills a slot afterwards. The prefetch thread is kept busy with a large
// order so that the small job's preparation is still queued when it is
// forgotten.
TEST(EpochOrderCacheTest, ForgetDropsQueuedPreparations) {
  EpochOrderCache cache;
  const shard::v1::JobSpec large =
      ShuffledSpec(testing::LargeOrderSize(20000000));
  ASSERT_TRUE(cache.Get({"large", 1}, large, 0, Soon()).ok());
  ASSERT_TRUE(cache.Get({"x", 2}, ShuffledSpec(1000), 0, Soon()).ok());
  cache.Forget(2);
  // Bounded wait until the large job's next epoch is prepared and the queue
  // is empty; then only the large job's two orders may be cached.
  for (int i = 0; i < 3000 && (cache.size() != 2 || cache.queued() != 0); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(cache.queued(), 0u);
  EXPECT_EQ(cache.size(), 2u);
}

// Stop() does not wait for a large shuffle in progress (seconds for 10^8
// entries): the computation is abandoned, never published, and its memory
// given back.
TEST(EpochOrderCacheTest, StopAbandonsAnOrderBeingComputed) {
  EpochOrderCache cache;
  cache.Prepare({"large", 1}, ShuffledSpec(100000000), 0);
  // The preparation reserves its memory before it computes.
  for (int i = 0; i < 3000 && cache.bytes() == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_GT(cache.bytes(), 0u);
  cache.Stop();
  EXPECT_EQ(cache.computations_cancelled(), 1u);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
}

// The memory budget. Orders of 250,000 entries take 1,000,000 bytes; the
// budget holds two of them.
constexpr uint64_t kOrderBytes = 250000 * 4;
const shard::v1::JobSpec kBudgetSpec = ShuffledSpec(250000);
// The last epoch has no next one, so no preparation competes for memory.
constexpr uint64_t kLast = plan::kMaxEpoch;

TEST(EpochOrderBudgetTest, AnIdleOrderIsEvictedLeastRecentlyUsedFirst) {
  EpochOrderCache cache(2, 2 * kOrderBytes + 1000);
  ASSERT_TRUE(cache.Get({"a", 1}, kBudgetSpec, kLast, Soon()).ok());
  ASSERT_TRUE(cache.Get({"b", 2}, kBudgetSpec, kLast, Soon()).ok());
  ASSERT_TRUE(
      cache.Get({"a", 1}, kBudgetSpec, kLast, Soon()).ok());  // a: recent
  // Nobody holds a or b now; c needs room: b (least recently used) goes.
  ASSERT_TRUE(cache.Get({"c", 3}, kBudgetSpec, kLast, Soon()).ok());
  EXPECT_EQ(cache.evictions(), 1u);
  EXPECT_LE(cache.bytes(), cache.budget_bytes());
  const uint64_t evicted = cache.evictions();
  ASSERT_TRUE(cache.Get({"a", 1}, kBudgetSpec, kLast, Soon()).ok());
  EXPECT_EQ(cache.evictions(), evicted);  // a was still cached
}

TEST(EpochOrderBudgetTest, OrdersInUseAreNeverEvictedAClaimWaitsThenFails) {
  EpochOrderCache cache(2, 2 * kOrderBytes + 1000);
  auto a = cache.Get({"a", 1}, kBudgetSpec, kLast, Soon());
  auto b = cache.Get({"b", 2}, kBudgetSpec, kLast, Soon());
  ASSERT_TRUE(a.ok() && b.ok());
  const absl::Time began = absl::Now();
  auto c = cache.Get({"c", 3}, kBudgetSpec, kLast,
                     absl::Now() + absl::Milliseconds(300));
  EXPECT_GE(absl::Now() - began, absl::Milliseconds(250));  // it waited
  ASSERT_TRUE(absl::IsResourceExhausted(c.status())) << c.status();
  EXPECT_NE(c.status().message().find("--order-cache-bytes"),
            std::string::npos);
  EXPECT_EQ(cache.evictions(), 0u);
  EXPECT_EQ((*a)->size(), 250000u);  // still intact
  EXPECT_LE(cache.bytes(), cache.budget_bytes());
}

TEST(EpochOrderBudgetTest, AWaitingClaimProceedsWhenAStreamLetsGo) {
  EpochOrderCache cache(2, 2 * kOrderBytes + 1000);
  auto a = cache.Get({"a", 1}, kBudgetSpec, kLast, Soon());
  auto b = cache.Get({"b", 2}, kBudgetSpec, kLast, Soon());
  ASSERT_TRUE(a.ok() && b.ok());
  // Blocking claim.
  std::thread release([&] {
    absl::SleepFor(absl::Milliseconds(200));
    a->reset();  // The only other holder: a becomes idle, hence evictable.
  });
  auto c = cache.Get({"c", 3}, kBudgetSpec, kLast, Soon());
  release.join();
  ASSERT_TRUE(c.ok()) << c.status();
  // Callback claim (the stream path): answered once b is let go.
  absl::Notification answered;
  absl::StatusOr<EpochOrderCache::Order> got;
  cache.WhenReady(cache.ClaimOrder({"d", 4}, kBudgetSpec, kLast),
                  [&](absl::StatusOr<EpochOrderCache::Order> order) {
                    got = std::move(order);
                    answered.Notify();
                  });
  EXPECT_FALSE(
      answered.WaitForNotificationWithTimeout(absl::Milliseconds(200)));
  b->reset();
  ASSERT_TRUE(answered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->size(), 250000u);
  EXPECT_LE(cache.bytes(), cache.budget_bytes());
}

TEST(EpochOrderBudgetTest, ACallbackClaimFailsAtItsDeadline) {
  EpochOrderCache cache(2, kOrderBytes + 1000);
  auto a = cache.Get({"a", 1}, kBudgetSpec, kLast, Soon());
  ASSERT_TRUE(a.ok());
  absl::Notification answered;
  absl::Status status;
  cache.WhenReady(
      cache.ClaimOrder({"b", 2}, kBudgetSpec, kLast),
      [&](absl::StatusOr<EpochOrderCache::Order> order) {
        status = order.status();
        answered.Notify();
      },
      absl::Now() + absl::Milliseconds(100));
  ASSERT_TRUE(answered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(absl::IsResourceExhausted(status)) << status;
}

TEST(EpochOrderBudgetTest, PreparationsNeverExceedTheBudget) {
  // Room for one order: the next epoch's preparation must not be computed
  // while the current order is in use.
  EpochOrderCache cache(2, kOrderBytes + 1000);
  auto current = cache.Get({"a", 1}, kBudgetSpec, kLast, Soon());
  ASSERT_TRUE(current.ok());
  cache.Prepare({"b", 2}, kBudgetSpec, 0);
  for (int i = 0; i < 100 && cache.queued() > 0; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.bytes(), kOrderBytes);
}

TEST(EpochOrderBudgetTest, AnOrderLargerThanTheBudgetFailsAtOnce) {
  EpochOrderCache cache(2, kOrderBytes / 2);
  const absl::Time began = absl::Now();
  auto order = cache.Get({"a", 1}, kBudgetSpec, kLast, Soon());
  EXPECT_TRUE(absl::IsResourceExhausted(order.status())) << order.status();
  EXPECT_LT(absl::Now() - began, absl::Seconds(5));
}

}  // namespace
}  // namespace shard::server

#include "server/epoch_order_cache.h"

#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

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

absl::Time Soon() { return absl::Now() + absl::Seconds(30); }

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

TEST(EpochOrderCacheTest, HoldsAtMostTheCurrentAndTheNextOrder) {
  EpochOrderCache cache;
  const shard::v1::JobSpec spec = ShuffledSpec(1000);
  ASSERT_TRUE(cache.Get(kJob, spec, 0, Soon()).ok());
  AwaitSize(cache, 2);  // 0 and the prepared 1.
  ASSERT_EQ(cache.size(), 2u);
  // The first rank reaches epoch 1 while epoch 0 may still be read: no
  // third order is prepared.
  ASSERT_TRUE(cache.Get(kJob, spec, 1, Soon()).ok());
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(cache.size(), 2u);
  // A commit reached epoch 1: epoch 0 goes, epoch 2 is prepared.
  cache.ReleaseBefore(kJob, spec, 1);
  AwaitSize(cache, 2);
  EXPECT_EQ(cache.size(), 2u);
  cache.Stop();
  ASSERT_TRUE(cache.Get(kJob, spec, 2, Soon()).ok());
  EXPECT_EQ(cache.size(), 2u);  // Epochs 1 and 2.
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
  const shard::v1::JobSpec large = ShuffledSpec(20000000);
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

}  // namespace
}  // namespace shard::server

// Orders are ready before anyone asks: creating a job computes its epoch-0
// order in the background, and so does recovering a job that has members
// (where they continue); a recovered job without members is left alone.
#include <cstdlib>
#include <string>

#include "absl/time/clock.h"
#include "common/storage/file_system.h"
#include "gtest/gtest.h"
#include "server/storage/state_log.h"
#include "tests/support/blocking_coordinator.h"

namespace shard::server {
namespace {

// 2,000,000 shuffled indices: an order above the inline size, 8 MB.
shard::v1::CreateJobRequest LargeJob(const std::string& id) {
  shard::v1::CreateJobRequest request;
  request.set_job_id(id);
  request.mutable_spec()->set_dataset_size(2000000);
  request.mutable_spec()->set_world_size(1);
  return request;
}

// Waits (bounded) until the service holds `count` orders.
bool WaitForOrders(testing::BlockingCoordinator& service, size_t count) {
  for (int i = 0; i < 1000 && service.Figures().cached_orders != count; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  return service.Figures().cached_orders == count;
}

TEST(OrderPreparationTest, CreatingAJobComputesEpochZeroBeforeAnyStream) {
  testing::BlockingCoordinator service;
  EXPECT_EQ(service.Figures().cached_orders, 0u);
  ASSERT_TRUE(service.CreateJob(LargeJob("job")).ok());
  EXPECT_TRUE(WaitForOrders(service, 1)) << service.Figures().cached_orders;
}

TEST(OrderPreparationTest, RecoveryPreparesOnlyJobsWithMembers) {
  char pattern[] = "/tmp/order-preparation-test-XXXXXX";
  const std::string dir = mkdtemp(pattern);
  {
    auto opened = storage::StateLog::Open(storage::PosixFileSystem(), dir);
    ASSERT_TRUE(opened.ok()) << opened.status();
    testing::BlockingCoordinator service({}, *std::move(opened));
    ASSERT_TRUE(service.CreateJob(LargeJob("trained")).ok());
    ASSERT_TRUE(service.CreateJob(LargeJob("idle")).ok());
    shard::v1::JoinJobRequest join;
    join.set_job_id("trained");
    join.set_member_id("m");
    ASSERT_TRUE(service.JoinJob(join, absl::InfiniteFuture()).ok());
  }
  auto reopened = storage::StateLog::Open(storage::PosixFileSystem(), dir);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  testing::BlockingCoordinator recovered({}, *std::move(reopened));
  EXPECT_TRUE(WaitForOrders(recovered, 1)) << recovered.Figures().cached_orders;
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(recovered.Figures().cached_orders, 1u);  // not the idle job's
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace shard::server

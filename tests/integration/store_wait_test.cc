// Store waits last as long as the caller asked, although the coordinator
// cuts each call's wait at its --max-wait: the client repeats the call
// until its own wait is spent.
#include <optional>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/support/test_cluster.h"

namespace shard {
namespace {

server::CoordinatorOptions ShortMaxWait() {
  server::CoordinatorOptions options;
  options.max_wait = absl::Seconds(1);
  return options;
}

class StoreWaitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = cluster_.NewClient();
    shard::v1::JobSpec spec;
    spec.set_dataset_size(10);
    spec.set_world_size(1);
    absl::StatusOr<client::Membership> joined =
        client_->Join("job", "solo", spec, absl::Seconds(10));
    ASSERT_TRUE(joined.ok()) << joined.status();
    membership_ = *joined;
  }

  // Sets `key` after `delay` on another thread.
  std::thread SetLater(const std::string& key, absl::Duration delay) {
    return std::thread([this, key, delay] {
      absl::SleepFor(delay);
      EXPECT_TRUE(client_->StoreSet(membership_, key, "v").ok());
    });
  }

  testing::TestCluster cluster_{ShortMaxWait()};
  std::shared_ptr<client::CoordinatorClient> client_;
  client::Membership membership_;
};

TEST_F(StoreWaitTest, GetWaitsPastTheServersMaxWait) {
  std::thread setter = SetLater("late", absl::Milliseconds(2500));
  absl::StatusOr<std::optional<std::string>> got =
      client_->StoreGet(membership_, "late", absl::Seconds(30));
  setter.join();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value()) << "gave up at the server's max_wait";
  EXPECT_EQ(**got, "v");
}

TEST_F(StoreWaitTest, WaitWaitsPastTheServersMaxWait) {
  std::thread setter = SetLater("late", absl::Milliseconds(2500));
  absl::StatusOr<bool> ready =
      client_->StoreWait(membership_, {"late"}, absl::Seconds(30));
  setter.join();
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_TRUE(*ready) << "gave up at the server's max_wait";
}

TEST_F(StoreWaitTest, AMissingKeyIsReportedAfterTheCallersWholeWait) {
  const absl::Time began = absl::Now();
  absl::StatusOr<std::optional<std::string>> got =
      client_->StoreGet(membership_, "never", absl::Milliseconds(2500));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->has_value());
  // Not cut short at the server's 1 s.
  EXPECT_GE(absl::Now() - began, absl::Milliseconds(2500));
}

}  // namespace
}  // namespace shard

// EtcdFollower against a real etcd: a standby that recovered part of the
// history and watched the rest holds the leader's state byte for byte.
#include "server/replication/etcd_follower.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/replication/etcd_test_base.h"
#include "tests/support/durable_append.h"
#include "tests/support/state_updates.h"

namespace shard::server::replication {
namespace {

using shard::testing::Created;
using shard::testing::Joined;
using shard::testing::NormalSpec;

class EtcdFollowerTest : public EtcdTestBase {};

TEST_F(EtcdFollowerTest, AStandbyHoldsTheLeadersStateByteForByte) {
  std::unique_ptr<EtcdSession> leader = Session();
  std::unique_ptr<EtcdSession> standby = Session();
  ASSERT_TRUE(leader && standby);
  absl::StatusOr<EtcdSession::Leadership> led = leader->Campaign("replica-a");
  ASSERT_TRUE(led.ok()) << led.status();
  EtcdStateStore store(leader.get(), *led, {}, {});
  CoordinatorState leader_state;
  uint64_t last = 0;
  auto append = [&](const shard::state::v1::StateUpdate& update) {
    ASSERT_TRUE(leader_state.Apply(update).ok());
    absl::StatusOr<uint64_t> sequence = store.Enqueue(update);
    ASSERT_TRUE(sequence.ok()) << sequence.status();
    last = *sequence;
  };
  // Part of the history before the standby starts (it recovers it) ...
  for (int j = 0; j < 20; ++j) {
    append(Created(absl::StrCat("job", j), NormalSpec(100, 2)));
  }
  ASSERT_TRUE(testing::AwaitDurable(store, last).ok());
  absl::StatusOr<std::unique_ptr<EtcdFollower>> follower =
      EtcdFollower::Start(standby.get());
  ASSERT_TRUE(follower.ok()) << follower.status();
  EXPECT_EQ((*follower)->applied(), 20u);
  // ... and the rest while it watches.
  for (int j = 0; j < 20; ++j) {
    append(Joined(absl::StrCat("job", j), "a"));
    append(Joined(absl::StrCat("job", j), "b"));
  }
  ASSERT_TRUE(testing::AwaitDurable(store, last).ok());
  ASSERT_TRUE((*follower)->AwaitApplied(last, absl::Now() + absl::Seconds(30)))
      << (*follower)->status();
  EXPECT_TRUE((*follower)->status().ok());
  EXPECT_EQ((*follower)->state().ToSnapshot(last).SerializeAsString(),
            leader_state.ToSnapshot(last).SerializeAsString());
}

}  // namespace
}  // namespace shard::server::replication

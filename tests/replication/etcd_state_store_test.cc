// EtcdStateStore against a real etcd: updates become durable in fenced
// Txns (several per Txn), a replica recovering from etcd alone rebuilds the
// leader's state byte for byte, and a deposed leader's store refuses to
// acknowledge anything once another replica leads.
#include "server/replication/etcd_state_store.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tests/replication/etcd_test_base.h"
#include "tests/support/durable_append.h"
#include "tests/support/state_updates.h"

namespace shard::server::replication {
namespace {

using shard::state::v1::StateUpdate;
using shard::testing::Created;
using shard::testing::Joined;
using shard::testing::NormalSpec;

class EtcdStateStoreTest : public EtcdTestBase {};

// Jobs and their members, as a coordinator would journal them.
std::vector<StateUpdate> History(int jobs) {
  std::vector<StateUpdate> updates;
  for (int j = 0; j < jobs; ++j) {
    const std::string job = absl::StrCat("job", j);
    updates.push_back(Created(job, NormalSpec(100, 2)));
    updates.push_back(Joined(job, "a"));
    updates.push_back(Joined(job, "b"));
  }
  return updates;
}

TEST_F(EtcdStateStoreTest, ARecoveringReplicaRebuildsTheLeadersStateExactly) {
  std::unique_ptr<EtcdSession> leader_session = Session();
  ASSERT_TRUE(leader_session);
  absl::StatusOr<EtcdSession::Leadership> led =
      leader_session->Campaign("replica-a");
  ASSERT_TRUE(led.ok()) << led.status();
  CoordinatorState leader_state;
  {
    EtcdStateStore store(leader_session.get(), *led, 0);
    // 150 updates queued at once: group commit puts them in a few Txns.
    uint64_t last = 0;
    for (const StateUpdate& update : History(50)) {
      ASSERT_TRUE(leader_state.Apply(update).ok());
      absl::StatusOr<uint64_t> sequence = store.Enqueue(update);
      ASSERT_TRUE(sequence.ok()) << sequence.status();
      last = *sequence;
    }
    ASSERT_TRUE(testing::AwaitDurable(store, last).ok());
    EXPECT_EQ(last, 150u);
    EXPECT_LT(store.transactions(), 150u);
    EXPECT_GE(store.transactions(), 2u);  // At most 100 records per Txn.
  }
  std::unique_ptr<EtcdSession> other = Session();
  ASSERT_TRUE(other);
  absl::StatusOr<EtcdStateStore::Recovered> recovered =
      EtcdStateStore::Recover(*other);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(recovered->last_sequence, 150u);
  EXPECT_EQ(recovered->state.ToSnapshot(150).SerializeAsString(),
            leader_state.ToSnapshot(150).SerializeAsString());
}

TEST_F(EtcdStateStoreTest, ADeposedLeadersStoreAcknowledgesNothing) {
  std::unique_ptr<EtcdSession> a = Session();
  std::unique_ptr<EtcdSession> b = Session();
  ASSERT_TRUE(a && b);
  absl::StatusOr<EtcdSession::Leadership> a_led = a->Campaign("replica-a");
  ASSERT_TRUE(a_led.ok()) << a_led.status();
  EtcdStateStore a_store(a.get(), *a_led, 0);
  ASSERT_TRUE(
      testing::AppendDurably(a_store, Created("job", NormalSpec(10, 1))).ok());
  // A loses its lease; B recovers from etcd and leads.
  ASSERT_TRUE(a->Revoke().ok());
  absl::StatusOr<EtcdSession::Leadership> b_led = b->Campaign("replica-b");
  ASSERT_TRUE(b_led.ok()) << b_led.status();
  absl::StatusOr<EtcdStateStore::Recovered> recovered =
      EtcdStateStore::Recover(*b);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EtcdStateStore b_store(b.get(), *b_led, recovered->last_sequence);
  ASSERT_TRUE(testing::AppendDurably(b_store, Joined("job", "b")).ok());
  // A, unaware, appends: refused by etcd, answered with the error, and
  // the store stays broken.
  const absl::Status late = testing::AppendDurably(a_store, Joined("job", "a"));
  EXPECT_EQ(late.code(), absl::StatusCode::kUnavailable) << late;
  EXPECT_NE(late.message().find("no longer the leader"), std::string::npos)
      << late;
  EXPECT_FALSE(a_store.broken().ok());
  EXPECT_FALSE(a_store.Enqueue(Joined("job", "c")).ok());
  // etcd holds A's first record and B's, nothing of A's after B took over.
  absl::StatusOr<EtcdStateStore::Recovered> after = EtcdStateStore::Recover(*b);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->last_sequence, 2u);
  const JobState* job = after->state.FindJob("job");
  ASSERT_NE(job, nullptr);
  EXPECT_TRUE(job->IsMember("b"));
  EXPECT_FALSE(job->IsMember("a"));
}

TEST_F(EtcdStateStoreTest, AGapInTheHistoryIsDataLoss) {
  std::unique_ptr<EtcdSession> a = Session();
  ASSERT_TRUE(a);
  absl::StatusOr<EtcdSession::Leadership> led = a->Campaign("replica-a");
  ASSERT_TRUE(led.ok()) << led.status();
  shard::state::v1::JournalRecord record;
  record.set_sequence(2);
  *record.mutable_update() = Created("job", NormalSpec(10, 1));
  ASSERT_TRUE(a->FencedPut(*led, {{EtcdStateStore::RecordKey(2),
                                   record.SerializeAsString()}})
                  .ok());
  absl::StatusOr<EtcdStateStore::Recovered> recovered =
      EtcdStateStore::Recover(*a);
  EXPECT_EQ(recovered.status().code(), absl::StatusCode::kDataLoss)
      << recovered.status();
}

}  // namespace
}  // namespace shard::server::replication

// EtcdStateStore against a real etcd: updates become durable in fenced
// Txns (several per Txn), a replica recovering from etcd alone rebuilds the
// leader's state byte for byte (from records, and from a chunked snapshot
// plus the records after it), snapshots delete what they supersede and
// compact etcd's history, damage is DATA_LOSS, and a deposed leader's
// store refuses to acknowledge anything once another replica leads.
#include "server/replication/etcd_state_store.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
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

// Jobs job<first>.. and their members, as a coordinator would journal
// them.
std::vector<StateUpdate> History(int jobs, int first = 0) {
  std::vector<StateUpdate> updates;
  for (int j = first; j < first + jobs; ++j) {
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
    EtcdStateStore store(leader_session.get(), *led, {}, {});
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
    EXPECT_GE(store.transactions(), 1u);
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
  EtcdStateStore a_store(a.get(), *a_led, {}, {});
  ASSERT_TRUE(
      testing::AppendDurably(a_store, Created("job", NormalSpec(10, 1))).ok());
  // A loses its lease; B recovers from etcd and leads.
  ASSERT_TRUE(a->Revoke().ok());
  absl::StatusOr<EtcdSession::Leadership> b_led = b->Campaign("replica-b");
  ASSERT_TRUE(b_led.ok()) << b_led.status();
  absl::StatusOr<EtcdStateStore::Recovered> recovered =
      EtcdStateStore::Recover(*b);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EtcdStateStore::Position position;
  position.last_sequence = recovered->last_sequence;
  EtcdStateStore b_store(b.get(), *b_led, position, {});
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

// A replica that stops leading answers the calls waiting for durability at
// once, with its own UNAVAILABLE, instead of leaving them to a Txn that an
// unanswering etcd holds until its deadline (the server's stop would cancel
// them first).
TEST_F(EtcdStateStoreTest, AbandonAnswersPendingUpdatesAtOnce) {
  std::unique_ptr<EtcdSession> session = Session();
  ASSERT_TRUE(session);
  absl::StatusOr<EtcdSession::Leadership> led = session->Campaign("replica-a");
  ASSERT_TRUE(led.ok()) << led.status();
  EtcdStateStore store(session.get(), *led, {}, {});
  etcd_->Pause();
  absl::StatusOr<uint64_t> sequence =
      store.Enqueue(Created("job", NormalSpec(10, 1)));
  ASSERT_TRUE(sequence.ok()) << sequence.status();
  absl::Notification answered;
  absl::Status outcome;
  store.WhenDurable(*sequence, [&](absl::Status s) {
    outcome = s;
    answered.Notify();
  });
  store.Abandon(absl::UnavailableError("replica-a stopped leading"));
  answered.WaitForNotification();
  // Its own error, not the Txn's deadline (which comes seconds later).
  EXPECT_EQ(outcome.code(), absl::StatusCode::kUnavailable) << outcome;
  EXPECT_EQ(outcome.message(), "replica-a stopped leading");
  EXPECT_FALSE(store.Enqueue(Joined("job", "a")).ok());
  etcd_->Resume();
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
                                   EtcdStateStore::EncodeBatch({record})}})
                  .ok());
  absl::StatusOr<EtcdStateStore::Recovered> recovered =
      EtcdStateStore::Recover(*a);
  EXPECT_EQ(recovered.status().code(), absl::StatusCode::kDataLoss)
      << recovered.status();
  EXPECT_NE(recovered.status().message().find("gap"), std::string::npos)
      << recovered.status();
}

TEST_F(EtcdStateStoreTest, ADamagedBatchOfRecordsIsDataLoss) {
  std::unique_ptr<EtcdSession> a = Session();
  ASSERT_TRUE(a);
  absl::StatusOr<EtcdSession::Leadership> led = a->Campaign("replica-a");
  ASSERT_TRUE(led.ok()) << led.status();
  std::vector<shard::state::v1::JournalRecord> records(2);
  records[0].set_sequence(1);
  *records[0].mutable_update() = Created("job", NormalSpec(10, 1));
  records[1].set_sequence(2);
  *records[1].mutable_update() = Joined("job", "a");
  std::string batch = EtcdStateStore::EncodeBatch(records);
  batch.back() ^= 0x20;  // The second record's checksum no longer holds.
  ASSERT_TRUE(a->FencedPut(*led, {{EtcdStateStore::RecordKey(1), batch}}).ok());
  absl::StatusOr<EtcdStateStore::Recovered> recovered =
      EtcdStateStore::Recover(*a);
  EXPECT_EQ(recovered.status().code(), absl::StatusCode::kDataLoss)
      << recovered.status();
  EXPECT_NE(recovered.status().message().find("damaged"), std::string::npos)
      << recovered.status();
}

// Queues `updates` as the coordinator does: applied to `state`, enqueued,
// then a snapshot offered; returns the last sequence once durable (0 and a
// test failure otherwise).
uint64_t Append(EtcdStateStore& store, CoordinatorState& state,
                const std::vector<StateUpdate>& updates) {
  uint64_t last = 0;
  for (const StateUpdate& update : updates) {
    EXPECT_TRUE(state.Apply(update).ok());
    absl::StatusOr<uint64_t> sequence = store.Enqueue(update);
    EXPECT_TRUE(sequence.ok()) << sequence.status();
    if (!sequence.ok()) return 0;
    last = *sequence;
    store.MaybeSnapshot(state);
  }
  absl::Status durable = testing::AwaitDurable(store, last);
  EXPECT_TRUE(durable.ok()) << durable;
  return durable.ok() ? last : 0;
}

// Waits until `store` put `count` snapshots in force.
bool AwaitSnapshots(const EtcdStateStore& store, uint64_t count) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (store.snapshots() < count && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  return store.snapshots() >= count;
}

TEST_F(EtcdStateStoreTest, SnapshotsBoundTheHistoryAndRecoveryIsExact) {
  std::unique_ptr<EtcdSession> session = Session();
  ASSERT_TRUE(session);
  absl::StatusOr<EtcdSession::Leadership> led = session->Campaign("replica-a");
  ASSERT_TRUE(led.ok()) << led.status();
  EtcdStateStore::Options options;
  options.snapshot_every = 40;
  options.snapshot_chunk_bytes = 256;  // Several chunks per snapshot.
  CoordinatorState leader_state;
  {
    EtcdStateStore store(session.get(), *led, {}, options);
    // Due at 40 records (one at a time: the next is due 40 records after
    // the last was taken and once it was written).
    ASSERT_EQ(Append(store, leader_state, History(25)), 75u);
    ASSERT_TRUE(AwaitSnapshots(store, 1)) << store.snapshots();
    ASSERT_EQ(Append(store, leader_state, History(25, 25)), 150u);
    ASSERT_TRUE(AwaitSnapshots(store, 2)) << store.snapshots();
  }
  // The snapshot in force is read from etcd once the store closed: a
  // snapshot still pending at the last record is written as it closes, and
  // with a slow writer that one may cover every record.
  absl::StatusOr<EtcdStateStore::Position> closed =
      EtcdStateStore::ReadPosition(*session);
  ASSERT_TRUE(closed.ok()) << closed.status();
  const uint64_t snapshot = closed->snapshot_sequence;
  ASSERT_GE(snapshot, 80u);

  // etcd keeps the records after the snapshot and its chunks alone.
  absl::StatusOr<EtcdEntries> records = session->List("log/");
  ASSERT_TRUE(records.ok()) << records.status();
  // (Batches end at a snapshot's record: the first one left starts after
  // it.)
  ASSERT_EQ(records->empty(), snapshot == 150u) << snapshot;
  if (!records->empty()) {
    EXPECT_EQ(records->front().first, EtcdStateStore::RecordKey(snapshot + 1));
  }
  absl::StatusOr<EtcdEntries> chunks = session->List("snap/");
  ASSERT_TRUE(chunks.ok()) << chunks.status();
  EXPECT_GT(chunks->size(), 1u);
  for (const auto& [key, value] : *chunks) {
    EXPECT_TRUE(absl::StartsWith(key, SnapshotChunksPrefix(snapshot))) << key;
  }
  // The history before the first snapshot's Txn was compacted away: a
  // watch from the start cannot replay it.
  absl::StatusOr<std::unique_ptr<EtcdSession::PrefixWatch>> watch =
      session->Watch("log/", 1);
  const absl::Status replay =
      watch.ok() ? (*watch)->Next().status() : watch.status();
  EXPECT_FALSE(replay.ok());
  EXPECT_NE(replay.message().find("compacted"), std::string::npos) << replay;

  // Every replica restarted: a new session recovers from etcd alone.
  std::unique_ptr<EtcdSession> other = Session();
  ASSERT_TRUE(other);
  absl::StatusOr<EtcdStateStore::Recovered> recovered =
      EtcdStateStore::Recover(*other);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(recovered->snapshot_sequence, snapshot);
  EXPECT_EQ(recovered->records, 150 - snapshot);
  EXPECT_EQ(recovered->last_sequence, 150u);
  EXPECT_EQ(recovered->state.ToSnapshot(150).SerializeAsString(),
            leader_state.ToSnapshot(150).SerializeAsString());
  absl::StatusOr<EtcdStateStore::Position> position =
      EtcdStateStore::ReadPosition(*other);
  ASSERT_TRUE(position.ok()) << position.status();
  EXPECT_EQ(position->last_sequence, 150u);
  EXPECT_EQ(position->snapshot_sequence, snapshot);
  EXPECT_GT(position->snapshot_revision, 0);
}

TEST_F(EtcdStateStoreTest, ASnapshotWithNoRecordAfterItHoldsTheLastSequence) {
  std::unique_ptr<EtcdSession> session = Session();
  ASSERT_TRUE(session);
  absl::StatusOr<EtcdSession::Leadership> led = session->Campaign("replica-a");
  ASSERT_TRUE(led.ok()) << led.status();
  EtcdStateStore::Options options;
  options.snapshot_every = 6;
  CoordinatorState leader_state;
  {
    EtcdStateStore store(session.get(), *led, {}, options);
    ASSERT_EQ(Append(store, leader_state, History(2)), 6u);
    ASSERT_TRUE(AwaitSnapshots(store, 1));
    EXPECT_EQ(store.snapshot_sequence(), 6u);
  }
  absl::StatusOr<EtcdEntries> records = session->List("log/");
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_TRUE(records->empty());
  // The next leader appends after record 6, not after 0.
  absl::StatusOr<EtcdStateStore::Position> position =
      EtcdStateStore::ReadPosition(*session);
  ASSERT_TRUE(position.ok()) << position.status();
  EXPECT_EQ(position->last_sequence, 6u);
  {
    EtcdStateStore next(session.get(), *led, *position, {});
    ASSERT_TRUE(
        testing::AppendDurably(next, Created("late", NormalSpec(10, 1))).ok());
  }
  ASSERT_TRUE(leader_state.Apply(Created("late", NormalSpec(10, 1))).ok());
  absl::StatusOr<EtcdStateStore::Recovered> recovered =
      EtcdStateStore::Recover(*session);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(recovered->last_sequence, 7u);
  EXPECT_EQ(recovered->state.ToSnapshot(7).SerializeAsString(),
            leader_state.ToSnapshot(7).SerializeAsString());
}

// Leaderships shorter than a snapshot interval (rolling restarts, frequent
// failovers): each new leader continues the count from the snapshot in
// force and compacts up to its revision, so etcd holds at most two
// intervals of records, whatever the sequence of leaderships.
TEST_F(EtcdStateStoreTest, TheFootprintStaysBoundedAcrossLeaderships) {
  constexpr uint64_t kEvery = 20;
  EtcdStateStore::Options options;
  options.snapshot_every = kEvery;
  CoordinatorState leader_state;
  uint64_t appended = 0;
  for (int leadership = 0; leadership < 6; ++leadership) {
    std::unique_ptr<EtcdSession> session = Session();
    ASSERT_TRUE(session);
    absl::StatusOr<EtcdSession::Leadership> led =
        session->Campaign(absl::StrCat("replica-", leadership));
    ASSERT_TRUE(led.ok()) << led.status();
    absl::StatusOr<EtcdStateStore::Position> position =
        EtcdStateStore::ReadPosition(*session);
    ASSERT_TRUE(position.ok()) << position.status();
    ASSERT_EQ(position->last_sequence, appended);
    {
      EtcdStateStore store(session.get(), *led, *position, options);
      // 15 records a leadership (5 jobs of 3 updates).
      appended = Append(store, leader_state, History(5, 5 * leadership));
      const absl::Time deadline = absl::Now() + absl::Seconds(20);
      while (appended - store.snapshot_sequence() >= 2 * kEvery &&
             absl::Now() < deadline) {
        absl::SleepFor(absl::Milliseconds(10));
      }
    }
    ASSERT_TRUE(session->Revoke().ok());  // The next leader takes over.
  }
  ASSERT_EQ(appended, 90u);
  std::unique_ptr<EtcdSession> reader = Session();
  ASSERT_TRUE(reader);
  absl::StatusOr<EtcdStateStore::Recovered> recovered =
      EtcdStateStore::Recover(*reader);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_GT(recovered->snapshot_sequence, 0u);
  EXPECT_LE(recovered->records, 2 * kEvery) << "records after the snapshot";
  EXPECT_EQ(recovered->last_sequence, appended);
  EXPECT_EQ(recovered->state.ToSnapshot(90).SerializeAsString(),
            leader_state.ToSnapshot(90).SerializeAsString());
  // The history before the previous snapshot was compacted away.
  absl::StatusOr<std::unique_ptr<EtcdSession::PrefixWatch>> watch =
      reader->Watch("log/", 1);
  const absl::Status replay =
      watch.ok() ? (*watch)->Next().status() : watch.status();
  EXPECT_NE(replay.message().find("compacted"), std::string::npos) << replay;
}

TEST_F(EtcdStateStoreTest,
       AMissingSnapshotChunkIsDataLossAndAnUnfinishedOneIsIgnored) {
  std::unique_ptr<EtcdSession> session = Session();
  ASSERT_TRUE(session);
  absl::StatusOr<EtcdSession::Leadership> led = session->Campaign("replica-a");
  ASSERT_TRUE(led.ok()) << led.status();
  EtcdStateStore::Options options;
  options.snapshot_every = 30;
  options.snapshot_chunk_bytes = 128;
  CoordinatorState state;
  {
    EtcdStateStore store(session.get(), *led, {}, options);
    ASSERT_EQ(Append(store, state, History(10)), 30u);
    ASSERT_TRUE(AwaitSnapshots(store, 1));
  }
  // A leader that died while writing a later snapshot left chunks but no
  // manifest naming them: recovery does not read them.
  const EncodedSnapshot unfinished = EncodeSnapshot(state, 31, 128);
  ASSERT_TRUE(session->FencedPut(*led, {unfinished.chunks[0]}).ok());
  absl::StatusOr<EtcdStateStore::Recovered> recovered =
      EtcdStateStore::Recover(*session);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(recovered->last_sequence, 30u);
  // A chunk of the snapshot in force gone: DATA_LOSS naming the snapshot.
  const std::string chunk = SnapshotChunksPrefix(30) + "000001";
  ASSERT_TRUE(session->FencedPut(*led, {}, {{chunk, chunk + '\0'}}).ok());
  recovered = EtcdStateStore::Recover(*session);
  EXPECT_EQ(recovered.status().code(), absl::StatusCode::kDataLoss)
      << recovered.status();
  EXPECT_NE(recovered.status().message().find("snapshot at record 30"),
            std::string::npos)
      << recovered.status();
}

}  // namespace
}  // namespace shard::server::replication

// Leases, leaving, and elastic re-sharding in testing::BlockingCoordinator,
// driven by a fake clock (no sleeps).
#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/support/blocking_coordinator.h"
#include "tests/support/cursor_indices.h"

namespace shard::server {
namespace {

class MembershipTest : public ::testing::Test {
 protected:
  MembershipTest() : service_(Options()) {}

  CoordinatorOptions Options() {
    CoordinatorOptions options;
    options.lease = absl::Seconds(10);
    options.expire_leases_in_background = false;
    options.now = [this] { return now_; };
    return options;
  }

  void CreateJob(uint32_t world, uint32_t min, uint32_t max, uint64_t n,
                 shard::v1::TailPolicy tail = shard::v1::TAIL_POLICY_PAD) {
    shard::v1::CreateJobRequest request;
    request.set_job_id("job");
    request.mutable_spec()->set_dataset_size(n);
    request.mutable_spec()->set_world_size(world);
    request.mutable_spec()->set_min_world_size(min);
    request.mutable_spec()->set_max_world_size(max);
    request.mutable_spec()->set_tail(tail);
    ASSERT_TRUE(service_.CreateJob(request).ok());
  }

  absl::StatusOr<shard::v1::JoinJobResponse> Join(
      const std::string& member,
      std::optional<uint32_t> requested_rank = std::nullopt,
      uint32_t wait_ms = 0) {
    shard::v1::JoinJobRequest request;
    request.set_job_id("job");
    request.set_member_id(member);
    if (requested_rank) request.set_requested_rank(*requested_rank);
    request.set_wait_for_world_ms(wait_ms);
    return service_.JoinJob(request, absl::InfiniteFuture());
  }

  absl::Status Leave(const std::string& member) {
    shard::v1::LeaveRequest request;
    request.set_job_id("job");
    request.set_member_id(member);
    return service_.Leave(request).status();
  }

  absl::Status Heartbeat(const std::string& member, uint64_t generation) {
    shard::v1::HeartbeatRequest request;
    request.set_job_id("job");
    request.set_member_id(member);
    request.set_generation(generation);
    return service_.Heartbeat(request).status();
  }

  // A commit by `member` (a member of the generation's world), of its
  // process `incarnation` (0: not named).
  absl::StatusOr<shard::v1::CommitProgressResponse> Commit(
      uint64_t generation, uint64_t epoch, uint64_t position,
      const std::string& member = "a", uint64_t incarnation = 0) {
    shard::v1::CommitProgressRequest request;
    request.set_job_id("job");
    request.set_generation(generation);
    request.set_epoch(epoch);
    request.set_position(position);
    request.set_member_id(member);
    request.set_incarnation(incarnation);
    return service_.CommitProgress(request);
  }

  // Indices of `rank` in epoch 0 of `generation` from `start`.
  absl::StatusOr<std::vector<uint64_t>> Stream(uint64_t generation,
                                               uint32_t rank, uint64_t start) {
    shard::v1::StreamShardRequest request;
    request.set_job_id("job");
    request.set_generation(generation);
    request.set_rank(rank);
    request.set_start_position(start);
    absl::StatusOr<ShardCursor> cursor = service_.OpenShard(request);
    if (!cursor.ok()) return cursor.status();
    return testing::CursorIndices(*cursor);
  }

  shard::v1::Job Job() {
    shard::v1::GetJobRequest request;
    request.set_job_id("job");
    return *service_.GetJob(request);
  }

  absl::Time now_ = absl::FromUnixSeconds(1000);
  testing::BlockingCoordinator service_;
};

TEST_F(MembershipTest, AnExpiredLeaseEndsTheGenerationUntilAReplacementJoins) {
  CreateJob(2, 2, 2, 100);
  ASSERT_TRUE(Join("a").ok());
  ASSERT_TRUE(Join("b").ok());
  EXPECT_EQ(Job().generation(), 1u);

  now_ += absl::Seconds(6);
  ASSERT_TRUE(Heartbeat("b", 1).ok());
  now_ += absl::Seconds(6);  // a: 12 s silent, b: 6 s.
  service_.ExpireLeases();
  EXPECT_EQ(Job().joined_members(), 1u);
  EXPECT_EQ(Job().current_world_size(), 0u);
  EXPECT_EQ(Stream(1, 0, 0).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(Heartbeat("b", 1).code(), absl::StatusCode::kAborted);
  // No longer a member: re-join (ABORTED, as for every ended membership).
  EXPECT_EQ(Heartbeat("a", 1).code(), absl::StatusCode::kAborted);

  // A fixed-size job re-forms when a replacement joins and the survivor of
  // the ended world joined again (as it does on ABORTED).
  auto c = Join("c");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->world_formed());
  auto b = Join("b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->generation(), 2u);
  EXPECT_EQ(b->rank(), 0u);
  EXPECT_EQ(Join("c")->rank(), 1u);
}

// torchrun after a crash restarts every worker: the first new process must
// not form a world with the other worker's dead process (its lease still
// runs), which its replacement would end a moment later, leaving the first
// one holding an ended generation.
TEST_F(MembershipTest, ARestartedWorldFormsOnlyWithProcessesThatJoinedSince) {
  CreateJob(2, 2, 2, 100);
  auto join = [this](const std::string& member, uint64_t incarnation) {
    shard::v1::JoinJobRequest request;
    request.set_job_id("job");
    request.set_member_id(member);
    request.set_incarnation(incarnation);
    return service_.JoinJob(request, absl::InfiniteFuture());
  };
  ASSERT_TRUE(join("worker-0", 1).ok());
  ASSERT_TRUE(join("worker-1", 2).ok());
  ASSERT_EQ(Job().generation(), 1u);

  auto first = join("worker-0", 3);  // Restarted: ends generation 1.
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->world_formed());
  EXPECT_EQ(Job().current_world_size(), 0u);
  const shard::v1::Job waiting = Job();
  for (const shard::v1::JobMember& member : waiting.members()) {
    EXPECT_EQ(member.awaiting_rejoin(), member.member_id() == "worker-1");
  }
  auto second = join("worker-1", 4);
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(second->world_formed());
  EXPECT_EQ(second->generation(), 2u);
  auto again = join("worker-0", 3);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->generation(), 2u);
  EXPECT_EQ(Job().generation(), 2u);
  EXPECT_TRUE(Heartbeat("worker-0", 2).ok());
}

// A survivor that never joins again (frozen, or gone without a lease
// expiry yet) keeps no one waiting once its lease runs out.
TEST_F(MembershipTest, ASurvivorThatDoesNotRejoinIsReplacedAtItsLeaseExpiry) {
  CreateJob(2, 2, 2, 100);
  ASSERT_TRUE(Join("a").ok());
  ASSERT_TRUE(Join("b").ok());
  ASSERT_TRUE(Leave("a").ok());
  ASSERT_FALSE(Join("c")->world_formed());  // b has not joined again.
  now_ += absl::Seconds(6);
  ASSERT_TRUE(Join("c").ok());   // c's lease is renewed, b's is not.
  ASSERT_FALSE(Join("d").ok());  // b and c are the job's 2 members.
  now_ += absl::Seconds(6);
  service_.ExpireLeases();
  auto d = Join("d");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->world_formed());
  EXPECT_EQ(Job().generation(), 2u);
}

// torchrun's ranks: members asking for ranks get them whatever their join
// order; a rank asked for twice goes to the first asker, the other takes a
// free one.
TEST_F(MembershipTest, RequestedRanksAreGrantedWhenTheWorldForms) {
  CreateJob(3, 3, 3, 99);
  ASSERT_TRUE(Join("worker-2", 2).ok());
  ASSERT_TRUE(Join("worker-0", 0).ok());
  ASSERT_TRUE(Join("worker-x", 0).ok());
  EXPECT_EQ(Join("worker-2")->rank(), 2u);
  EXPECT_EQ(Join("worker-0")->rank(), 0u);
  EXPECT_EQ(Join("worker-x")->rank(), 1u);
  // A restarted member (new world after it left) asks again.
  ASSERT_TRUE(Leave("worker-0").ok());
  ASSERT_TRUE(Leave("worker-x").ok());
  ASSERT_TRUE(Join("worker-1", 1).ok());
  ASSERT_TRUE(Join("worker-0", 0).ok());
  EXPECT_EQ(Job().current_world_size(), 0u);  // Until worker-2 re-joins.
  EXPECT_EQ(Join("worker-2")->rank(), 2u);
  EXPECT_EQ(Join("worker-1")->rank(), 1u);
  EXPECT_EQ(Join("worker-0")->rank(), 0u);
  EXPECT_EQ(Join("worker-2")->rank(), 2u);
}

TEST_F(MembershipTest, LeaveEndsTheGenerationAtOnce) {
  CreateJob(2, 2, 2, 100);
  ASSERT_TRUE(Join("a").ok());
  ASSERT_TRUE(Join("b").ok());
  ASSERT_TRUE(Leave("a").ok());
  ASSERT_TRUE(Leave("a").ok());  // Idempotent.
  EXPECT_EQ(Job().current_world_size(), 0u);
}

// Elastic shrink: 3 ranks commit at position 30, one is lost, the other two
// re-form at once and the rest of the epoch is re-split from 30 over 2.
TEST_F(MembershipTest, ShrinkReshardsTheRestOfTheEpochExactlyOnce) {
  constexpr uint64_t kN = 101;
  CreateJob(3, 2, 3, kN, shard::v1::TAIL_POLICY_UNEVEN);
  for (const char* m : {"a", "b", "c"}) ASSERT_TRUE(Join(m).ok());
  std::map<uint64_t, int> seen;
  for (uint32_t rank = 0; rank < 3; ++rank) {
    const std::vector<uint64_t> shard = *Stream(1, rank, 0);
    for (size_t k = 0; k < 10; ++k) ++seen[shard[k]];  // Positions < 30.
  }
  ASSERT_TRUE(Commit(1, 0, 30).ok());

  now_ += absl::Seconds(6);
  ASSERT_TRUE(Heartbeat("a", 1).ok());
  ASSERT_TRUE(Heartbeat("b", 1).ok());
  now_ += absl::Seconds(6);
  service_.ExpireLeases();  // c is lost; a and b re-join (min 2).
  EXPECT_EQ(Job().current_world_size(), 0u);
  ASSERT_TRUE(Join("a").ok());
  ASSERT_TRUE(Join("b").ok());
  EXPECT_EQ(Job().generation(), 2u);
  EXPECT_EQ(Job().current_world_size(), 2u);
  EXPECT_EQ(Stream(2, 0, 0).status().code(),
            absl::StatusCode::kInvalidArgument);  // Not 30 + k*2.
  for (uint32_t rank = 0; rank < 2; ++rank) {
    auto got = Stream(2, rank, 30);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->size(), rank == 0 ? 36u : 35u);
    for (uint64_t index : *got) ++seen[index];
  }
  ASSERT_EQ(seen.size(), kN);
  for (const auto& [index, count] : seen) EXPECT_EQ(count, 1) << index;
  // The end of the re-split epoch completes it.
  auto done = Commit(2, 0, kN);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->committed_epoch(), 1u);
}

// Elastic growth: members joining a formed world wait and are admitted at
// the next commit; the epoch continues from that position over 4 ranks.
TEST_F(MembershipTest, GrowthIsAdmittedAtTheNextCommit) {
  constexpr uint64_t kN = 100;
  CreateJob(2, 2, 4, kN, shard::v1::TAIL_POLICY_DROP);
  ASSERT_TRUE(Join("a").ok());
  ASSERT_TRUE(Join("b").ok());
  shard::v1::JoinJobRequest waiting;
  waiting.set_job_id("job");
  waiting.set_member_id("c");
  auto c = service_.JoinJob(waiting, absl::InfiniteFuture());  // wait 0
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->world_formed());
  waiting.set_member_id("d");
  ASSERT_TRUE(service_.JoinJob(waiting, absl::InfiniteFuture()).ok());
  EXPECT_EQ(Job().generation(), 1u);

  auto committed = Commit(1, 0, 40);
  ASSERT_TRUE(committed.ok());
  EXPECT_EQ(committed->generation(), 2u);
  EXPECT_EQ(Job().current_world_size(), 4u);
  EXPECT_EQ(Commit(1, 0, 40).status().code(), absl::StatusCode::kAborted);

  // Generation 1 is over; its first 40 positions (20 per rank of the
  // initial plan) were committed.
  std::map<uint64_t, int> seen;
  {
    shard::v1::PreviewShardRequest preview;
    preview.set_job_id("job");
    preview.set_limit(kN);
    for (uint32_t rank = 0; rank < 2; ++rank) {
      preview.set_rank(rank);
      auto page = service_.PreviewShard(preview, absl::InfiniteFuture());
      for (int k = 0; k < 20; ++k) ++seen[page->indices(k)];
    }
  }
  for (uint32_t rank = 0; rank < 4; ++rank) {
    auto got = Stream(2, rank, 40);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->size(), 15u);
    for (uint64_t index : *got) ++seen[index];
  }
  ASSERT_EQ(seen.size(), kN);
  for (const auto& [index, count] : seen) EXPECT_EQ(count, 1) << index;
}

// A whole job launched again (torchrun: every worker a new process) at
// another size within an elastic job's bounds: each join names the
// launch's world size in its spec, and the world forms at that size, not
// at min_world_size with the first joiners nor at the spec's first size.
class RelaunchTest : public MembershipTest {
 protected:
  // A launched worker's join: its spec is the job's but for the world
  // size its launcher started it in.
  absl::StatusOr<shard::v1::JoinJobResponse> Launched(const std::string& member,
                                                      uint64_t incarnation,
                                                      uint32_t world,
                                                      uint32_t max_world = 3) {
    shard::v1::JoinJobRequest request;
    request.set_job_id("job");
    request.set_member_id(member);
    request.set_incarnation(incarnation);
    shard::v1::JobSpec* spec = request.mutable_spec();
    spec->set_dataset_size(kN);
    spec->set_world_size(world);
    spec->set_min_world_size(1);
    spec->set_max_world_size(max_world);
    spec->set_tail(shard::v1::TAIL_POLICY_UNEVEN);
    return service_.JoinJob(request, absl::InfiniteFuture());
  }

  // Launches `world` workers (incarnations from `incarnation`) and
  // returns the generation they formed.
  uint64_t Launch(uint32_t world, uint64_t incarnation) {
    for (uint32_t rank = 0; rank < world; ++rank) {
      auto joined =
          Launched(absl::StrCat("worker-", rank), incarnation + rank, world);
      EXPECT_TRUE(joined.ok()) << joined.status();
      EXPECT_EQ(Job().current_world_size(), rank + 1 == world ? world : 0)
          << "after worker-" << rank << " of " << world << " joined";
    }
    return Job().generation();
  }

  // Adds the indices of positions [from, to) of epoch 0 in `generation`'s
  // world of `world` ranks to `seen`.
  void Train(uint64_t generation, uint32_t world, uint64_t from, uint64_t to,
             std::map<uint64_t, int>& seen) {
    for (uint32_t rank = 0; rank < world; ++rank) {
      const std::vector<uint64_t> shard = *Stream(generation, rank, from);
      for (uint64_t k = 0; from + rank + k * world < to; ++k) {
        ++seen[shard[k]];
      }
    }
    ASSERT_TRUE(Commit(generation, 0, to, "worker-0").ok());
  }

  static constexpr uint64_t kN = 101;
};

TEST_F(RelaunchTest, ALaunchAtAnotherSizeFormsItsWorldAtThatSize) {
  std::map<uint64_t, int> seen;
  const uint64_t two = Launch(2, 10);
  Train(two, 2, 0, 40, seen);
  // Every worker killed; relaunched with 3 (the two old ones' leases still
  // run: each new process replaces its predecessor).
  const uint64_t three = Launch(3, 20);
  EXPECT_GT(three, two);
  Train(three, 3, 40, 70, seen);
  // Relaunched with 1: worker-1 and worker-2's dead predecessors hold the
  // next world until their leases expire, then it forms with 1.
  auto alone = Launched("worker-0", 30, 1);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_FALSE(alone->world_formed());
  now_ += absl::Seconds(6);
  ASSERT_FALSE(Launched("worker-0", 30, 1)->world_formed());  // Renews.
  now_ += absl::Seconds(6);
  service_.ExpireLeases();
  EXPECT_EQ(Job().current_world_size(), 1u);
  Train(Job().generation(), 1, 70, kN, seen);
  ASSERT_EQ(seen.size(), kN);
  for (const auto& [index, count] : seen) EXPECT_EQ(count, 1) << index;
}

// The survivors of a launched world that lost a rank re-join (as they do
// on ABORTED, naming their launch's size again) and re-form by the elastic
// rule, with as few as min_world_size: a survivor is no new launch.
TEST_F(RelaunchTest, SurvivorsOfALaunchReformWithoutTheLostRank) {
  const uint64_t three = Launch(3, 10);
  now_ += absl::Seconds(6);
  ASSERT_TRUE(Heartbeat("worker-0", three).ok());
  ASSERT_TRUE(Heartbeat("worker-1", three).ok());
  now_ += absl::Seconds(6);
  service_.ExpireLeases();  // worker-2 is lost.
  ASSERT_TRUE(Launched("worker-0", 10, 3).ok());
  auto second = Launched("worker-1", 11, 3);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->world_formed());
  EXPECT_EQ(Job().current_world_size(), 2u);
}

// A newcomer launched at 3 waits beside a world of 2; that world breaks
// and its survivor re-joins: survivor and newcomer form a world of 2 by the
// elastic rule, without waiting for the rest of the newcomer's launch
// (which may never come).
TEST_F(RelaunchTest, ANewcomersLaunchSizeDoesNotHoldSurvivors) {
  Launch(2, 10);
  auto newcomer = Launched("worker-2", 30, 3);
  ASSERT_TRUE(newcomer.ok()) << newcomer.status();
  EXPECT_FALSE(newcomer->world_formed());
  ASSERT_TRUE(Leave("worker-0").ok());
  EXPECT_EQ(Job().world_size_awaited(), 3u);  // worker-1 has not re-joined
  auto survivor = Launched("worker-1", 11, 2);
  ASSERT_TRUE(survivor.ok()) << survivor.status();
  EXPECT_TRUE(survivor->world_formed());
  EXPECT_EQ(Job().current_world_size(), 2u);
}

// A commit names the member's process: another process under the same
// member id (a stale one, whose successor joined) commits nothing.
TEST_F(RelaunchTest, ACommitOfAnotherProcessOfTheMemberIsRefused) {
  const uint64_t two = Launch(2, 10);  // worker-1 is incarnation 11.
  const absl::Status stale = Commit(two, 0, 20, "worker-1", 99).status();
  EXPECT_EQ(stale.code(), absl::StatusCode::kFailedPrecondition) << stale;
  EXPECT_NE(stale.message().find("is stale"), std::string::npos) << stale;
  EXPECT_EQ(Job().committed_position(), 0u);
  EXPECT_TRUE(Commit(two, 0, 20, "worker-1", 11).ok());
  EXPECT_EQ(Job().committed_position(), 20u);
}

TEST_F(RelaunchTest, ALaunchOutsideTheJobsBoundsIsRefused) {
  Launch(2, 10);
  // Past the bounds the launch names itself: not a valid spec.
  EXPECT_EQ(Launched("worker-0", 20, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Past the job's: another job's spec.
  auto four = Launched("worker-0", 20, 4, 4);
  EXPECT_EQ(four.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(four.status().message().find("max_world_size"), std::string::npos)
      << four.status();
  EXPECT_EQ(Job().current_world_size(), 2u);
}

}  // namespace
}  // namespace shard::server

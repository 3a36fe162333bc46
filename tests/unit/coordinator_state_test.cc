#include "server/state/coordinator_state.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/state_updates.h"

namespace shard::server {
namespace {

using shard::state::v1::StateSnapshot;
using shard::state::v1::StateUpdate;
using shard::testing::Committed;
using shard::testing::Created;
using shard::testing::Deleted;
using shard::testing::Formed;
using shard::testing::Joined;
using shard::testing::NormalSpec;
using shard::testing::Removed;

// Applies every update, failing the test on the first refusal.
void ApplyAll(CoordinatorState& state, const std::vector<StateUpdate>& all) {
  for (const StateUpdate& update : all) {
    ASSERT_TRUE(state.Apply(update).ok())
        << state.Check(update) << " for " << update.ShortDebugString();
  }
}

std::string Serialized(const CoordinatorState& state) {
  return state.ToSnapshot(1).SerializeAsString();
}

TEST(CoordinatorStateTest, WorldsFormBreakAndReform) {
  CoordinatorState state;
  ApplyAll(state, {Created("j", NormalSpec(100, 2, 1, 2)), Joined("j", "a"),
                   Joined("j", "b")});
  EXPECT_FALSE(state.FindJob("j")->world_formed());  // Joined, not formed.
  ApplyAll(state, {Formed("j", 1, {"a", "b"})});
  EXPECT_TRUE(state.FindJob("j")->world_formed());
  EXPECT_EQ(state.FindJob("j")->RankOf("b"), 1u);
  EXPECT_EQ(state.FindJob("j")->RankOf("c"), std::nullopt);
  // Losing a member of the world breaks it; the generation number stays
  // until the next world forms.
  ApplyAll(state, {Committed("j", 3, 40), Removed("j", "a")});
  EXPECT_FALSE(state.FindJob("j")->world_formed());
  EXPECT_EQ(state.FindJob("j")->generation, 1u);
  ApplyAll(state, {Joined("j", "c"), Formed("j", 2, {"b", "c"}, 3, 40)});
  const JobState& job = *state.FindJob("j");
  EXPECT_EQ(job.RankOf("b"), 0u);
  EXPECT_EQ(job.RankOf("c"), 1u);
  EXPECT_EQ(job.generation_epoch, 3u);
  EXPECT_EQ(job.generation_base, 40u);
}

// The survivors of an ended world stay members but count for the next
// world only once they joined again; snapshots keep that.
TEST(CoordinatorStateTest, SurvivorsOfAnEndedWorldAwaitRejoin) {
  CoordinatorState state;
  ApplyAll(state,
           {Created("j", NormalSpec(100, 2, 1, 3)), Joined("j", "a"),
            Joined("j", "b"), Joined("j", "w"), Formed("j", 1, {"a", "b"}),
            Removed("j", "a"), Joined("j", "c")});
  const JobState* job = state.FindJob("j");
  EXPECT_TRUE(job->AwaitsRejoin("b"));
  EXPECT_FALSE(job->AwaitsRejoin("w"));  // Was not in the world.
  EXPECT_EQ(job->EligibleMembers(), (std::vector<std::string>{"w", "c"}));
  absl::StatusOr<CoordinatorState> copy =
      CoordinatorState::FromSnapshot(state.ToSnapshot(8));
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(Serialized(*copy), Serialized(state));
  EXPECT_TRUE(copy->FindJob("j")->AwaitsRejoin("b"));

  ApplyAll(state, {Joined("j", "b")});  // b joins again.
  job = state.FindJob("j");
  EXPECT_FALSE(job->AwaitsRejoin("b"));
  EXPECT_EQ(std::vector<std::string>(job->members.begin(), job->members.end()),
            (std::vector<std::string>{"b", "w", "c"}));
  EXPECT_EQ(job->NextWorld(3), (std::vector<std::string>{"b", "w", "c"}));
  EXPECT_EQ(state.Check(Joined("j", "b")).code(),
            absl::StatusCode::kFailedPrecondition);  // Already joined.
}

// Member `member` of job "j" joins from a launch of `world` processes.
StateUpdate Launched(const std::string& member, uint32_t world) {
  StateUpdate joined = Joined("j", member);
  joined.mutable_member_joined()->set_launch_world_size(world);
  return joined;
}

// A member's launch world size decides the next world only until it is in
// one; a survivor re-joining carries none.
TEST(CoordinatorStateTest, LaunchSizesLastUntilTheMemberIsInAWorld) {
  CoordinatorState state;
  ApplyAll(state, {Created("j", NormalSpec(100, 2, 1, 3)), Launched("a", 3),
                   Launched("b", 2)});
  const JobState* job = state.FindJob("j");
  EXPECT_EQ(job->WorldSizeAwaited(), 3u);  // The largest launch.
  EXPECT_EQ(job->MinWorldSize(), 1u);      // A launch said its size.
  ApplyAll(state, {Formed("j", 1, {"a", "b"})});
  job = state.FindJob("j");
  EXPECT_TRUE(job->launch_sizes.empty());
  EXPECT_EQ(job->WorldSizeAwaited(), 1u);                  // min_world_size.
  ApplyAll(state, {Removed("j", "b"), Launched("a", 3)});  // a survives.
  EXPECT_TRUE(state.FindJob("j")->launch_sizes.empty());
  EXPECT_EQ(state.Check(Launched("c", 4)).code(),
            absl::StatusCode::kFailedPrecondition);  // Past 1..3.
}

// A survivor of a world and a newcomer whose launch named a larger size:
// the survivors' elastic rule wins, so neither waits for the rest of the
// newcomer's launch, which may never come. Launched members alone (a job
// relaunched as a whole) wait for their launch's size.
TEST(CoordinatorStateTest, SurvivorsReFormByTheElasticRuleBesideALaunch) {
  CoordinatorState state;
  ApplyAll(state, {Created("j", NormalSpec(100, 2, 1, 4)), Launched("a", 2),
                   Launched("b", 2)});
  const JobState* job = state.FindJob("j");
  EXPECT_EQ(job->WorldSizeAwaitedBy(), JobState::AwaitedBy::kLaunchSize);
  ApplyAll(state, {Formed("j", 1, {"a", "b"}), Launched("c", 4)});
  ApplyAll(state, {Removed("j", "a")});
  job = state.FindJob("j");
  EXPECT_EQ(job->WorldSizeAwaited(), 4u);  // b has not re-joined yet.
  ApplyAll(state, {Launched("b", 2)});     // b survives: no launch size.
  job = state.FindJob("j");
  EXPECT_EQ(job->WorldSizeAwaitedBy(), JobState::AwaitedBy::kMinWorldSize);
  EXPECT_EQ(job->WorldSizeAwaited(), 1u);
  // The whole job relaunched: every member a launch's.
  ApplyAll(state, {Removed("j", "b"), Removed("j", "c"), Launched("d", 3),
                   Launched("e", 3)});
  job = state.FindJob("j");
  EXPECT_EQ(job->WorldSizeAwaitedBy(), JobState::AwaitedBy::kLaunchSize);
  EXPECT_EQ(job->WorldSizeAwaited(), 3u);
}

TEST(CoordinatorStateTest, AFreshJobAwaitsItsSpecsWorldSize) {
  CoordinatorState state;
  ApplyAll(state, {Created("j", NormalSpec(100, 3, 2, 4)), Joined("j", "a")});
  const JobState* job = state.FindJob("j");
  EXPECT_EQ(job->WorldSizeAwaitedBy(), JobState::AwaitedBy::kSpecWorldSize);
  EXPECT_EQ(job->WorldSizeAwaited(), 3u);
}

TEST(CoordinatorStateTest, SnapshotRoundTripsEveryField) {
  CoordinatorState state;
  ApplyAll(state, {Created("gone", NormalSpec(10, 1)), Joined("gone", "z"),
                   Formed("gone", 1, {"z"}), Deleted("gone"),
                   Created("j", NormalSpec(100, 2, 1, 3)), Joined("j", "a"),
                   Joined("j", "b"), Formed("j", 2, {"a", "b"}),
                   Committed("j", 1, 6)});
  StateUpdate requesting = Joined("j", "c");
  requesting.mutable_member_joined()->set_requested_rank(1);
  requesting.mutable_member_joined()->set_launch_world_size(3);
  ApplyAll(state, {requesting});
  absl::StatusOr<CoordinatorState> copy =
      CoordinatorState::FromSnapshot(state.ToSnapshot(4));
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(Serialized(*copy), Serialized(state));
  const JobState& job = *copy->FindJob("j");
  EXPECT_EQ(std::vector<std::string>(job.members.begin(), job.members.end()),
            (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(job.requested_ranks.at("c"), 1u);
  EXPECT_EQ(job.launch_sizes.by_member().at("c"), 3u);
  EXPECT_EQ(job.launch_sizes.Largest(), 3u);
  // a and b, in the world, re-form by the elastic rule if it breaks.
  EXPECT_EQ(job.WorldSizeAwaitedBy(), JobState::AwaitedBy::kMinWorldSize);
  EXPECT_EQ(job.world, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(job.generation, 2u);
  EXPECT_EQ(job.incarnation, 2u);
  EXPECT_EQ(job.committed_position, 6u);
  // The counters survive too: the next generation is above the deleted
  // job's, the next incarnation is new.
  EXPECT_EQ(copy->last_generation(), 2u);
}

// A job with balanced batches keeps the worlds that serve the current
// generation's epoch (what a later world serves depends on them): a world
// of another size is added, one of the same size continues the one
// before, one that served nothing is replaced, a new epoch starts over;
// snapshots keep them.
TEST(CoordinatorStateTest, BalancedBatchesKeepTheWorldsOfTheEpoch) {
  shard::v1::JobSpec spec = NormalSpec(100, 4, 2, 4);
  spec.mutable_batches()->set_batch_tokens(50);
  spec.mutable_batches()->set_cost_model(shard::v1::BATCH_COST_MODEL_PADDED);
  spec.mutable_batches()->set_costs_sha256(std::string(64, 'a'));
  CoordinatorState state;
  ApplyAll(state, {Created("j", spec), Joined("j", "a"), Joined("j", "b"),
                   Joined("j", "c"), Joined("j", "d"),
                   Formed("j", 1, {"a", "b", "c", "d"})});
  using Links = std::vector<plan::EpochLink>;
  EXPECT_EQ(state.FindJob("j")->epoch_worlds, (Links{{0, 4}}));
  ApplyAll(state, {Committed("j", 0, 40), Removed("j", "c"), Removed("j", "d"),
                   Joined("j", "a"), Joined("j", "b"),
                   Formed("j", 2, {"a", "b"}, 0, 40)});
  EXPECT_EQ(state.FindJob("j")->WorldsOf(0), (Links{{0, 4}, {40, 2}}));
  EXPECT_EQ(state.FindJob("j")->WorldsOf(1), (Links{{0, 2}}));
  // The same size again (a replaced rank) continues the world of 2.
  ApplyAll(state, {Committed("j", 0, 60), Joined("j", "e"), Removed("j", "b"),
                   Joined("j", "a"), Formed("j", 3, {"a", "e"}, 0, 60)});
  EXPECT_EQ(state.FindJob("j")->epoch_worlds, (Links{{0, 4}, {40, 2}}));
  ApplyAll(state, {Joined("j", "f"), Joined("j", "g"), Removed("j", "e"),
                   Joined("j", "a"), Formed("j", 4, {"a", "f", "g"}, 0, 60)});
  EXPECT_EQ(state.FindJob("j")->epoch_worlds,
            (Links{{0, 4}, {40, 2}, {60, 3}}));
  // Formed again at 60 with 2: the world of 3 served nothing.
  ApplyAll(state, {Removed("j", "g"), Joined("j", "a"), Joined("j", "f"),
                   Formed("j", 5, {"a", "f"}, 0, 60)});
  EXPECT_EQ(state.FindJob("j")->epoch_worlds, (Links{{0, 4}, {40, 2}}));
  absl::StatusOr<CoordinatorState> copy =
      CoordinatorState::FromSnapshot(state.ToSnapshot(9));
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->FindJob("j")->epoch_worlds, (Links{{0, 4}, {40, 2}}));
  EXPECT_EQ(Serialized(*copy), Serialized(state));
  // In a later epoch the last world served it from its start.
  ApplyAll(state, {Committed("j", 1, 30), Joined("j", "h"), Joined("j", "i"),
                   Removed("j", "f"), Joined("j", "a"),
                   Formed("j", 6, {"a", "h", "i"}, 1, 30)});
  EXPECT_EQ(state.FindJob("j")->epoch_worlds, (Links{{0, 2}, {30, 3}}));
}

// Requested ranks go to the first member of the world asking for them;
// the rest fill the free ranks in join order.
TEST(CoordinatorStateTest, NextWorldGrantsRequestedRanks) {
  JobState job;
  job.AddMember("a", 0, 2);
  job.AddMember("b");
  job.AddMember("c", 0, 0);
  job.AddMember("d", 0, 0);  // Taken by c: d falls back.
  job.AddMember("e", 0, 9);  // Outside the world: falls back.
  EXPECT_EQ(job.NextWorld(5),
            (std::vector<std::string>{"c", "b", "a", "d", "e"}));
  // Only the first `size` members take part; a's rank 2 is out of range.
  EXPECT_EQ(job.NextWorld(2), (std::vector<std::string>{"a", "b"}));
  job.RemoveMember("c");
  EXPECT_EQ(job.NextWorld(4), (std::vector<std::string>{"d", "b", "a", "e"}));
  EXPECT_EQ(job.requested_ranks.count("c"), 0u);
}

// The record a coordinator writes names the world by its size: a few bytes
// at any size (one etcd request holds it), replayed into the world the
// forming coordinator saw, requested ranks included.
TEST(CoordinatorStateTest, GenerationFormedBySizeIsTheNextWorld) {
  constexpr uint32_t kWorld = 100000;
  CoordinatorState state;
  ApplyAll(state, {Created("j", NormalSpec(1000000, kWorld))});
  for (uint32_t i = 0; i < kWorld; ++i) {
    StateUpdate joined = Joined("j", "member-" + std::to_string(i));
    // Every tenth member asks for the rank of the one after it.
    if (i % 10 == 0) {
      joined.mutable_member_joined()->set_requested_rank(i + 1);
    }
    ASSERT_TRUE(state.Apply(joined).ok());
  }
  const std::vector<std::string> expected =
      state.jobs().at("j")->NextWorld(kWorld);
  StateUpdate formed;
  formed.mutable_generation_formed()->set_job_id("j");
  formed.mutable_generation_formed()->set_generation(1);
  formed.mutable_generation_formed()->set_world_size(kWorld + 1);
  EXPECT_EQ(state.Apply(formed).code(), absl::StatusCode::kFailedPrecondition);
  formed.mutable_generation_formed()->set_world_size(kWorld);
  EXPECT_LT(formed.ByteSizeLong(), 32u);
  ApplyAll(state, {formed});
  EXPECT_EQ(state.jobs().at("j")->world, expected);
  EXPECT_EQ(state.jobs().at("j")->RankOf("member-0"), 1u);
}

TEST(CoordinatorStateTest, ReplayingUpdatesRebuildsTheSameState) {
  const std::vector<StateUpdate> updates = {Created("x", NormalSpec(10, 1)),
                                            Created("y", NormalSpec(20, 2)),
                                            Joined("y", "m0"),
                                            Joined("x", "m"),
                                            Formed("x", 1, {"m"}),
                                            Committed("x", 0, 4),
                                            Deleted("y")};
  CoordinatorState first, second;
  ApplyAll(first, updates);
  ApplyAll(second, updates);
  EXPECT_EQ(Serialized(first), Serialized(second));
  // And the state is what the updates say, not merely the same twice.
  EXPECT_EQ(first.FindJob("y"), nullptr);
  EXPECT_EQ(first.FindJob("x")->committed_position, 4u);
  EXPECT_EQ(first.FindJob("x")->incarnation, 1u);
}

// A job deleted and re-created under the same id is another incarnation,
// and its generations start above every generation given out before.
TEST(CoordinatorStateTest, ReCreatedJobHasNewIdentityAndHigherGenerations) {
  CoordinatorState state;
  ApplyAll(state, {Created("x", NormalSpec(10, 1)), Joined("x", "a"),
                   Formed("x", 1, {"a"}), Deleted("x"),
                   Created("x", NormalSpec(10, 1)), Joined("x", "a")});
  const JobState& job = *state.FindJob("x");
  EXPECT_EQ(job.incarnation, 2u);
  EXPECT_EQ(job.generation, 0u);
  EXPECT_TRUE(job.PredatesJob(1));   // The deleted job's generation.
  EXPECT_FALSE(job.PredatesJob(0));  // "No generation yet" is not a claim.
  EXPECT_FALSE(job.PredatesJob(2));
  // Generation 1 cannot be formed again, whatever job asks.
  EXPECT_EQ(state.Apply(Formed("x", 1, {"a"})).code(),
            absl::StatusCode::kFailedPrecondition);
  ApplyAll(state, {Formed("x", 2, {"a"})});
}

struct Unfit {
  std::string name;
  StateUpdate update;
};

// Each update below passes a checksum but does not fit the state built by
// Base(): Apply refuses it with a status and changes nothing.
CoordinatorState Base() {
  CoordinatorState state;
  ApplyAll(state, {Created("j", NormalSpec(100, 2)), Joined("j", "a"),
                   Joined("j", "b"), Formed("j", 1, {"a", "b"}),
                   Committed("j", 0, 10), Created("idle", NormalSpec(5, 1))});
  return state;
}

std::vector<Unfit> UnfitUpdates() {
  std::vector<Unfit> all;
  StateUpdate unknown;
  unknown.GetReflection()->MutableUnknownFields(&unknown)->AddVarint(99, 1);
  all.push_back({"unknown update type", unknown});
  all.push_back({"empty update", StateUpdate()});
  all.push_back({"duplicate JobCreated", Created("j", NormalSpec(100, 2))});
  StateUpdate zero_world = Created("z", NormalSpec(100, 2));
  zero_world.mutable_job_created()->mutable_spec()->set_world_size(0);
  all.push_back({"JobCreated with world_size 0", zero_world});
  StateUpdate not_normal = Created("n", NormalSpec(100, 2));
  not_normal.mutable_job_created()->mutable_spec()->clear_tail();
  all.push_back({"JobCreated with a spec not in normal form", not_normal});
  all.push_back({"JobCreated with a bad id", Created("a b", NormalSpec(1, 1))});
  all.push_back({"MemberJoined for an unknown job", Joined("missing", "a")});
  all.push_back({"MemberJoined twice", Joined("j", "a")});
  all.push_back({"MemberJoined past max_world_size", Joined("j", "c")});
  all.push_back({"MemberJoined with a bad id", Joined("idle", "a b")});
  all.push_back({"MemberRemoved of a non-member", Removed("j", "zz")});
  all.push_back({"MemberRemoved for an unknown job", Removed("missing", "a")});
  all.push_back(
      {"GenerationFormed not advancing", Formed("j", 1, {"a", "b"}, 0, 10)});
  all.push_back(
      {"GenerationFormed for an unknown job", Formed("missing", 5, {"a"})});
  all.push_back(
      {"GenerationFormed with a non-member", Formed("idle", 5, {"ghost"})});
  all.push_back(
      {"GenerationFormed below the world size", Formed("idle", 5, {})});
  all.push_back({"GenerationFormed not at the committed position",
                 Formed("j", 5, {"a", "b"}, 0, 0)});
  all.push_back({"ProgressCommitted without a world", Committed("idle", 0, 1)});
  all.push_back({"ProgressCommitted going back", Committed("j", 0, 8)});
  all.push_back(
      {"ProgressCommitted off a round boundary", Committed("j", 0, 11)});
  all.push_back({"ProgressCommitted past the epoch", Committed("j", 0, 102)});
  all.push_back(
      {"ProgressCommitted at the end, not normalised", Committed("j", 0, 100)});
  all.push_back({"ProgressCommitted past the last epoch",
                 Committed("j", uint64_t{1} << 31, 0)});
  all.push_back({"JobDeleted for an unknown job", Deleted("missing")});
  return all;
}

TEST(CoordinatorStateTest, RefusesUpdatesThatDoNotFitAndChangesNothing) {
  for (const Unfit& unfit : UnfitUpdates()) {
    CoordinatorState state = Base();
    const std::string before = Serialized(state);
    const absl::Status status = state.Apply(unfit.update);
    EXPECT_FALSE(status.ok()) << unfit.name;
    EXPECT_TRUE(status.code() == absl::StatusCode::kFailedPrecondition ||
                status.code() == absl::StatusCode::kInvalidArgument)
        << unfit.name << ": " << status;
    EXPECT_EQ(state.Check(unfit.update).code(), status.code()) << unfit.name;
    EXPECT_EQ(Serialized(state), before) << unfit.name;
  }
}

TEST(CoordinatorStateTest, UnknownUpdateTypeNamesANewerVersion) {
  StateUpdate unknown;
  unknown.GetReflection()->MutableUnknownFields(&unknown)->AddVarint(99, 1);
  EXPECT_NE(CoordinatorState().Check(unknown).message().find("newer"),
            std::string::npos);
}

// The end of the last epoch is stored as it is (there is no next epoch) and
// a world re-formed there has an empty layout rather than an underflow.
TEST(CoordinatorStateTest, EndOfTheLastEpochIsValidProgress) {
  constexpr uint64_t kLastEpoch = (uint64_t{1} << 31) - 1;
  CoordinatorState state;
  ApplyAll(state, {Created("j", NormalSpec(10, 4, 1, 4)), Joined("j", "a"),
                   Joined("j", "b"), Joined("j", "c"), Joined("j", "d"),
                   Formed("j", 1, {"a", "b", "c", "d"}),
                   Committed("j", kLastEpoch, 12), Removed("j", "d"),
                   Formed("j", 2, {"a", "b", "c"}, kLastEpoch, 12)});
  EXPECT_EQ(state.FindJob("j")->generation_base, 12u);
  absl::StatusOr<CoordinatorState> copy =
      CoordinatorState::FromSnapshot(state.ToSnapshot(9));
  EXPECT_TRUE(copy.ok()) << copy.status();
}

StateSnapshot GoodSnapshot() {
  CoordinatorState state;
  ApplyAll(state, {Created("j", NormalSpec(100, 2)), Joined("j", "a"),
                   Joined("j", "b"), Formed("j", 1, {"a", "b"}),
                   Committed("j", 0, 10)});
  return state.ToSnapshot(5);
}

TEST(CoordinatorStateTest, RefusesInconsistentSnapshots) {
  ASSERT_TRUE(CoordinatorState::FromSnapshot(GoodSnapshot()).ok());
  struct Damage {
    std::string name;
    void (*apply)(StateSnapshot&);
  };
  const std::vector<Damage> damages = {
      {"world_size 0",
       [](StateSnapshot& s) {
         s.mutable_jobs(0)->mutable_spec()->set_world_size(0);
       }},
      {"job listed twice", [](StateSnapshot& s) { *s.add_jobs() = s.jobs(0); }},
      {"world member not joined",
       [](StateSnapshot& s) { s.mutable_jobs(0)->set_world(1, "ghost"); }},
      {"member listed twice",
       [](StateSnapshot& s) { s.mutable_jobs(0)->set_members(1, "a"); }},
      {"generation above the last one",
       [](StateSnapshot& s) { s.mutable_jobs(0)->set_generation(7); }},
      {"world without generation",
       [](StateSnapshot& s) { s.mutable_jobs(0)->set_generation(0); }},
      {"incarnation above the last one",
       [](StateSnapshot& s) { s.mutable_jobs(0)->set_incarnation(9); }},
      {"committed position off the layout",
       [](StateSnapshot& s) { s.mutable_jobs(0)->set_committed_position(11); }},
      {"bad job id",
       [](StateSnapshot& s) { s.mutable_jobs(0)->set_job_id(""); }},
      {"world member awaiting re-join",
       [](StateSnapshot& s) { s.mutable_jobs(0)->add_awaiting_rejoin("a"); }},
      {"non-member awaiting re-join",
       [](StateSnapshot& s) {
         s.mutable_jobs(0)->add_awaiting_rejoin("ghost");
       }},
      {"launch world size of a non-member",
       [](StateSnapshot& s) {
         (*s.mutable_jobs(0)->mutable_member_launch_world_sizes())["ghost"] = 2;
       }},
      {"launch world size past the job's maximum",
       [](StateSnapshot& s) {
         (*s.mutable_jobs(0)->mutable_member_launch_world_sizes())["a"] = 99;
       }},
  };
  for (const Damage& damage : damages) {
    StateSnapshot snapshot = GoodSnapshot();
    damage.apply(snapshot);
    absl::StatusOr<CoordinatorState> state =
        CoordinatorState::FromSnapshot(snapshot);
    EXPECT_FALSE(state.ok()) << damage.name;
  }
}

// Snapshots written before incarnations existed carry no counters: their
// jobs are numbered in order and generations continue above theirs.
TEST(CoordinatorStateTest, LoadsSnapshotsWithoutCounters) {
  StateSnapshot snapshot = GoodSnapshot();
  snapshot.clear_last_generation();
  snapshot.clear_last_incarnation();
  snapshot.mutable_jobs(0)->clear_incarnation();
  absl::StatusOr<CoordinatorState> state =
      CoordinatorState::FromSnapshot(snapshot);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->FindJob("j")->incarnation, 1u);
  EXPECT_EQ(state->last_generation(), 1u);
}

}  // namespace
}  // namespace shard::server

#include "server/coordinator_state.h"

#include "gtest/gtest.h"

namespace shard::server {
namespace {

using shard::state::v1::StateUpdate;

StateUpdate Created(const std::string& job, uint32_t world) {
  StateUpdate update;
  update.mutable_job_created()->set_job_id(job);
  update.mutable_job_created()->mutable_spec()->set_dataset_size(10);
  update.mutable_job_created()->mutable_spec()->set_world_size(world);
  return update;
}

StateUpdate Joined(const std::string& job, const std::string& member) {
  StateUpdate update;
  update.mutable_member_joined()->set_job_id(job);
  update.mutable_member_joined()->set_member_id(member);
  return update;
}

StateUpdate Removed(const std::string& job, const std::string& member) {
  StateUpdate update;
  update.mutable_member_removed()->set_job_id(job);
  update.mutable_member_removed()->set_member_id(member);
  return update;
}

StateUpdate Formed(const std::string& job, uint64_t generation,
                   std::vector<std::string> members, uint64_t epoch,
                   uint64_t base) {
  StateUpdate update;
  auto* formed = update.mutable_generation_formed();
  formed->set_job_id(job);
  formed->set_generation(generation);
  for (const std::string& m : members) formed->add_members(m);
  formed->set_epoch(epoch);
  formed->set_base_position(base);
  return update;
}

TEST(CoordinatorStateTest, WorldsFormBreakAndReform) {
  CoordinatorState state;
  state.Apply(Created("j", 2));
  ASSERT_NE(state.FindJob("j"), nullptr);
  state.Apply(Joined("j", "a"));
  state.Apply(Joined("j", "b"));
  EXPECT_FALSE(state.FindJob("j")->world_formed());  // Joined, not formed.
  state.Apply(Formed("j", 1, {"a", "b"}, 0, 0));
  EXPECT_TRUE(state.FindJob("j")->world_formed());
  EXPECT_EQ(state.FindJob("j")->RankOf("b"), 1u);
  EXPECT_EQ(state.FindJob("j")->RankOf("c"), std::nullopt);
  // Losing a member of the world breaks it; the generation number stays
  // until the next world forms.
  state.Apply(Removed("j", "a"));
  EXPECT_FALSE(state.FindJob("j")->world_formed());
  EXPECT_EQ(state.FindJob("j")->generation, 1u);
  state.Apply(Joined("j", "c"));
  state.Apply(Formed("j", 2, {"b", "c"}, 3, 40));
  const JobState& job = *state.FindJob("j");
  EXPECT_EQ(job.RankOf("b"), 0u);
  EXPECT_EQ(job.RankOf("c"), 1u);
  EXPECT_EQ(job.generation_epoch, 3u);
  EXPECT_EQ(job.generation_base, 40u);
}

TEST(CoordinatorStateTest, SnapshotRoundTrips) {
  CoordinatorState state;
  state.Apply(Created("j", 2));
  state.Apply(Joined("j", "a"));
  state.Apply(Joined("j", "b"));
  state.Apply(Formed("j", 1, {"a", "b"}, 0, 0));
  const CoordinatorState copy =
      CoordinatorState::FromSnapshot(state.ToSnapshot(4));
  const JobState& job = *copy.FindJob("j");
  EXPECT_EQ(job.members, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(job.world, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(job.generation, 1u);
}

TEST(CoordinatorStateTest, ReplayingUpdatesRebuildsTheSameState) {
  const std::vector<StateUpdate> updates = {Created("x", 1), Created("y", 2),
                                            Joined("y", "m0"), Joined("x", "m"),
                                            Formed("x", 1, {"m"}, 0, 0)};
  CoordinatorState first, second;
  for (const StateUpdate& u : updates) first.Apply(u);
  for (const StateUpdate& u : updates) second.Apply(u);
  ASSERT_EQ(first.jobs().size(), second.jobs().size());
  for (const auto& [id, job] : first.jobs()) {
    const JobState* other = second.FindJob(id);
    ASSERT_NE(other, nullptr);
    EXPECT_EQ(job.members, other->members);
    EXPECT_EQ(job.generation, other->generation);
  }
}

TEST(CoordinatorStateDeathTest, RefusesAnUpdateThatDoesNotFit) {
  CoordinatorState state;
  EXPECT_DEATH(state.Apply(Joined("missing", "a")), "unknown job");
}

TEST(CoordinatorStateTest, DeletedJobsLeaveNoTraceInSnapshots) {
  CoordinatorState state;
  state.Apply(Created("gone", 2));
  state.Apply(Joined("gone", "a"));
  state.Apply(Created("kept", 1));
  StateUpdate deleted;
  deleted.mutable_job_deleted()->set_job_id("gone");
  state.Apply(deleted);
  EXPECT_EQ(state.FindJob("gone"), nullptr);
  ASSERT_NE(state.FindJob("kept"), nullptr);
  const CoordinatorState restored =
      CoordinatorState::FromSnapshot(state.ToSnapshot(7));
  EXPECT_EQ(restored.FindJob("gone"), nullptr);
  EXPECT_NE(restored.FindJob("kept"), nullptr);
  // The id is free again.
  state.Apply(Created("gone", 3));
  EXPECT_EQ(state.FindJob("gone")->spec.world_size(), 3u);
  EXPECT_TRUE(state.FindJob("gone")->members.empty());
}

}  // namespace
}  // namespace shard::server

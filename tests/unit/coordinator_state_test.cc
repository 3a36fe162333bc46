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

StateUpdate Joined(const std::string& job, const std::string& member,
                   uint32_t rank) {
  StateUpdate update;
  update.mutable_member_joined()->set_job_id(job);
  update.mutable_member_joined()->set_member_id(member);
  update.mutable_member_joined()->set_rank(rank);
  return update;
}

TEST(CoordinatorStateTest, GenerationAdvancesWhenTheWorldForms) {
  CoordinatorState state;
  state.Apply(Created("j", 2));
  ASSERT_NE(state.FindJob("j"), nullptr);
  EXPECT_EQ(state.FindJob("j")->generation, 0u);
  state.Apply(Joined("j", "a", 0));
  EXPECT_FALSE(state.FindJob("j")->world_formed());
  EXPECT_EQ(state.FindJob("j")->generation, 0u);
  state.Apply(Joined("j", "b", 1));
  EXPECT_TRUE(state.FindJob("j")->world_formed());
  EXPECT_EQ(state.FindJob("j")->generation, 1u);
  EXPECT_EQ(state.FindJob("j")->RankOf("b"), 1u);
  EXPECT_EQ(state.FindJob("j")->RankOf("c"), std::nullopt);
}

TEST(CoordinatorStateTest, ReplayingUpdatesRebuildsTheSameState) {
  const std::vector<StateUpdate> updates = {Created("x", 1), Created("y", 2),
                                            Joined("y", "m0", 0),
                                            Joined("x", "m", 0)};
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
  EXPECT_DEATH(state.Apply(Joined("missing", "a", 0)), "unknown job");
}

}  // namespace
}  // namespace shard::server

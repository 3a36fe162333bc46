#include "tests/support/state_updates.h"

#include <cstdlib>

#include "common/plan/spec/job_spec.h"

namespace shard::testing {

using shard::state::v1::StateUpdate;

shard::v1::JobSpec NormalSpec(uint64_t dataset_size, uint32_t world_size,
                              uint32_t min_world_size,
                              uint32_t max_world_size) {
  shard::v1::JobSpec spec;
  spec.set_dataset_size(dataset_size);
  spec.set_world_size(world_size);
  spec.set_min_world_size(min_world_size);
  spec.set_max_world_size(max_world_size);
  absl::StatusOr<shard::v1::JobSpec> normal =
      plan::NormalizeJobSpec(spec, UINT64_MAX);
  if (!normal.ok()) std::abort();  // A test asked for an invalid spec.
  return *normal;
}

StateUpdate Created(const std::string& job, const shard::v1::JobSpec& spec) {
  StateUpdate update;
  update.mutable_job_created()->set_job_id(job);
  *update.mutable_job_created()->mutable_spec() = spec;
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
                   const std::vector<std::string>& members, uint64_t epoch,
                   uint64_t base) {
  StateUpdate update;
  auto* formed = update.mutable_generation_formed();
  formed->set_job_id(job);
  formed->set_generation(generation);
  for (const std::string& member : members) formed->add_members(member);
  formed->set_epoch(epoch);
  formed->set_base_position(base);
  return update;
}

StateUpdate Committed(const std::string& job, uint64_t epoch,
                      uint64_t position) {
  StateUpdate update;
  update.mutable_progress_committed()->set_job_id(job);
  update.mutable_progress_committed()->set_epoch(epoch);
  update.mutable_progress_committed()->set_position(position);
  return update;
}

StateUpdate Deleted(const std::string& job) {
  StateUpdate update;
  update.mutable_job_deleted()->set_job_id(job);
  return update;
}

}  // namespace shard::testing

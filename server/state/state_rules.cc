#include "server/state/state_rules.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "common/plan/spec/job_spec.h"
#include "google/protobuf/util/message_differencer.h"

namespace shard::server {

absl::Status Unfit(absl::string_view what) {
  return absl::FailedPreconditionError(what);
}

absl::Status CheckNormalSpec(const shard::v1::JobSpec& spec) {
  absl::StatusOr<shard::v1::JobSpec> normal =
      plan::NormalizeJobSpec(spec, UINT64_MAX);
  if (!normal.ok()) return normal.status();
  if (!google::protobuf::util::MessageDifferencer::Equals(*normal, spec)) {
    return Unfit(absl::StrCat("job spec {", plan::DescribeJobSpec(spec),
                              "} is not in normal form"));
  }
  return absl::OkStatus();
}

absl::Status CheckMemberList(const std::vector<std::string>& members,
                             uint32_t max, absl::string_view what) {
  if (members.size() > max) {
    return Unfit(absl::StrCat(what, " has ", members.size(),
                              " members, more than the job's maximum ", max));
  }
  std::set<absl::string_view> seen;
  for (const std::string& member : members) {
    if (absl::Status s = plan::ValidateMemberId(member); !s.ok()) return s;
    if (!seen.insert(member).second) {
      return Unfit(absl::StrCat(what, " lists member \"", member, "\" twice"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckWorld(const JobState& job,
                        const std::vector<std::string>& world) {
  if (absl::Status s =
          CheckMemberList(world, job.spec.max_world_size(), "the world");
      !s.ok()) {
    return s;
  }
  for (const std::string& member : world) {
    if (!job.IsMember(member)) {
      return Unfit(absl::StrCat("the world includes \"", member,
                                "\", which is not a joined member"));
    }
  }
  const uint32_t min = job.MinWorldSize();
  if (world.size() < min) {
    return Unfit(absl::StrCat("a world of ", world.size(),
                              " members is below the minimum of ", min));
  }
  return absl::OkStatus();
}

absl::Status CheckProgress(const JobState& job, uint64_t epoch,
                           uint64_t position) {
  if (absl::Status s = plan::ValidateEpoch(epoch); !s.ok()) return s;
  absl::StatusOr<plan::ShardLayout> world_layout = job.WorldLayout(epoch);
  if (!world_layout.ok()) return Unfit(world_layout.status().message());
  const plan::ShardLayout& layout = *world_layout;
  if (!layout.IsRoundBoundary(position) ||
      (position == layout.total() && epoch != plan::kMaxEpoch &&
       position != layout.base())) {
    return Unfit(absl::StrCat(
        "position ", position, " of epoch ", epoch,
        " is not a round boundary of the layout (base ", layout.base(),
        ", world size ", layout.world_size(), ", end ", layout.total(), ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckLaunchWorldSize(const shard::v1::JobSpec& spec,
                                  const std::string& member, uint32_t launch) {
  if (launch == 0 ||
      (spec.min_world_size() <= launch && launch <= spec.max_world_size())) {
    return absl::OkStatus();
  }
  return Unfit(absl::StrCat("member \"", member,
                            "\" was launched in a world of ", launch,
                            ", outside the job's ", spec.min_world_size(), "..",
                            spec.max_world_size()));
}

}  // namespace shard::server

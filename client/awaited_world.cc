#include "client/awaited_world.h"

#include "absl/strings/str_cat.h"

namespace shard::client {

namespace {

std::string RuleText(shard::v1::Job::AwaitedBy by) {
  switch (by) {
    case shard::v1::Job::AWAITED_BY_SPEC_WORLD_SIZE:
      return "the job's world size";
    case shard::v1::Job::AWAITED_BY_LAUNCH_SIZE:
      return "the launch's size";
    case shard::v1::Job::AWAITED_BY_MIN_WORLD_SIZE:
      return "the elastic minimum";
    default:
      return "";
  }
}

}  // namespace

AwaitedWorld AwaitedWorldOf(const shard::v1::Job& job) {
  if (job.world_size_awaited() > 0) {
    return {job.world_size_awaited(), RuleText(job.world_size_awaited_by())};
  }
  return {job.spec().min_world_size() > 0 ? job.spec().min_world_size()
                                          : job.spec().world_size(),
          ""};
}

std::string MissingMembersText(const shard::v1::Job& job) {
  const AwaitedWorld awaited = AwaitedWorldOf(job);
  const uint64_t joined = job.joined_members();
  const uint64_t missing = awaited.size > joined ? awaited.size - joined : 0;
  return absl::StrCat(missing, " more member", missing == 1 ? "" : "s", " (",
                      joined, " of ", awaited.size, " joined",
                      awaited.rule.empty() ? ""
                                           : absl::StrCat("; ", awaited.size,
                                                          ": ", awaited.rule),
                      ")");
}

}  // namespace shard::client

#include "server/lease_table.h"

#include <algorithm>

namespace shard::server {
namespace {

// Erases every (job_id, member) entry of a per-member map.
template <typename Value>
void EraseJobEntries(
    const std::string& job_id,
    std::map<std::pair<std::string, std::string>, Value>& entries) {
  entries.erase(entries.lower_bound({job_id, ""}),
                entries.lower_bound({job_id + '\0', ""}));
}

}  // namespace

absl::Duration HeartbeatPace(uint64_t ranks, uint64_t max_rate) {
  if (max_rate == 0) return absl::ZeroDuration();
  return absl::Seconds(static_cast<double>(ranks) /
                       static_cast<double>(max_rate));
}

absl::Duration LeaseAtPace(absl::Duration lease, absl::Duration pace) {
  return std::max(lease, kPacesPerLease * pace);
}

void LeaseTable::Renew(const std::string& job_id,
                       const std::string& member_id) {
  last_seen_[{job_id, member_id}].at = Now();
}

void LeaseTable::RenewAtPace(const std::string& job_id,
                             const std::string& member_id,
                             absl::Duration pace) {
  last_seen_[{job_id, member_id}] = {Now(), pace};
}

void LeaseTable::BeginWait(const std::string& job_id,
                           const std::string& member_id) {
  ++waiting_joins_[{job_id, member_id}];
}

void LeaseTable::EndWait(const std::string& job_id,
                         const std::string& member_id) {
  auto waiting = waiting_joins_.find({job_id, member_id});
  if (waiting != waiting_joins_.end() && --waiting->second == 0) {
    waiting_joins_.erase(waiting);
  }
}

bool LeaseTable::Expired(const std::string& job_id,
                         const std::string& member_id, absl::Duration lease) {
  const MemberKey key(job_id, member_id);
  auto seen = last_seen_.find(key);
  if (seen == last_seen_.end()) {
    last_seen_[key] = {Now(), absl::ZeroDuration()};
    return false;
  }
  if (waiting_joins_.count(key) > 0) {
    seen->second.at = Now();
    return false;
  }
  return Now() - seen->second.at > LeaseAtPace(lease, seen->second.pace);
}

void LeaseTable::Forget(const std::string& job_id,
                        const std::string& member_id) {
  last_seen_.erase({job_id, member_id});
}

bool LeaseTable::JobIdle(const std::string& job_id, bool has_members,
                         absl::Duration ttl) {
  auto [activity, first_seen] = job_activity_.try_emplace(job_id, Now());
  if (has_members) {
    activity->second = Now();  // Idle time counts from the last member.
    return false;
  }
  return !first_seen && Now() - activity->second >= ttl;
}

void LeaseTable::ForgetJob(const std::string& job_id) {
  EraseJobEntries(job_id, last_seen_);
  job_activity_.erase(job_id);
}

}  // namespace shard::server

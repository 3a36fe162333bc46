#include "server/core/lease_table.h"

#include <algorithm>
#include <string>

namespace shard::server {
namespace {

// The member's entry in a PerMember map, if it has one.
template <typename Map>
typename Map::mapped_type::mapped_type* Find(Map& entries,
                                             const std::string& job_id,
                                             const std::string& member_id) {
  auto job = entries.find(job_id);
  if (job == entries.end()) return nullptr;
  auto member = job->second.find(member_id);
  return member == job->second.end() ? nullptr : &member->second;
}

// Erases the member's entry; the job's, once it holds no member.
template <typename Map>
void Erase(Map& entries, const std::string& job_id,
           const std::string& member_id) {
  auto job = entries.find(job_id);
  if (job == entries.end()) return;
  job->second.erase(member_id);
  if (job->second.empty()) entries.erase(job);
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
  last_seen_[job_id][member_id].at = Now();
}

void LeaseTable::RenewAtPace(const std::string& job_id,
                             const std::string& member_id,
                             absl::Duration pace) {
  last_seen_[job_id][member_id] = {Now(), pace};
}

void LeaseTable::BeginWait(const std::string& job_id,
                           const std::string& member_id) {
  ++waiting_joins_[job_id][member_id];
}

void LeaseTable::EndWait(const std::string& job_id,
                         const std::string& member_id) {
  int* waiting = Find(waiting_joins_, job_id, member_id);
  if (waiting != nullptr && --*waiting == 0) {
    Erase(waiting_joins_, job_id, member_id);
  }
}

bool LeaseTable::Expired(const std::string& job_id,
                         const std::string& member_id, absl::Duration lease) {
  Seen* seen = Find(last_seen_, job_id, member_id);
  if (seen == nullptr) {
    last_seen_[job_id][member_id] = {Now(), absl::ZeroDuration()};
    return false;
  }
  if (Find(waiting_joins_, job_id, member_id) != nullptr) {
    seen->at = Now();
    return false;
  }
  return Now() - seen->at > LeaseAtPace(lease, seen->pace);
}

void LeaseTable::Forget(const std::string& job_id,
                        const std::string& member_id) {
  Erase(last_seen_, job_id, member_id);
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
  last_seen_.erase(job_id);
  job_activity_.erase(job_id);
}

}  // namespace shard::server

// Liveness bookkeeping of a coordinator's members and jobs: when each
// member was last heard from and the heartbeat pace it was asked for,
// which members wait in a join (alive however long that takes), and when
// each job was last used. Everything is measured on a lease clock: the
// injected clock less the time this process itself could not run
// (AddStall), so a stall of the coordinator is nobody's silence.
//
// Pure data, no thread and no lock: the owner calls it under its own lock.
// Not journaled: a restart gives every member a full lease and every job a
// full idle time again.
#ifndef SERVER_CORE_LEASE_TABLE_H_
#define SERVER_CORE_LEASE_TABLE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"

namespace shard::server {

// Leases this many of a member's heartbeat intervals long at least: a
// heartbeat late by one interval, or lost once, does not end a generation.
inline constexpr int kPacesPerLease = 3;

// The interval the coordinator asks each of `ranks` members to send its
// heartbeats at, so that they send at most `max_rate` a second in all;
// zero (each member's own interval) when `max_rate` is 0.
absl::Duration HeartbeatPace(uint64_t ranks, uint64_t max_rate);
// The lease of a member asked to heartbeat every `pace`: `lease`, or
// kPacesPerLease paces when that is longer.
absl::Duration LeaseAtPace(absl::Duration lease, absl::Duration pace);

class LeaseTable {
 public:
  using Clock = std::function<absl::Time()>;
  explicit LeaseTable(Clock now) : now_(std::move(now)) {}

  // The lease clock's time.
  absl::Time Now() const { return now_() - stalled_; }
  // `stalled` more of this process's own time must not count.
  void AddStall(absl::Duration stalled) { stalled_ += stalled; }

  // The member was heard from now; the pace it was last asked for stays.
  void Renew(const std::string& job_id, const std::string& member_id);
  // A heartbeat: heard from now and asked to send the next one after
  // `pace` (HeartbeatPace); its lease lasts at least LeaseAtPace of it
  // until its next heartbeat.
  void RenewAtPace(const std::string& job_id, const std::string& member_id,
                   absl::Duration pace);
  // A join of the member starts / stops waiting for its world (calls may
  // overlap: the member waits while any of them does).
  void BeginWait(const std::string& job_id, const std::string& member_id);
  void EndWait(const std::string& job_id, const std::string& member_id);
  // Whether the member's lease ran out: silent for longer than `lease`
  // (lengthened to LeaseAtPace of the pace it was last asked for) and not
  // waiting in a join. A member never seen (recovered, or added without
  // Renew) starts its lease now.
  bool Expired(const std::string& job_id, const std::string& member_id,
               absl::Duration lease);
  // The member is gone: forget when it was seen.
  void Forget(const std::string& job_id, const std::string& member_id);

  // A call named the job now.
  void TouchJob(const std::string& job_id) { job_activity_[job_id] = Now(); }
  // Whether the job has been idle for at least `ttl`: no member (a job with
  // members is in use now) and no call since. A job never seen starts its
  // idle time now.
  bool JobIdle(const std::string& job_id, bool has_members, absl::Duration ttl);
  // The job is gone: forget it and its members.
  void ForgetJob(const std::string& job_id);

 private:
  // Job id -> member id -> Value: a sweep of a job of 100,000 members
  // looks each up by hash, and a job is forgotten in one erase.
  template <typename Value>
  using PerMember =
      absl::flat_hash_map<std::string, absl::flat_hash_map<std::string, Value>>;
  struct Seen {
    absl::Time at;
    absl::Duration pace;  // What the member was asked for then.
  };

  Clock now_;
  absl::Duration stalled_;
  PerMember<Seen> last_seen_;
  PerMember<int> waiting_joins_;
  absl::flat_hash_map<std::string, absl::Time> job_activity_;
};

}  // namespace shard::server

#endif  // SERVER_CORE_LEASE_TABLE_H_

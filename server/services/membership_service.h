// The membership RPCs of shard.v1.Coordinator (JoinJob, Heartbeat, Leave)
// and the expiry of leases and idle jobs, over the coordinator's core: each
// request's shape is checked here, every decision is the core's
// (locked_core.h). A join that asks to wait is parked on its job without a
// thread until the world including the member formed; a member waiting
// there is alive however long the other ranks take.
//
// Thread-safe. Owns the thread that expires leases every lease / 4 (unless
// the options turn it off); the destructor stops it. The core must outlive
// this service.
#ifndef SERVER_SERVICES_MEMBERSHIP_SERVICE_H_
#define SERVER_SERVICES_MEMBERSHIP_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/core/coordinator_core.h"
#include "server/waiting/reply.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class MembershipService {
 public:
  explicit MembershipService(CoordinatorCore* core);
  ~MembershipService();
  MembershipService(const MembershipService&) = delete;
  MembershipService& operator=(const MembershipService&) = delete;

  // Joins and, if the request asks to wait, parks the call (no thread is
  // held) until the world including the member formed, the wait (at most
  // max_wait) ends, `call_deadline` passes, the core drains or the reply's
  // cancellation fires. RESOURCE_EXHAUSTED when it would wait while
  // max_waiting_calls calls already do (the member stays joined).
  void StartJoinJob(const shard::v1::JoinJobRequest& request,
                    absl::Time call_deadline,
                    Reply<shard::v1::JoinJobResponse> reply);
  absl::StatusOr<shard::v1::HeartbeatResponse> Heartbeat(
      const shard::v1::HeartbeatRequest& request);
  void StartLeave(const shard::v1::LeaveRequest& request,
                  Reply<shard::v1::LeaveResponse> reply);
  // Removes every member whose lease ran out (journaled like a Leave),
  // then deletes the jobs idle for idle_job_ttl and the costs no job names
  // (CostStore::ExpireUnclaimed). Members waiting in JoinJob
  // are alive. `stalled`: time since the last check during which this
  // process itself could not run; it is not counted against members (their
  // heartbeats could not be served) nor against idle jobs.
  void ExpireLeases(absl::Duration stalled = absl::ZeroDuration());
  // The interval each heartbeat's answer asks members to wait at least
  // now (HeartbeatPace of the ranks held).
  absl::Duration CurrentPace(LockedCore& core) const;
  // Jobs deleted because they stayed idle for idle_job_ttl (metrics).
  uint64_t idle_jobs_expired() const { return idle_jobs_expired_.load(); }

 private:
  // StartJoinJob once the spec's costs (if any) were checked.
  void Join(const shard::v1::JoinJobRequest& request,
            const std::optional<shard::v1::JobSpec>& spec,
            absl::Time call_deadline, Reply<shard::v1::JoinJobResponse> reply);
  // Deletes the jobs without members whose last call is idle_job_ttl ago.
  void ExpireIdleJobs(LockedCore& core);
  void LeaseLoop() ABSL_LOCKS_EXCLUDED(stop_mu_);

  CoordinatorCore* const core_;
  std::atomic<uint64_t> idle_jobs_expired_{0};
  absl::Mutex stop_mu_;
  bool stopping_ ABSL_GUARDED_BY(stop_mu_) = false;
  std::thread lease_thread_;
};

}  // namespace shard::server

#endif  // SERVER_SERVICES_MEMBERSHIP_SERVICE_H_

// Follows a coordinator cluster's leader key through an etcd watch, for a
// standby: each change (a leader elected, the key gone because its lease
// lapsed or was revoked) is reported as etcd makes it, so that a standby
// names the new leader and campaigns the moment the old one's key is gone,
// without polling for it.
//
// A thread opens the watch on the session's current member and, when it
// ends (the member went away, or was cancelled for not answering), opens
// it again from the revision after the last change seen, on whichever
// member the session uses then. A member that stalls without ending the
// stream delays the reports: the owner also reads the key now and then, and
// orders what it learns both ways by revision.
//
// Thread-safe. on_change runs on the watch's thread, never after the
// destructor returned.
#ifndef SERVER_REPLICATION_LEADER_WATCH_H_
#define SERVER_REPLICATION_LEADER_WATCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/replication/etcd_session.h"

namespace shard::server::replication {

class LeaderWatch {
 public:
  // The leader key at `revision`: the leader's identity, empty when the key
  // is gone.
  using OnChange =
      std::function<void(const std::string& identity, int64_t revision)>;

  // Watches from `start_revision` (the revision after a read of the key).
  // `session` must outlive the watch.
  LeaderWatch(EtcdSession* session, int64_t start_revision, OnChange on_change);
  // Cancels the watch and joins its thread.
  ~LeaderWatch() ABSL_LOCKS_EXCLUDED(mu_);
  LeaderWatch(const LeaderWatch&) = delete;
  LeaderWatch& operator=(const LeaderWatch&) = delete;

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // Reports the changes of one watch until it ends.
  void Follow(EtcdSession::PrefixWatch& watch);

  EtcdSession* const session_;
  const OnChange on_change_;
  // The revision the next watch starts from (the watch's thread only).
  int64_t next_revision_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // The open watch, for the destructor to cancel.
  EtcdSession::PrefixWatch* open_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::thread thread_;
};

}  // namespace shard::server::replication

#endif  // SERVER_REPLICATION_LEADER_WATCH_H_

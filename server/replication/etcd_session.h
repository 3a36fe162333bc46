// One coordinator replica's session with etcd (v3 API over the project's
// own gRPC): a lease that lives while the replica keeps it alive, a
// campaign for the coordinator cluster's leader key, and writes fenced by
// the leadership.
//
// Fencing: the leader key <prefix>leader is created with the session's
// lease, so it disappears when the lease lapses (the replica paused, was
// partitioned or died). Every write of a leader is one etcd Txn that first
// compares the leader key's create revision with the one its campaign won:
// a deposed leader's write, however late it arrives, finds another revision
// (or no key) and changes nothing. The leader key's value names the
// leader, so followers and refused campaigns can say who leads.
//
// Several etcd members: one channel each; a call that fails to reach its
// member, or gets no answer in time, moves the session to the next one, so
// the following call (the caller's retry) goes there: a member that does
// not answer is avoided until another fails. The calls that keep the
// leadership (KeepAlive, Campaign, the leader key's read, fenced writes,
// Compact, Revoke) are bounded by quick_timeout(), a quarter of the
// granted lease, so that a hung member (stopped, its disk stalled) is left
// well inside a leader's serving window; a fenced write tries member after
// member for up to Options::timeout.
//
// Thread-safe; every call is synchronous and bounded by Options::timeout.
// Errors: UNAVAILABLE when etcd cannot be reached (the message names etcd
// and the endpoint), FAILED_PRECONDITION when the leadership is not (or no
// longer) this session's, NOT_FOUND when the lease is gone.
#ifndef SERVER_REPLICATION_ETCD_SESSION_H_
#define SERVER_REPLICATION_ETCD_SESSION_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

namespace shard::server::replication {

// OK if etcd can grant a lease of `ttl` as asked: whole seconds, at least
// 1s; INVALID_ARGUMENT saying what to give otherwise.
absl::Status CheckLeaseTtl(absl::Duration ttl);

class EtcdSession {
 public:
  struct Options {
    // HOST:PORT of each etcd member's client endpoint (at least one).
    std::vector<std::string> endpoints;
    // PEM files for a TLS etcd: the CA of its certificates (empty:
    // plaintext) and, for client-certificate authentication, this
    // replica's certificate and key.
    std::string tls_ca_file;
    std::string tls_cert_file;
    std::string tls_key_file;
    // Every key of this coordinator cluster starts with it.
    std::string prefix = "/shard/";
    // The lease asked for: whole seconds, as etcd grants them. etcd may
    // grant more (its minimum, 1.5 election timeouts rounded up: 2 s with
    // etcd's defaults); granted_ttl() says what it granted.
    absl::Duration lease_ttl = absl::Seconds(5);
    // Bound of each call (of a fenced write: of all its attempts); the
    // calls that keep the leadership are bounded by quick_timeout().
    absl::Duration timeout = absl::Seconds(5);
  };
  // A won campaign: the leader key's create revision fences every write.
  struct Leadership {
    int64_t revision = 0;
    std::string identity;
  };

  // Connects and grants the session's lease. INVALID_ARGUMENT for bad
  // options (a lease under 1s or not whole seconds) or unreadable TLS
  // files.
  static absl::StatusOr<std::unique_ptr<EtcdSession>> Start(Options options);

  int64_t lease_id() const { return lease_id_; }
  // The TTL etcd granted the lease (at least options.lease_ttl): a leader
  // that cannot renew it for this long is deposed, so a replica's serving
  // gate is computed from it, never from the option.
  absl::Duration granted_ttl() const { return granted_ttl_; }
  // etcd members the session may call.
  size_t member_count() const { return members_.size(); }
  // Bound of one call that keeps the leadership: a quarter of the granted
  // lease, at most Options::timeout.
  absl::Duration quick_timeout() const;
  std::string leader_key() const { return options_.prefix + "leader"; }

  // Renews the lease once (a replica calls it every lease_ttl / 3).
  // NOT_FOUND when the lease already lapsed.
  absl::Status KeepAlive();
  // Ends the lease now: the leader key, if this session held it, goes.
  absl::Status Revoke();

  // Becomes the leader if nobody is: creates the leader key (value
  // `identity`) with the session's lease. FAILED_PRECONDITION naming the
  // current leader otherwise.
  absl::StatusOr<Leadership> Campaign(const std::string& identity);
  // The leader key as etcd holds it at `revision`: `identity` is empty
  // when there is no leader.
  struct LeaderKey {
    std::string identity;
    int64_t revision = 0;
  };
  absl::StatusOr<LeaderKey> ReadLeader();
  // The current leader's identity; NOT_FOUND when there is none.
  absl::StatusOr<std::string> Leader();

  // Puts every (key, value) and deletes every key starting with one of
  // `delete_prefixes`, in one Txn that succeeds only while `leadership`
  // holds: FAILED_PRECONDITION (nothing written) otherwise. Keys are
  // relative to the prefix. Returns the etcd revision the Txn made.
  absl::StatusOr<int64_t> FencedPut(
      const Leadership& leadership,
      const std::vector<std::pair<std::string, std::string>>& entries,
      const std::vector<std::pair<std::string, std::string>>& delete_ranges =
          {});
  // Discards etcd's history before `revision` (the current values stay),
  // so that superseded and deleted keys stop taking space. Compacting to
  // a revision already compacted is OK. Not fenced: it changes no value.
  absl::Status Compact(int64_t revision);
  // The (key, value) of the greatest key starting with `key_prefix`
  // (relative to the prefix, as is the key returned); nullopt when there
  // is none.
  absl::StatusOr<std::optional<std::pair<std::string, std::string>>> LastEntry(
      const std::string& key_prefix);
  // The first key after every key starting with `key_prefix` (the end of
  // their range): the prefix with its last byte below 0xff incremented,
  // "\0" (the end of the key space) when there is none.
  static std::string KeyAfterPrefix(std::string key_prefix);
  // The value of `key` (relative to the prefix); NOT_FOUND if absent.
  absl::StatusOr<std::string> Get(const std::string& key);
  // A key's value and the revision that last changed it.
  struct Entry {
    std::string value;
    int64_t mod_revision = 0;
  };
  // Get, with the key's mod revision.
  absl::StatusOr<Entry> GetEntry(const std::string& key);
  // Every (key, value) whose key starts with `key_prefix` (relative to the
  // session's prefix, as are the keys returned), in key order; read in
  // pages, all at one etcd revision, so that no answer outgrows a gRPC
  // message and the pages agree. That revision is `*revision` when it is
  // given and not 0 (several lists that agree), else the newest, stored in
  // `*revision` when given.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> List(
      const std::string& key_prefix, int64_t* revision = nullptr);

  // One change of a watched key.
  struct Change {
    std::string key;    // Relative to the session's prefix.
    std::string value;  // Empty for a deletion.
    bool deleted = false;
    int64_t revision = 0;  // The etcd revision that made it.
  };
  // The changes of the keys under one prefix (or of one key), from a
  // revision on.
  class PrefixWatch {
   public:
    ~PrefixWatch();
    // Blocks for the next changes, in revision order; the status that
    // ended the watch (Cancel: CANCELLED; etcd gone: UNAVAILABLE; history
    // compacted past the start: DATA_LOSS).
    absl::StatusOr<std::vector<Change>> Next();
    // Ends the watch; a Next() blocked in another thread returns.
    void Cancel() { context_.TryCancel(); }

   private:
    friend class EtcdSession;
    PrefixWatch() = default;
    // Finishes the stream once; its status.
    grpc::Status Finish();

    grpc::ClientContext context_;
    bool finished_ = false;
    std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest,
                                             etcdserverpb::WatchResponse>>
        stream_;
    size_t prefix_size_ = 0;
    std::string endpoint_;
  };
  // Watches the keys under `key_prefix` from `start_revision` on (puts
  // only). UNAVAILABLE if etcd does not accept the watch within the full
  // bound.
  absl::StatusOr<std::unique_ptr<PrefixWatch>> Watch(
      const std::string& key_prefix, int64_t start_revision);
  // Watches `key` alone from `start_revision` on, deletions included.
  absl::StatusOr<std::unique_ptr<PrefixWatch>> WatchKey(const std::string& key,
                                                        int64_t start_revision);

 private:
  // One etcd member's stubs.
  struct Member {
    std::string endpoint;
    std::unique_ptr<etcdserverpb::KV::Stub> kv;
    std::unique_ptr<etcdserverpb::Lease::Stub> lease;
    std::unique_ptr<etcdserverpb::Watch::Stub> watch;
  };

  explicit EtcdSession(Options options);
  // The member calls go to now.
  Member& member() { return members_[current_.load() % members_.size()]; }
  // Which bound a call's context has: quick_timeout() or Options::timeout.
  enum class Bound { kQuick, kFull };
  std::unique_ptr<grpc::ClientContext> Context(Bound bound) const;
  // An etcd call's failure, naming etcd, the member and the call; moves
  // the session on to the next member when `used` was the current one.
  absl::Status EtcdError(const grpc::Status& status, const Member& used,
                         absl::string_view call);

  // Opens a watch of what `create` asks on the current member, waiting for
  // etcd to accept it for at most the full bound.
  absl::StatusOr<std::unique_ptr<PrefixWatch>> OpenWatch(
      etcdserverpb::WatchCreateRequest create);
  // [first, end) of the keys starting with `key_prefix`.
  std::pair<std::string, std::string> PrefixRange(
      const std::string& key_prefix) const;

  const Options options_;
  std::vector<Member> members_;  // Fixed after Start().
  std::atomic<size_t> current_{0};
  int64_t lease_id_ = 0;        // Fixed after Start().
  absl::Duration granted_ttl_;  // Fixed after Start().
};

}  // namespace shard::server::replication

#endif  // SERVER_REPLICATION_ETCD_SESSION_H_

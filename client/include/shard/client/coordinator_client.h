// C++ client of the shardd coordinator.
//
// Wraps the shard.v1 stub: every unary call gets a per-attempt deadline and
// is retried on UNAVAILABLE with backoff (RetryPolicy); other errors return
// at once with the coordinator's message. Thread-safe: one client may be used
// from many threads; streams it opens hold a reference to its channel.
#ifndef SHARD_CLIENT_COORDINATOR_CLIENT_H_
#define SHARD_CLIENT_COORDINATOR_CLIENT_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "shard/client/coordinator_channel.h"
#include "shard/client/coordinator_replicas.h"
#include "shard/client/retry.h"
#include "shard/client/shard_stream.h"
#include "shard/v1/shard.grpc.pb.h"

namespace shard::client {

struct ClientOptions {
  // Coordinator address, "HOST:PORT", or the replicas of a replicated
  // coordinator, "HOST:PORT,HOST:PORT,..." (calls go to the leader; see
  // CoordinatorReplicas).
  std::string address;
  // Deadline of one attempt of a unary call (JoinJob adds its wait).
  absl::Duration rpc_timeout = absl::Seconds(30);
  // Retries of UNAVAILABLE answers (coordinator down, starting or draining).
  RetryPolicy retry;
  // TLS / mutual TLS / bearer token (see coordinator_channel.h).
  ChannelSecurity security;
  // While Join() waits for the world: called every `waiting_report_every`
  // with a line such as "job j: waiting for 1 more member (2 of 3 joined),
  // generation 7, 590s left" (on the joining thread). Empty: silent.
  std::function<void(const std::string& line)> on_waiting;
  absl::Duration waiting_report_every = absl::Seconds(10);
};

// What a member learns by joining: its place in the job's current world.
struct Membership {
  std::string job_id;
  std::string member_id;
  uint32_t rank = 0;
  uint32_t world_size = 0;
  uint64_t generation = 0;
  shard::v1::JobSpec spec;
  // Where the job continues (last committed progress) at join time.
  uint64_t committed_epoch = 0;
  uint64_t committed_position = 0;
  // The job's incarnation (a job deleted and re-created under the same id
  // is another incarnation).
  uint64_t job_incarnation = 0;
  // The joining client's incarnation: CommitProgress and the store calls
  // name the member and it (a stale process of a member that re-joined is
  // refused).
  uint64_t incarnation = 0;
};

class CoordinatorClient {
 public:
  // Largest response the client accepts; bounds what a faulty peer can make
  // it hold.
  static constexpr int kMaxReceiveBytes = 8 << 20;
  // Most indices one Preview() page can hold within kMaxReceiveBytes,
  // whatever their size (a varint takes at most 10 bytes; 64 KiB spare for
  // the rest of the message).
  static constexpr uint32_t kMaxPreviewPage =
      (kMaxReceiveBytes - (64 << 10)) / 10;

  // Creates a client for options.address. Connects lazily: an unreachable
  // address shows up as UNAVAILABLE on the first call (after retries).
  // INVALID_ARGUMENT for an empty address or unusable security files.
  static absl::StatusOr<std::unique_ptr<CoordinatorClient>> Connect(
      const ClientOptions& options);

  absl::StatusOr<shard::v1::Job> CreateJob(const std::string& job_id,
                                           const shard::v1::JobSpec& spec);
  // Uploads a job's per-sample costs (balanced batches): `le32` holds
  // them as little-endian u32 values, `sha256` is their SHA-256 (64
  // lowercase hex digits; JobSpec.batches.costs_sha256 names them). Sent in
  // pieces of 1 MiB, each retried on UNAVAILABLE; a coordinator that has
  // them already answers the first piece as complete, and one that holds
  // less than was sent (it restarted or took over) is sent the rest from
  // what it holds. Give the costs' sum as JobSpec.batches.costs_total: it
  // sizes a token budget's default window.
  absl::Status PutCosts(const std::string& sha256, absl::string_view le32);
  absl::StatusOr<shard::v1::Job> GetJob(const std::string& job_id);
  absl::StatusOr<std::vector<shard::v1::Job>> ListJobs();

  // Joins `job_id` as `member_id` and waits up to `wait` for the world to
  // fill (joining again when the coordinator's own bound on one wait,
  // shardd --max-wait, ends first). With `spec`, creates the job if it does
  // not exist. Returns DEADLINE_EXCEEDED if the world is still incomplete
  // after `wait`. Reports the wait through ClientOptions::on_waiting. Joins
  // carry this client's random incarnation, so a restarted process (a new
  // client) joining under the same member id makes the world re-form.
  // `requested_rank` asks for a rank (JoinJobRequest.requested_rank): the
  // Membership says which one was given. Once this client joined a job, its
  // later joins of that job (re-joins) name the job incarnation it joined
  // until it calls Leave: NOT_FOUND if the job was deleted meanwhile, even
  // with `spec` (a member of a deleted job never re-creates it).
  absl::StatusOr<Membership> Join(
      const std::string& job_id, const std::string& member_id,
      const std::optional<shard::v1::JobSpec>& spec, absl::Duration wait,
      std::optional<uint32_t> requested_rank = std::nullopt);

  // Up to `limit` of `rank`'s indices of `epoch` from `offset`, without
  // joining. A `limit` above kMaxPreviewPage may not fit in a response for
  // jobs with large indices (RESOURCE_EXHAUSTED).
  absl::StatusOr<shard::v1::PreviewShardResponse> Preview(
      const std::string& job_id, uint32_t rank, uint64_t epoch, uint64_t offset,
      uint32_t limit);

  // Renews the member's lease. ABORTED when its generation ended or it is
  // no longer a member: re-join. NOT_FOUND when the job was deleted and
  // FAILED_PRECONDITION when a restarted process of the member joined
  // since: stop. When OK and `next_after` is given, sets it to how long
  // the coordinator asks the next heartbeat to wait at least (zero: the
  // caller's own interval; see shardd --max-heartbeat-rate).
  absl::Status Heartbeat(const Membership& membership,
                         absl::Duration* next_after = nullptr);
  // Leaves the job (clean exit); idempotent. Later joins of the job are
  // first joins again (see Join).
  absl::Status Leave(const Membership& membership);

  // Admin: deletes a job (see shard.proto DeleteJob). Retried on
  // UNAVAILABLE like every call. NOT_FOUND when the job did not exist; OK
  // when it is gone after an attempt whose outcome is unknown (it answered
  // UNAVAILABLE, as a leader stepping down does for a deletion it made
  // durable) and a retry found no job.
  absl::Status DeleteJob(const std::string& job_id, bool force);
  // Admin: starts the coordinator's graceful shutdown; returns the grace
  // in-flight calls get. One attempt (a draining server answers
  // UNAVAILABLE).
  absl::StatusOr<absl::Duration> Drain();

  // Records that every rank consumed `position` entries of `epoch`.
  // Returns the stored (normalised) progress.
  absl::StatusOr<shard::v1::CommitProgressResponse> CommitProgress(
      const Membership& membership, uint64_t epoch, uint64_t position);

  // Rendezvous key-value space of the member's job generation (see
  // shard.v1 Store* RPCs). Waits last up to `wait`: the coordinator cuts
  // each call's wait at its --max-wait, so the call is repeated until
  // `wait` is spent. StoreAdd is not idempotent and is therefore never
  // retried (UNAVAILABLE is returned; the Python client follows the same
  // rule).
  absl::Status StoreSet(const Membership& membership, const std::string& key,
                        const std::string& value);
  // nullopt if the key was not set within `wait`.
  absl::StatusOr<std::optional<std::string>> StoreGet(
      const Membership& membership, const std::string& key,
      absl::Duration wait);
  absl::StatusOr<int64_t> StoreAdd(const Membership& membership,
                                   const std::string& key, int64_t delta);
  absl::StatusOr<std::string> StoreCompareSet(const Membership& membership,
                                              const std::string& key,
                                              const std::string& expected,
                                              const std::string& desired);
  // True once every key is set; false if not within `wait`.
  absl::StatusOr<bool> StoreWait(const Membership& membership,
                                 const std::vector<std::string>& keys,
                                 absl::Duration wait);
  absl::StatusOr<bool> StoreDelete(const Membership& membership,
                                   const std::string& key);
  absl::StatusOr<int64_t> StoreCount(const Membership& membership);

  // Opens the member's shard of `epoch` from global `start_position` (a
  // multiple of the world size) and starts prefetching. Errors surface from
  // ShardStream::Next.
  std::unique_ptr<ShardStream> OpenStream(const Membership& membership,
                                          uint64_t epoch,
                                          uint64_t start_position,
                                          const StreamOptions& options = {});

  const ClientOptions& options() const { return options_; }

 private:
  CoordinatorClient(ClientOptions options,
                    std::shared_ptr<CoordinatorReplicas> replicas);

  // One on_waiting line for a join waiting until `until` (nothing when the
  // job cannot be read).
  void ReportWaiting(const std::string& job_id, absl::Time until);
  // A JoinJob request, naming the job's incarnation this client joined
  // before (so that a deleted job is not re-created by its members).
  shard::v1::JoinJobRequest JoinRequest(
      const std::string& job_id, const std::string& member_id,
      const std::optional<shard::v1::JobSpec>& spec,
      std::optional<uint32_t> requested_rank) ABSL_LOCKS_EXCLUDED(joined_mu_);
  // The membership a formed world's answer gives; remembers the job's
  // incarnation.
  Membership Joined(const std::string& job_id, const std::string& member_id,
                    const shard::v1::JoinJobResponse& response)
      ABSL_LOCKS_EXCLUDED(joined_mu_);

  // How a call is attempted: as proto/shard/v1/client_retries.json says
  // for it ("retry": options().retry; "once": one attempt).
  enum class Attempts { kRetried, kOnce };
  // Every unary call's one shape: through the replicas (each UNAVAILABLE
  // moving on to the one that leads), each attempt with rpc_timeout +
  // `extra` (the time the coordinator may wait before answering).
  // Defined in coordinator_client.cc, its only user.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(
      grpc::Status (shard::v1::Coordinator::Stub::*method)(grpc::ClientContext*,
                                                           const Request&,
                                                           Response*),
      const char* name, const Request& request,
      Attempts attempts = Attempts::kRetried,
      absl::Duration extra = absl::ZeroDuration());

  ClientOptions options_;
  std::shared_ptr<CoordinatorReplicas> replicas_;
  uint64_t incarnation_;
  absl::Mutex joined_mu_;
  // Incarnation of each job this client joined and has not left.
  absl::flat_hash_map<std::string, uint64_t> joined_incarnations_
      ABSL_GUARDED_BY(joined_mu_);
};

}  // namespace shard::client

#endif  // SHARD_CLIENT_COORDINATOR_CLIENT_H_

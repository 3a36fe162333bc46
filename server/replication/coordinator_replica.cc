#include "server/replication/coordinator_replica.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/leader_hint.h"
#include "server/replication/etcd_cost_blobs.h"
#include "server/replication/etcd_state_store.h"
#include "server/replication/leader_watch.h"
#include "server/runtime/event_log.h"

namespace shard::server::replication {
namespace {

// The least time between two lease renewals (after a failed one: the next
// goes to the next etcd member, but not in a tight loop).
constexpr absl::Duration kRenewalPause = absl::Milliseconds(20);

// leading_until_ns_ once etcd deleted this replica's leader key: the gate
// stays closed whatever renewals succeed afterwards.
constexpr int64_t kLeaderKeyLost = -1;

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// "HOST:PORT" as clients should dial it: a wildcard host becomes this
// machine's name.
std::string AdvertisedAddress(const std::string& bound) {
  const size_t colon = bound.rfind(':');
  const std::string host = bound.substr(0, colon);
  if (host != "0.0.0.0" && host != "[::]" && host != "::") return bound;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return bound;
  return absl::StrCat(name, bound.substr(colon));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CoordinatorReplica>> CoordinatorReplica::Start(
    ReplicaOptions options) {
  std::unique_ptr<CoordinatorReplica> replica(
      new CoordinatorReplica(std::move(options)));
  if (!replica->options_.answer_log.empty()) {
    absl::StatusOr<std::unique_ptr<AnswerLog>> log =
        AnswerLog::Open(replica->options_.answer_log);
    if (!log.ok()) return log.status();
    replica->answer_log_ = *std::move(log);
  }
  CoordinatorServerOptions server_options = replica->options_.server;
  server_options.serving_gate = [raw = replica.get()] { return raw->Gate(); };
  server_options.leader_lease = replica->options_.etcd.lease_ttl;
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
      CoordinatorServer::Start(nullptr, std::move(server_options));
  if (!server.ok()) return server.status();
  replica->server_ = *std::move(server);
  replica->address_ = replica->server_->address();
  replica->identity_ = replica->options_.advertise.empty()
                           ? AdvertisedAddress(replica->address_)
                           : replica->options_.advertise;
  replica->loop_ = std::thread([raw = replica.get()] { raw->Loop(); });
  return replica;
}

CoordinatorReplica::CoordinatorReplica(ReplicaOptions options)
    : options_(std::move(options)) {}

CoordinatorReplica::~CoordinatorReplica() { Stop(absl::ZeroDuration()); }

void CoordinatorReplica::Stop(absl::Duration grace) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && !loop_.joinable()) return;
    stopping_ = true;
    stop_grace_ = grace;
  }
  if (loop_.joinable()) loop_.join();
  if (server_ == nullptr) return;
  server_->Stop(grace);
  server_.reset();
}

absl::Status CoordinatorReplica::fatal() const {
  absl::MutexLock lock(&mu_);
  return fatal_;
}

bool CoordinatorReplica::leading() const {
  return SteadyNowNs() < leading_until_ns_.load();
}

bool CoordinatorReplica::WithLeaderService(
    absl::FunctionRef<void(CoordinatorService&)> read) {
  absl::MutexLock lock(&mu_);
  if (leader_service_ == nullptr || !leading()) return false;
  read(*leader_service_);
  return true;
}

bool CoordinatorReplica::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

bool CoordinatorReplica::WaitOrStop(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopping_), timeout);
  return stopping_;
}

void CoordinatorReplica::Renewed(int64_t sent_ns) {
  renewed_sent_ns_.store(sent_ns);
}

void CoordinatorReplica::ExtendGate(int64_t until_ns) {
  int64_t current = leading_until_ns_.load();
  while (current != kLeaderKeyLost &&
         !leading_until_ns_.compare_exchange_weak(current, until_ns)) {
  }
}

void CoordinatorReplica::LoseLeaderKey() {
  leading_until_ns_.store(kLeaderKeyLost);
  absl::MutexLock lock(&mu_);
  leader_gone_ = true;
}

absl::Status CoordinatorReplica::Gate() const {
  // One reading of the clock decides and is recorded: an admission logged
  // at t was decided at t, before the lease could lapse.
  if (const int64_t now = SteadyNowNs(); now < leading_until_ns_.load()) {
    if (answer_log_ != nullptr) {
      answer_log_->Record(now, leading_revision_.load());
    }
    return absl::OkStatus();
  }
  absl::Status refused = Refusal();
  refused.SetPayload(kStandbyMetadataKey, absl::Cord("1"));
  return refused;
}

absl::Status CoordinatorReplica::Refusal() const {
  std::string leader;
  std::string etcd_error;
  absl::Duration hint_age;
  {
    absl::MutexLock lock(&hint_mu_);
    leader = leader_hint_;
    etcd_error = etcd_error_;
    hint_age = absl::Now() - hint_set_;
  }
  if (leader == identity_) {
    // The gate closed by time: the lead loop could not renew the lease
    // (it is still waiting for etcd's answer).
    return absl::UnavailableError(absl::StrCat(
        "coordinator replica ", identity_,
        " stopped serving: its etcd lease was not renewed in time (this "
        "process stalled, or etcd is unreachable, without quorum or slow); "
        "retry"));
  }
  if (leader.empty()) {
    return absl::UnavailableError(absl::StrCat(
        "coordinator replica ", identity_, " is not the leader and knows none",
        etcd_error.empty()
            ? " yet (one is elected within the leader lease); retry"
            : absl::StrCat(": ", etcd_error)));
  }
  // A hint older than the lease: etcd has not answered this replica since
  // (its reads wait for it), so the leader named may be gone.
  const std::string stale =
      hint_age > options_.etcd.lease_ttl
          ? absl::StrCat(
                " (as etcd said ",
                absl::FormatDuration(absl::Trunc(hint_age, absl::Seconds(1))),
                " ago; etcd has not answered since)")
          : "";
  absl::Status refused = absl::UnavailableError(
      absl::StrCat("coordinator replica ", identity_,
                   " is standing by; the leader is ", leader, stale));
  refused.SetPayload(kLeaderMetadataKey, absl::Cord(leader));
  return refused;
}

void CoordinatorReplica::SetLeaderHint(std::string leader,
                                       std::string etcd_error,
                                       int64_t revision) {
  absl::MutexLock lock(&hint_mu_);
  if (revision > 0) {
    if (revision < hint_revision_) return;  // etcd said newer already.
    hint_revision_ = revision;
  }
  leader_hint_ = std::move(leader);
  etcd_error_ = std::move(etcd_error);
  hint_set_ = absl::Now();
}

bool CoordinatorReplica::KnowsNoLeader() const {
  absl::MutexLock lock(&hint_mu_);
  return leader_hint_.empty() && etcd_error_.empty();
}

void CoordinatorReplica::Loop() {
  const absl::Duration retry = absl::Seconds(1);
  absl::Time last_report = absl::InfinitePast();
  while (!stopping()) {
    absl::StatusOr<std::unique_ptr<EtcdSession>> session =
        EtcdSession::Start(options_.etcd);
    if (!session.ok()) {
      SetLeaderHint("", std::string(session.status().message()));
      // One line every 10 s while etcd stays away.
      if (absl::Now() - last_report >= absl::Seconds(10)) {
        LogEvent(absl::StrCat("standing by: cannot open an etcd session (",
                              session.status().message(), "); retrying"));
        last_report = absl::Now();
      }
      WaitOrStop(retry);
      continue;
    }
    last_report = absl::InfinitePast();
    RunSession(**session);
    (*session)->Revoke().IgnoreError();
  }
}

void CoordinatorReplica::RunSession(EtcdSession& session) {
  Renewed(SteadyNowNs());  // Start() granted the lease just now.
  if (session.granted_ttl() != options_.etcd.lease_ttl) {
    LogEvent(absl::StrCat(
        "etcd granted a leader lease of ",
        absl::FormatDuration(session.granted_ttl()), ", not the ",
        absl::FormatDuration(options_.etcd.lease_ttl),
        " asked (etcd's minimum is 1.5 of its election timeouts): a failover "
        "takes up to about ",
        absl::FormatDuration(session.granted_ttl()), " plus a moment"));
  }
  absl::StatusOr<std::unique_ptr<EtcdFollower>> follower =
      EtcdFollower::Start(&session);
  if (!follower.ok()) {
    if (absl::IsDataLoss(follower.status())) {
      LogEvent(
          absl::StrCat("the coordinator history in etcd cannot be recovered: ",
                       follower.status().message()));
      {
        absl::MutexLock lock(&mu_);
        fatal_ = follower.status();
        stopping_ = true;
      }
      if (options_.on_fatal) options_.on_fatal();
      return;
    }
    SetLeaderHint("", std::string(follower.status().message()));
    LogEvent(absl::StrCat("standing by: cannot read the state from etcd (",
                          follower.status().message(), "); retrying"));
    WaitOrStop(absl::Seconds(1));
    return;
  }
  LogEvent(absl::StrCat("standing by as ", identity_, ": following etcd under ",
                        options_.etcd.prefix, " from record ",
                        (*follower)->applied()));
  StandBy(session, *std::move(follower));
}

void CoordinatorReplica::StandBy(EtcdSession& session,
                                 std::unique_ptr<EtcdFollower> follower) {
  // Renewals every third of the lease etcd granted; the leader key read as
  // often, besides the watch (a watch on a member that stalls says
  // nothing).
  const absl::Duration ttl = session.granted_ttl();
  std::unique_ptr<LeaderWatch> watch;
  std::optional<absl::Time> leaderless_since;
  do {
    if (absl::Status s = follower->status(); !s.ok()) {
      SetLeaderHint("", std::string(s.message()));
      LogEvent(absl::StrCat("standing by: the copy of the state stopped (",
                            s.message(), "); reading etcd again"));
      return;
    }
    if (absl::Status kept = RenewIfDue(session, ttl); absl::IsNotFound(kept)) {
      LogEvent(absl::StrCat("standing by: ", kept.message()));
      return;
    }
    absl::StatusOr<EtcdSession::LeaderKey> leader = session.ReadLeader();
    if (!leader.ok()) {  // etcd away: retry.
      SetLeaderHint("", std::string(leader.status().message()));
      continue;
    }
    SetLeaderHint(leader->identity, "", leader->revision);
    if (watch == nullptr) {
      watch = std::make_unique<LeaderWatch>(
          &session, leader->revision + 1,
          [this](const std::string& identity, int64_t revision) {
            OnLeaderKey(identity, revision);
          });
    }
    if (!KnowsNoLeader()) {
      leaderless_since.reset();
      continue;
    }
    if (!leaderless_since) leaderless_since = absl::Now();
    absl::StatusOr<EtcdSession::Leadership> won = session.Campaign(identity_);
    if (won.ok()) {
      watch.reset();
      Lead(session, *std::move(won), std::move(follower), *leaderless_since);
      return;
    }
    if (absl::IsUnavailable(won.status())) {
      SetLeaderHint("", std::string(won.status().message()));
    }
  } while (!WaitForLeaderGoneOrStop(ttl / 3));
}

absl::Status CoordinatorReplica::RenewIfDue(EtcdSession& session,
                                            absl::Duration ttl) {
  const int64_t sent = SteadyNowNs();
  if (absl::Nanoseconds(sent - renewed_sent_ns_.load()) < ttl / 3) {
    return absl::OkStatus();
  }
  absl::Status kept = session.KeepAlive();
  if (kept.ok()) Renewed(sent);
  return kept;
}

void CoordinatorReplica::OnLeaderKey(const std::string& identity,
                                     int64_t revision) {
  SetLeaderHint(identity, "", revision);
  if (!identity.empty()) return;
  absl::MutexLock lock(&mu_);
  leader_gone_ = true;
}

bool CoordinatorReplica::WaitForLeaderGoneOrStop(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || leader_gone_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&woken), timeout);
  leader_gone_ = false;
  return stopping_;
}

void CoordinatorReplica::Lead(EtcdSession& session,
                              EtcdSession::Leadership leadership,
                              std::unique_ptr<EtcdFollower> follower,
                              absl::Time leaderless_since) {
  // The lease etcd granted, not the one asked: the gate must close before
  // etcd lets the lease (and the leader key) go.
  const absl::Duration ttl = session.granted_ttl();
  // Renew now: the catch-up below takes a moment.
  if (const int64_t sent = SteadyNowNs(); session.KeepAlive().ok()) {
    Renewed(sent);
  }
  std::optional<Takeover> takeover =
      TakeOver(session, leadership, std::move(follower));
  if (!takeover) return;
  EtcdStateStore* const store = takeover->store;
  {
    absl::MutexLock lock(&mu_);
    leader_service_ = takeover->service;
  }
  server_->Serve(std::move(takeover->service));
  leading_revision_.store(leadership.revision);
  leading_until_ns_.store(renewed_sent_ns_.load() +
                          absl::ToInt64Nanoseconds(ttl - ttl / 10));
  SetLeaderHint(identity_, "", leadership.revision);
  const absl::Duration serving_after = absl::Now() - leaderless_since;
  if (metrics::ServerMetrics* metrics = options_.server.metrics) {
    metrics->SetLeader(true);
    metrics->ObserveTakeover(serving_after);
  }
  LogEvent(absl::StrCat("leading the coordinator cluster under ",
                        options_.etcd.prefix, " as ", identity_,
                        " (leadership revision ", leadership.revision, ", ",
                        takeover->jobs, " jobs, record ", takeover->last_record,
                        "), serving ", absl::FormatDuration(serving_after),
                        " after the leader key was found gone"));
  std::string ended;
  {
    // etcd may delete the key before the lease could lapse (a raft leader
    // resuming from a pause revokes leases early, etcd-io/etcd#15247): the
    // gate closes the moment the deletion is seen.
    LeaderWatch own_key(&session, leadership.revision + 1,
                        [this](const std::string& identity, int64_t) {
                          if (identity != identity_) LoseLeaderKey();
                        });
    ended = KeepLeading(session, *store);
  }
  StepDown(session, *store, ended);
}

std::optional<CoordinatorReplica::Takeover> CoordinatorReplica::TakeOver(
    EtcdSession& session, const EtcdSession::Leadership& leadership,
    std::unique_ptr<EtcdFollower> follower) {
  // Every record of earlier leaders is in etcd before the leader key this
  // replica now holds, and nobody else can add one: catch up to the last.
  absl::StatusOr<EtcdStateStore::Position> position =
      EtcdStateStore::ReadPosition(session);
  if (!position.ok() ||
      !follower->AwaitApplied(position->last_sequence,
                              absl::Now() + options_.etcd.timeout)) {
    LogEvent(
        absl::StrCat("won the leadership but could not catch up with etcd (",
                     position.ok() ? follower->status().ToString()
                                   : position.status().message(),
                     "); giving it up"));
    return std::nullopt;
  }
  CoordinatorState state = follower->state();
  follower.reset();
  Takeover takeover;
  takeover.jobs = state.jobs().size();
  takeover.last_record = position->last_sequence;
  metrics::ServerMetrics* metrics = options_.server.metrics;
  EtcdStateStore::Options store_options;
  store_options.snapshot_every = options_.snapshot_every;
  store_options.on_txn = [metrics](absl::Duration latency, size_t records) {
    if (metrics != nullptr) metrics->ObserveEtcdTxn(latency, records);
  };
  auto store = std::make_unique<EtcdStateStore>(&session, leadership, *position,
                                                std::move(store_options));
  takeover.store = store.get();
  CoordinatorOptions coordinator = options_.coordinator;
  coordinator.cost_blobs =
      std::make_shared<EtcdCostBlobs>(&session, leadership);
  takeover.service = std::make_unique<CoordinatorService>(
      std::move(coordinator), std::move(store), std::move(state));
  return takeover;
}

std::string CoordinatorReplica::KeepLeading(EtcdSession& session,
                                            const EtcdStateStore& store) {
  const absl::Duration ttl = session.granted_ttl();
  while (true) {
    // Renew every ttl / 3 after the last renewal (the takeover itself took
    // some of that time).
    const absl::Duration since_renewal =
        absl::Nanoseconds(SteadyNowNs() - renewed_sent_ns_.load());
    if (WaitForLeaderGoneOrStop(
            std::max(kRenewalPause, ttl / 3 - since_renewal))) {
      return "stopping";
    }
    if (leading_until_ns_.load() == kLeaderKeyLost) {
      return "etcd deleted its leader key before its lease could lapse";
    }
    if (absl::Status broken = store.broken(); !broken.ok()) {
      return std::string(broken.message());
    }
    const int64_t sent = SteadyNowNs();
    absl::Status kept = session.KeepAlive();
    if (kept.ok()) {
      // Also after the gate closed by time: etcd says the lease, and so
      // the leader key, lives (a raft election extends every lease).
      Renewed(sent);
      ExtendGate(sent + absl::ToInt64Nanoseconds(ttl - ttl / 10));
      continue;
    }
    // The failed member was left for the next: try again at once, until
    // etcd says the lease is gone or it has not answered for a lease plus
    // the etcd timeout (etcd lets no lease lapse while it elects a raft
    // leader, and extends them all after; a replica cut off from etcd for
    // that long stands by, its gate closed since long).
    const absl::Duration unrenewed =
        absl::Nanoseconds(SteadyNowNs() - renewed_sent_ns_.load());
    if (absl::IsNotFound(kept) || unrenewed >= ttl + options_.etcd.timeout) {
      return std::string(kept.message());
    }
  }
}

void CoordinatorReplica::StepDown(EtcdSession& session, EtcdStateStore& store,
                                  const std::string& ended) {
  leading_until_ns_.store(0);  // Every call from now on is refused.
  SetLeaderHint("", absl::StrCat("it stopped leading: ", ended));
  const bool stop = stopping();
  if (metrics::ServerMetrics* metrics = options_.server.metrics) {
    metrics->SetLeader(false);
  }
  LogEvent(absl::StrCat("stopped leading: ", ended));
  if (stop) HandOver(session, store);
  // Calls still waiting for durability are answered now (UNAVAILABLE: the
  // client retries on the leader), not when a Txn waiting for an etcd that
  // lost its quorum gives up; on a stop, those the grace did not make
  // durable (their outcome is unknown here).
  store.Abandon(absl::UnavailableError(
      absl::StrCat("coordinator replica ", identity_, " stopped leading (",
                   ended, "); retry on the leader")));
  RetireService();
}

void CoordinatorReplica::HandOver(EtcdSession& session, EtcdStateStore& store) {
  absl::Duration grace;
  {
    absl::MutexLock lock(&mu_);
    grace = stop_grace_;
  }
  // The writes already accepted become durable while the lease is held.
  auto flushed = std::make_shared<absl::Notification>();
  store.WhenDurable(store.last_sequence(),
                    [flushed](absl::Status) { flushed->Notify(); });
  flushed->WaitForNotificationWithTimeout(grace);
  if (absl::Status revoked = session.Revoke(); revoked.ok()) {
    LogEvent("gave up the leadership: a standby takes over now");
  } else {
    LogEvent(absl::StrCat("cannot give up the leader lease (",
                          revoked.message(),
                          "); a standby takes over when it lapses"));
  }
}

void CoordinatorReplica::RetireService() {
  std::shared_ptr<CoordinatorService> retired;
  {
    absl::MutexLock lock(&mu_);
    retired = std::move(leader_service_);
  }
  // Drained (unless the Drain RPC took it out already), every waiting call
  // has its answer; calls still running on it let go within moments (a
  // stream once its shard is open).
  server_->Vacate();
  if (retired == nullptr) return;
  const absl::Time began = absl::Now();
  bool reported = false;
  while (retired.use_count() > 1) {
    if (!reported && absl::Now() - began > absl::Seconds(2)) {
      LogEvent(absl::StrCat("waiting for ", retired.use_count() - 1,
                            " calls to let go of the former leader's state"));
      reported = true;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  retired.reset();
}

}  // namespace shard::server::replication

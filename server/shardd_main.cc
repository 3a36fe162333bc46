// shardd: the data-sharding coordinator daemon.
//
// Serves shard.v1.Coordinator on --listen. Prints "listening on HOST:PORT"
// on stdout once ready (with the bound port when --listen asks for port 0),
// and "metrics on HOST:PORT" first when --metrics-listen is given.
// SIGTERM, SIGINT or the Drain RPC drains: health turns NOT_SERVING, new and
// waiting calls get UNAVAILABLE, in-flight streams get --shutdown-grace to
// finish, then the process exits 0.
//
// Exit codes: 0 clean shutdown (or a sound --check-data-dir), 1 runtime
// error (including a journal write or fsync that failed: shardd drains and
// exits so that its supervisor restarts it), 2 bad flags, 3 the data directory
// cannot be recovered as it is (DATA_LOSS: corrupt, inconsistent or written by
// a newer version); a supervisor should not restart-loop on 3.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/cli/command_line.h"
#include "common/storage/file_system.h"
#include "common/sync/busy_process.h"
#include "grpcpp/grpcpp.h"
#include "server/metrics/server_metrics.h"
#include "server/plans/stored_costs_check.h"
#include "server/rpc/coordinator_server.h"
#include "server/runtime/event_log.h"
#include "server/security/policy_file_watch.h"
#include "server/security/policy_holder.h"
#include "server/services/coordinator_service.h"
#include "server/shardd_flags.h"
#include "server/shardd_metrics.h"
#include "server/storage/data_dir_lock.h"
#include "server/storage/file_cost_blobs.h"
#include "server/storage/state_log.h"
#include "shard/version.h"
#if SHARD_HAVE_ETCD_API
#include "server/replication/coordinator_replica.h"
#include "server/replication/etcd_cost_blobs.h"
#include "server/replication/etcd_session.h"
#include "server/replication/etcd_state_store.h"
#endif

namespace {

using shard::server::FlushEventLog;
using shard::server::LogEvent;

// The memory shardd may use: the machine's, or its cgroup's limit (v2
// memory.max, v1 memory.limit_in_bytes) where that is lower, as in a
// container with a memory limit.
uint64_t AvailableMemoryBytes() {
  uint64_t available = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                       static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
  for (const char* path : {"/sys/fs/cgroup/memory.max",
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream file(path);
    uint64_t limit = 0;
    if (file >> limit && limit > 0) available = std::min(available, limit);
  }
  return available;
}

constexpr int kExitRuntimeError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitDataLoss = 3;

// Set when the journal could not be written (exit 1 after draining).
std::atomic<bool> journal_broken{false};

// Exit code for a failed recovery.
int RecoveryExitCode(const absl::Status& status) {
  return absl::IsDataLoss(status) ? kExitDataLoss : kExitRuntimeError;
}

// The costs part of --check-data-dir and --check-etcd: one line, then one
// per problem. kExitDataLoss when a job's costs are missing or damaged.
int ReportStoredCosts(const shard::server::CoordinatorState& state,
                      shard::storage::CostBlobs& blobs) {
  const shard::server::StoredCostsReport report =
      shard::server::CheckStoredCosts(state, blobs);
  std::cout << "costs (balanced batches): " << report.sound << " of "
            << report.sets << " sets the jobs name are sound\n";
  for (const std::string& problem : report.problems) {
    std::cout << "  " << problem << "\n";
  }
  return report.problems.empty() ? 0 : kExitDataLoss;
}

int CheckDataDir(const std::string& dir) {
  absl::StatusOr<shard::storage::Recovered> recovered =
      shard::storage::Recover(shard::storage::PosixFileSystem(), dir,
                              shard::storage::RecoveryMode::kCheck);
  // A check answers one question, sound or not: a directory that is
  // missing or cannot be read is not sound either.
  if (!recovered.ok()) {
    std::cout << "data directory " << dir
              << " is NOT recoverable: " << recovered.status() << "\n";
    return kExitDataLoss;
  }
  const shard::storage::RecoveryStats& stats = recovered->stats;
  std::cout << "data directory " << dir << " is sound: " << stats.jobs
            << " jobs, snapshot at sequence " << stats.snapshot_sequence << ", "
            << stats.replayed_records
            << " journal records after it, last sequence "
            << recovered->last_sequence
            << (stats.dropped_torn_tail
                    ? "; the newest segment ends in an incomplete record "
                      "(never acknowledged) that startup will cut off"
                    : "")
            << "\n";
  shard::storage::FileCostBlobs costs(shard::storage::PosixFileSystem(),
                                      dir + "/costs");
  return ReportStoredCosts(recovered->state, costs);
}

#if SHARD_HAVE_ETCD_API
using shard::server::replication::EtcdSession;

EtcdSession::Options EtcdOptionsFromFlags(
    const shard::server::DaemonFlags& flags) {
  EtcdSession::Options options;
  options.endpoints =
      absl::StrSplit(flags.etcd_endpoints, ',', absl::SkipWhitespace());
  options.prefix = flags.etcd_prefix;
  options.lease_ttl = flags.leader_lease;
  options.tls_ca_file = flags.etcd_ca;
  options.tls_cert_file = flags.etcd_cert;
  options.tls_key_file = flags.etcd_key;
  return options;
}

// --check-etcd: reads the history as a new leader would, writes nothing
// (the session's lease is revoked at once).
int CheckEtcd(const shard::server::DaemonFlags& flags) {
  EtcdSession::Options options = EtcdOptionsFromFlags(flags);
  absl::StatusOr<std::unique_ptr<EtcdSession>> session =
      EtcdSession::Start(options);
  if (!session.ok()) {
    std::cerr << "shardd: " << session.status().message() << "\n";
    return kExitRuntimeError;
  }
  absl::StatusOr<shard::server::replication::EtcdStateStore::Recovered>
      recovered =
          shard::server::replication::EtcdStateStore::Recover(**session);
  absl::StatusOr<std::string> leader = (*session)->Leader();
  absl::StatusOr<shard::server::replication::EtcdCostBlobs::Footprint> costs =
      shard::server::replication::EtcdCostBlobs::Measure(**session);
  // Read only: no leadership, so nothing can be written.
  shard::server::replication::EtcdCostBlobs blobs(session->get(), {});
  const int costs_check =
      recovered.ok() ? ReportStoredCosts(recovered->state, blobs) : 0;
  (*session)->Revoke().IgnoreError();
  if (!recovered.ok()) {
    std::cout << "etcd history under " << options.prefix
              << " is NOT recoverable: " << recovered.status() << "\n";
    return RecoveryExitCode(recovered.status());
  }
  std::cout << "etcd history under " << options.prefix
            << " is sound: " << recovered->state.jobs().size()
            << " jobs, last record " << recovered->last_sequence
            << " (snapshot at record " << recovered->snapshot_sequence << ", "
            << recovered->snapshot_bytes << " bytes, then "
            << recovered->records << " records; etcd revision "
            << recovered->revision
            << "); leader: " << (leader.ok() ? *leader : std::string("none"))
            << "\n";
  // Leaders snapshot every --snapshot-every records counted from the
  // snapshot in force, so at most two intervals follow it.
  const uint64_t bound = 2 * flags.snapshot_every;
  std::cout << "footprint: " << recovered->records
            << " records after the snapshot, bound 2 x --snapshot-every = "
            << bound << ": "
            << (recovered->records <= bound ? "within it" : "OVER IT") << "\n";
  if (costs.ok()) {
    std::cout << "costs (balanced batches) in etcd: " << costs->sets
              << " sets, " << costs->bytes << " bytes\n";
  }
  return costs_check;
}
#else
int CheckEtcd(const shard::server::DaemonFlags&) {
  std::cerr << "shardd: this build has no etcd support (the etcd v3 API "
               "protos were missing at build time: install "
               "golang-etcd-server-dev and rebuild)\n";
  return kExitUsage;
}
#endif

// The shortest --max-wait: a round of a waiting join (clients ask for
// rounds of at least this long).
constexpr absl::Duration kShortestMaxWait = absl::Seconds(1);

// The coordinator's options from the flags; nullopt (reported) when they
// do not fit.
std::optional<shard::server::CoordinatorOptions> CoordinatorOptionsFromFlags(
    const shard::server::DaemonFlags& flags) {
  shard::server::CoordinatorOptions options;
  options.max_order_bytes = flags.max_order_bytes;
  options.max_cost_bytes = flags.max_cost_bytes;
  options.cost_upload_ttl = flags.cost_upload_ttl;
  // Replicas keep costs in etcd, each term's leader through its own
  // session (CoordinatorReplica).
  if (!flags.data_dir.empty() && flags.etcd_endpoints.empty()) {
    options.cost_blobs = std::make_shared<shard::storage::FileCostBlobs>(
        shard::storage::PosixFileSystem(), flags.data_dir + "/costs");
  }
  options.order_cache_bytes = flags.order_cache_bytes;
  if (options.order_cache_bytes == 0) {
    options.order_cache_bytes = AvailableMemoryBytes() / 2;
  }
  options.lease = flags.lease;
  options.max_heartbeat_rate = flags.max_heartbeat_rate;
  options.max_wait = flags.max_wait;
  options.idle_job_ttl = flags.idle_job_ttl;
  options.max_waiting_calls = flags.max_waiting_calls;
  options.rendezvous.max_total_bytes = flags.store_max_bytes;
  // Durations are never negative (the command line refuses them).
  if (options.lease <= absl::ZeroDuration()) {
    std::cerr << "shardd: --lease must be positive\n";
    return std::nullopt;
  }
  // A shorter bound answers every waiting join at once, and its client
  // joins again at once: a busy loop per waiting rank.
  if (options.max_wait < kShortestMaxWait) {
    std::cerr << "shardd: --max-wait " << absl::FormatDuration(options.max_wait)
              << " is below " << absl::FormatDuration(kShortestMaxWait)
              << ", the shortest wait a join's round needs\n";
    return std::nullopt;
  }
  return options;
}

shard::server::CoordinatorServerOptions ServerOptionsFromFlags(
    const shard::server::DaemonFlags& flags,
    shard::metrics::ServerMetrics* metrics,
    std::shared_ptr<shard::security::PolicyHolder> policy) {
  shard::server::CoordinatorServerOptions server_options;
  server_options.listen = flags.listen;
  server_options.tls_cert_file = flags.tls_cert;
  server_options.tls_key_file = flags.tls_key;
  server_options.tls_client_ca_file = flags.tls_client_ca;
  server_options.auth_token_file = flags.auth_token_file;
  server_options.admin_token_file = flags.admin_token_file;
  server_options.auth_policy = std::move(policy);
  server_options.max_request_bytes = flags.max_request_bytes;
  server_options.health_listen = flags.health_listen;
  server_options.metrics = metrics;
  server_options.shutdown_grace = flags.shutdown_grace;
  // The Drain RPC takes the SIGTERM path below.
  server_options.on_drain_requested = [] { kill(getpid(), SIGTERM); };
  return server_options;
}

void LogServing(const shard::server::CoordinatorServerOptions& options,
                const std::string& address, bool tls,
                const std::string& health_address) {
  LogEvent(absl::StrCat(
      "serving shard.v1.Coordinator on ", address,
      tls ? " (TLS" : " (plaintext",
      options.tls_client_ca_file.empty() ? "" : ", client certificates",
      options.auth_token_file.empty() ? "" : ", bearer token",
      options.admin_token_file.empty() ? "" : ", admin token",
      options.auth_policy == nullptr
          ? ""
          : absl::StrCat(", --auth-policy ", options.auth_policy->path()),
      ")"));
  if (!health_address.empty()) {
    LogEvent(
        absl::StrCat("serving grpc.health.v1 (plaintext) on ", health_address));
  }
}

// Waits for SIGTERM or SIGINT (blocked in every thread, with SIGHUP); the
// grace the drain gets. A SIGHUP meanwhile re-reads the --auth-policy
// (`policy`; without one it changes nothing).
absl::Duration AwaitShutdownSignal(const shard::server::DaemonFlags& flags,
                                   const sigset_t& signals,
                                   shard::security::PolicyHolder* policy) {
  int signal_number = 0;
  while (sigwait(&signals, &signal_number) == 0 && signal_number == SIGHUP) {
    if (policy == nullptr) {
      LogEvent("received SIGHUP: nothing to reload without --auth-policy");
    } else {
      // Audited either way; a refused file leaves the policy in force.
      policy->Reload().IgnoreError();
    }
  }
  const absl::Duration grace = flags.shutdown_grace;
  LogEvent(absl::StrCat("received ", strsignal(signal_number),
                        ": draining for up to ", absl::FormatDuration(grace)));
  return grace;
}

// Locks --data-dir into `lock` and recovers its journal (syncs observed by
// `metrics`); an empty journal in memory for --in-memory. The exit code
// (printed why) when it cannot.
absl::StatusOr<shard::storage::OpenedLog> OpenJournal(
    const shard::server::DaemonFlags& flags,
    shard::metrics::ServerMetrics* metrics,
    std::optional<shard::storage::DataDirLock>& lock, int* exit_code) {
  const std::string& data_dir = flags.data_dir;
  if (data_dir.empty()) {
    LogEvent("--in-memory: state is not persisted");
    return shard::storage::OpenedLog{
        shard::storage::StateLog::InMemory(), {}, {}};
  }
  // Held until the process exits: a second shardd on this directory (or
  // on the same directory through a symlink) refuses to start.
  absl::StatusOr<shard::storage::DataDirLock> locked =
      shard::storage::LockDataDir(data_dir);
  if (!locked.ok()) {
    std::cerr << "shardd: " << locked.status().message() << "\n";
    *exit_code = kExitRuntimeError;
    return locked.status();
  }
  lock = *std::move(locked);
  const absl::Time began = absl::Now();
  shard::storage::StateLogOptions log_options;
  log_options.snapshot_every = flags.snapshot_every;
  log_options.on_sync = [metrics](absl::Duration write, absl::Duration sync,
                                  size_t records) {
    metrics->ObserveJournalGroup(write, sync, records);
  };
  // After a failed write or fsync only a restart can tell what reached
  // the disk (the kernel may have dropped the unwritten pages): drain and
  // exit 1 so that the supervisor restarts shardd and recovery re-reads
  // the journal. Meanwhile every call answers UNAVAILABLE.
  log_options.on_broken = [](const absl::Status&) {
    journal_broken.store(true);
    kill(getpid(), SIGTERM);
  };
  absl::StatusOr<shard::storage::OpenedLog> opened =
      shard::storage::StateLog::Open(shard::storage::PosixFileSystem(),
                                     data_dir, log_options);
  if (!opened.ok()) {
    std::cerr << "shardd: cannot recover state from " << data_dir << ": "
              << opened.status() << "\n";
    *exit_code = RecoveryExitCode(opened.status());
    return opened.status();
  }
  LogEvent(absl::StrCat(
      "recovered ", opened->stats.jobs, " jobs from ", data_dir,
      " (snapshot at sequence ", opened->stats.snapshot_sequence, ", ",
      opened->stats.replayed_records, " journal records replayed",
      opened->stats.dropped_torn_tail ? ", torn tail dropped" : "", ") in ",
      absl::FormatDuration(absl::Now() - began)));
  return opened;
}

// One shardd over a local journal (or --in-memory).
int RunStandalone(const shard::server::DaemonFlags& flags,
                  const sigset_t& signals,
                  shard::server::CoordinatorOptions options,
                  std::shared_ptr<shard::security::PolicyHolder> policy) {
  auto metrics = std::make_unique<shard::metrics::ServerMetrics>();
  options.on_lock_held = metrics->CoreLockHoldObserver();
  std::optional<shard::storage::DataDirLock> data_dir_lock;
  int exit_code = kExitRuntimeError;
  absl::StatusOr<shard::storage::OpenedLog> opened =
      OpenJournal(flags, metrics.get(), data_dir_lock, &exit_code);
  if (!opened.ok()) return exit_code;
  // Destroyed here, after the server stopped (no call holds it then).
  auto service = std::make_shared<shard::server::CoordinatorService>(
      options, *std::move(opened));

  // The endpoint stops before the service is destroyed.
  std::optional<shard::metrics::MetricsEndpoint> endpoint;
  if (!shard::server::StartMetrics(
          flags, *metrics,
          [raw = service.get(), options, policy] {
            return shard::server::CoordinatorViewOf(*raw, options,
                                                    policy.get());
          },
          endpoint)) {
    return kExitRuntimeError;
  }
  const shard::server::CoordinatorServerOptions server_options =
      ServerOptionsFromFlags(flags, metrics.get(), policy);
  absl::StatusOr<std::unique_ptr<shard::server::CoordinatorServer>> server =
      shard::server::CoordinatorServer::Start(service, server_options);
  if (!server.ok()) {
    std::cerr << "shardd: " << server.status().message() << "\n";
    return absl::IsInvalidArgument(server.status()) ? kExitUsage
                                                    : kExitRuntimeError;
  }
  metrics->SetLeader(true);
  LogServing(server_options, (*server)->address(), (*server)->tls(),
             (*server)->health_address());
  std::cout << "listening on " << (*server)->address() << std::endl;

  (*server)->Stop(AwaitShutdownSignal(flags, signals, policy.get()));
  if (journal_broken.load()) {
    LogEvent(
        "stopped: the journal could not be written; exiting 1 so that "
        "a restart recovers from what reached the disk");
    return kExitRuntimeError;
  }
  LogEvent("stopped");
  return 0;
}

#if SHARD_HAVE_ETCD_API
// One replica of a coordinator cluster whose state lives in etcd.
int RunReplicated(const shard::server::DaemonFlags& flags,
                  const sigset_t& signals,
                  shard::server::CoordinatorOptions options,
                  std::shared_ptr<shard::security::PolicyHolder> policy) {
  auto metrics = std::make_unique<shard::metrics::ServerMetrics>();
  metrics->SetLeader(false);
  options.on_lock_held = metrics->CoreLockHoldObserver();
  shard::server::replication::ReplicaOptions replica_options;
  replica_options.etcd = EtcdOptionsFromFlags(flags);
  replica_options.advertise = flags.advertise_address;
  replica_options.answer_log = flags.answer_log;
  replica_options.snapshot_every = flags.snapshot_every;
  replica_options.coordinator = options;
  replica_options.server = ServerOptionsFromFlags(flags, metrics.get(), policy);
  // A history that cannot be recovered: exit 3 like a bad data directory.
  replica_options.on_fatal = [] { kill(getpid(), SIGTERM); };
  if (absl::Status s = shard::server::replication::CheckLeaseTtl(
          replica_options.etcd.lease_ttl);
      !s.ok()) {
    std::cerr << "shardd: --leader-lease: " << s.message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<
      std::unique_ptr<shard::server::replication::CoordinatorReplica>>
      replica = shard::server::replication::CoordinatorReplica::Start(
          replica_options);
  if (!replica.ok()) {
    std::cerr << "shardd: " << replica.status().message() << "\n";
    return absl::IsInvalidArgument(replica.status()) ? kExitUsage
                                                     : kExitRuntimeError;
  }
  // The endpoint stops before the replica is destroyed.
  std::optional<shard::metrics::MetricsEndpoint> endpoint;
  if (!shard::server::StartMetrics(
          flags, *metrics,
          [raw = replica->get(), options, policy] {
            shard::metrics::CoordinatorView view;
            raw->WithLeaderService(
                [&](shard::server::CoordinatorService& service) {
                  view = shard::server::CoordinatorViewOf(service, options,
                                                          policy.get());
                });
            return view;
          },
          endpoint)) {
    return kExitRuntimeError;
  }
  LogEvent(absl::StrCat(
      "replica ", (*replica)->identity(), " of the coordinator cluster under ",
      replica_options.etcd.prefix, " (etcd ", flags.etcd_endpoints, ", lease ",
      absl::FormatDuration(replica_options.etcd.lease_ttl), ")"));
  LogServing(replica_options.server, (*replica)->address(),
             !replica_options.server.tls_cert_file.empty(),
             replica_options.server.health_listen);
  std::cout << "listening on " << (*replica)->address() << std::endl;

  (*replica)->Stop(AwaitShutdownSignal(flags, signals, policy.get()));
  if (absl::Status fatal = (*replica)->fatal(); !fatal.ok()) {
    LogEvent(absl::StrCat("stopped: ", fatal.message()));
    return RecoveryExitCode(fatal);
  }
  LogEvent("stopped");
  return 0;
}
#else
int RunReplicated(const shard::server::DaemonFlags& flags, const sigset_t&,
                  shard::server::CoordinatorOptions,
                  std::shared_ptr<shard::security::PolicyHolder>) {
  return CheckEtcd(flags);  // Reports the missing etcd support.
}
#endif

int Run(const shard::server::DaemonFlags& flags) {
  // Block the shutdown signals and SIGHUP in every thread; main waits for
  // them below. A hang-up (a closed terminal, or a supervisor's "reload")
  // re-reads the --auth-policy and changes nothing else.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  if (const std::string check = flags.check_data_dir; !check.empty()) {
    return CheckDataDir(check);
  }
  const bool journal = !flags.data_dir.empty();
  const bool etcd = !flags.etcd_endpoints.empty();
  const bool in_memory = flags.in_memory;
  if (flags.check_etcd) {
    if (!etcd) {
      std::cerr << "shardd: --check-etcd needs --etcd-endpoints\n";
      return kExitUsage;
    }
    return CheckEtcd(flags);
  }
  if (!flags.answer_log.empty() && !etcd) {
    std::cerr << "shardd: --answer-log needs --etcd-endpoints (it records "
                 "a replica's admissions as the leader)\n";
    return kExitUsage;
  }
  if (int{journal} + int{etcd} + int{in_memory} != 1) {
    std::cerr << "shardd: give exactly one of --data-dir DIR (durable state "
                 "on this machine), --etcd-endpoints HOST:PORT[,...] (state "
                 "in etcd, replicated shardd) and --in-memory (tests)\n";
    return kExitUsage;
  }
  std::optional<shard::server::CoordinatorOptions> options =
      CoordinatorOptionsFromFlags(flags);
  if (!options) return kExitUsage;
  LogEvent(absl::StrCat("order cache budget ", options->order_cache_bytes,
                        " bytes"));
  std::shared_ptr<shard::security::PolicyHolder> policy;
  std::optional<shard::security::PolicyFileWatch> policy_watch;
  if (!flags.auth_policy.empty()) {
    absl::StatusOr<std::shared_ptr<shard::security::PolicyHolder>> loaded =
        shard::security::PolicyHolder::Load(flags.auth_policy);
    if (!loaded.ok()) {
      FlushEventLog();  // The refusal's audit line first, not interleaved.
      std::cerr << "shardd: --auth-policy: " << loaded.status().message()
                << "\n";
      return kExitUsage;
    }
    policy = *std::move(loaded);
    options->tenant_limits_of = shard::security::TenantLimitsFrom(policy);
    if (flags.auth_policy_check_every > absl::ZeroDuration()) {
      policy_watch.emplace(policy, flags.auth_policy_check_every);
    }
  }
  if (!shard::server::IsLoopbackListen(flags.listen) &&
      flags.tls_cert.empty() && flags.auth_token_file.empty() &&
      policy == nullptr) {
    LogEvent(absl::StrCat(
        "warning: serving ", flags.listen,
        " in plaintext with no --auth-token-file: anyone who can reach this "
        "port can change and delete every job; add --tls-cert/--tls-key and "
        "--auth-token-file (docs/operations.md, \"TLS and tokens\") or "
        "listen on 127.0.0.1"));
  }
  if (etcd) return RunReplicated(flags, signals, *std::move(options), policy);
  return RunStandalone(flags, signals, *std::move(options), policy);
}

}  // namespace

int main(int argc, char** argv) {
  shard::sync::TuneForManyCalls();
  CLI::App app(
      "shardd: the data-sharding coordinator. Give exactly one of "
      "--data-dir, --etcd-endpoints and --in-memory; or run an offline "
      "check (--check-data-dir DIR, --check-etcd).");
  shard::cli::Configure(app, "shardd");
  shard::server::DaemonFlags flags;
  shard::server::AddDaemonOptions(app, &flags);
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  return Run(flags);
}

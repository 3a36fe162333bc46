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

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/storage/file_system.h"
#include "grpcpp/grpcpp.h"
#include "server/coordinator_server.h"
#include "server/coordinator_service.h"
#include "server/event_log.h"
#include "server/metrics/server_metrics.h"
#include "server/storage/data_dir_lock.h"
#include "server/storage/state_log.h"
#include "shard/version.h"
#if SHARD_HAVE_ETCD_API
#include "server/replication/coordinator_replica.h"
#include "server/replication/etcd_session.h"
#include "server/replication/etcd_state_store.h"
#endif

ABSL_FLAG(std::string, listen, "0.0.0.0:7070",
          "HOST:PORT to serve gRPC on; port 0 picks a free port");
ABSL_FLAG(std::string, data_dir, "",
          "directory for durable state (journal + snapshots); one of "
          "--data-dir, --etcd-endpoints and --in-memory is required");
ABSL_FLAG(bool, in_memory, false,
          "keep state in memory only (tests): a restart loses every job");
ABSL_FLAG(std::string, etcd_endpoints, "",
          "HOST:PORT[,HOST:PORT...] of etcd members: keep the state in etcd "
          "and run as one replica of a coordinator cluster (one leader "
          "serves, the others stand by)");
ABSL_FLAG(std::string, etcd_prefix, "/shard/",
          "etcd key prefix of this coordinator cluster (clusters sharing "
          "one etcd use different prefixes)");
ABSL_FLAG(absl::Duration, leader_lease, absl::Seconds(5),
          "etcd lease of a replica: a leader that cannot renew it for this "
          "long stops serving and a standby takes over");
ABSL_FLAG(std::string, etcd_ca, "",
          "PEM CA of etcd's certificates (TLS to etcd); empty: plaintext");
ABSL_FLAG(std::string, etcd_cert, "",
          "PEM client certificate for etcd (with --etcd-key)");
ABSL_FLAG(std::string, etcd_key, "", "PEM private key of --etcd-cert");
ABSL_FLAG(std::string, advertise_address, "",
          "HOST:PORT clients reach this replica at (standbys name the "
          "leader by it); empty: the bound address, with the host name for "
          "a wildcard host");
ABSL_FLAG(bool, check_etcd, false,
          "verify the state history in etcd (--etcd-endpoints, "
          "--etcd-prefix) read only, print what a new leader would find and "
          "exit: 0 sound, 3 not recoverable");
ABSL_FLAG(uint64_t, snapshot_every, 10000,
          "records between snapshots, in the journal or in etcd (bounds "
          "recovery time and the history kept)");
ABSL_FLAG(uint64_t, max_order_bytes, uint64_t{4} << 30,
          "largest shuffled epoch order (bytes) one job may hold; jobs that "
          "need more are refused");
ABSL_FLAG(uint64_t, order_cache_bytes, 0,
          "memory all epoch orders together may take (bytes; orders nobody "
          "reads are evicted, streams wait for the rest); 0: half of the "
          "memory available (the machine's, or the cgroup limit if lower)");
ABSL_FLAG(absl::Duration, lease, absl::Seconds(10),
          "a member without a heartbeat for this long is removed and its "
          "generation ends");
ABSL_FLAG(absl::Duration, idle_job_ttl, absl::Hours(7 * 24),
          "a job with no member and no call naming it for this long is "
          "deleted (journaled, logged, counted in "
          "shard_jobs_expired_total); 0 keeps jobs forever");
ABSL_FLAG(absl::Duration, max_wait, absl::Minutes(5),
          "longest wait one call may ask for (JoinJob's wait for the world, "
          "store gets and waits); clients join again to wait longer");
ABSL_FLAG(uint64_t, max_waiting_calls, 10000,
          "calls that may wait at once (joins, store gets and waits); more "
          "answer RESOURCE_EXHAUSTED");
ABSL_FLAG(uint64_t, store_max_bytes, uint64_t{256} << 20,
          "budget of the rendezvous store (keys, values and per-key "
          "overhead of all jobs); writes beyond it answer "
          "RESOURCE_EXHAUSTED");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(10),
          "how long in-flight calls may run after SIGTERM");
ABSL_FLAG(std::string, metrics_listen, "",
          "HOST:PORT to serve Prometheus metrics on (GET /metrics); empty: "
          "no metrics endpoint");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM server certificate (chain); with --tls-key enables TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle; clients must present a certificate it signed "
          "(mutual TLS)");
ABSL_FLAG(std::string, auth_token_file, "",
          "file holding the bearer token every call must carry "
          "(authorization: Bearer <token>)");
ABSL_FLAG(std::string, health_listen, "",
          "HOST:PORT of an extra plaintext listener serving only the gRPC "
          "health service (for probes that cannot use TLS); empty: none");
ABSL_FLAG(int32_t, max_request_bytes, 4 << 20,
          "largest request message accepted");
ABSL_FLAG(std::string, check_data_dir, "",
          "verify the data directory DIR offline (read only: nothing is "
          "changed), print what recovery would find and exit: 0 sound, 3 "
          "not recoverable");

namespace {

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

int CheckDataDir(const std::string& dir) {
  absl::StatusOr<shard::storage::Recovered> recovered =
      shard::storage::Recover(shard::storage::PosixFileSystem(), dir,
                              shard::storage::RecoveryMode::kCheck);
  if (!recovered.ok()) {
    std::cout << "data directory " << dir
              << " is NOT recoverable: " << recovered.status() << "\n";
    return RecoveryExitCode(recovered.status());
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
  return 0;
}

#if SHARD_HAVE_ETCD_API
using shard::server::replication::EtcdSession;

EtcdSession::Options EtcdOptionsFromFlags() {
  EtcdSession::Options options;
  options.endpoints = absl::StrSplit(absl::GetFlag(FLAGS_etcd_endpoints), ',',
                                     absl::SkipWhitespace());
  options.prefix = absl::GetFlag(FLAGS_etcd_prefix);
  options.lease_ttl = absl::GetFlag(FLAGS_leader_lease);
  options.tls_ca_file = absl::GetFlag(FLAGS_etcd_ca);
  options.tls_cert_file = absl::GetFlag(FLAGS_etcd_cert);
  options.tls_key_file = absl::GetFlag(FLAGS_etcd_key);
  return options;
}

// --check-etcd: reads the history as a new leader would, writes nothing
// (the session's lease is revoked at once).
int CheckEtcd() {
  EtcdSession::Options options = EtcdOptionsFromFlags();
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
  return 0;
}
#else
int CheckEtcd() {
  std::cerr << "shardd: this build has no etcd support (the etcd v3 API "
               "protos were missing at build time: install "
               "golang-etcd-server-dev and rebuild)\n";
  return kExitUsage;
}
#endif

// The coordinator gauges Prometheus reads at scrape time.
shard::metrics::CoordinatorView ViewOf(
    shard::server::CoordinatorService& service,
    const shard::server::CoordinatorOptions& options) {
  using Kind = shard::server::WaitingCalls::Kind;
  shard::metrics::CoordinatorView view;
  if (absl::StatusOr<shard::v1::ListJobsResponse> jobs = service.ListJobs({});
      jobs.ok()) {
    view.jobs.assign(jobs->jobs().begin(), jobs->jobs().end());
  }
  for (Kind kind : {Kind::kJoin, Kind::kStoreGet, Kind::kStoreWait}) {
    view.waiting_calls.emplace_back(shard::server::WaitingCalls::KindName(kind),
                                    service.waiting_calls(kind));
  }
  view.max_waiting_calls = options.max_waiting_calls;
  view.store_bytes = service.rendezvous_bytes();
  view.store_max_bytes = options.rendezvous.max_total_bytes;
  view.order_bytes = service.order_bytes();
  view.order_bytes_limit = options.order_cache_bytes;
  view.order_evictions = service.order_evictions();
  view.idle_jobs_expired = service.idle_jobs_expired();
  return view;
}

// The coordinator's options from the flags; nullopt (reported) when they
// do not fit.
std::optional<shard::server::CoordinatorOptions> CoordinatorOptionsFromFlags() {
  shard::server::CoordinatorOptions options;
  options.max_order_bytes = absl::GetFlag(FLAGS_max_order_bytes);
  options.order_cache_bytes = absl::GetFlag(FLAGS_order_cache_bytes);
  if (options.order_cache_bytes == 0) {
    options.order_cache_bytes = AvailableMemoryBytes() / 2;
  }
  options.lease = absl::GetFlag(FLAGS_lease);
  options.max_wait = absl::GetFlag(FLAGS_max_wait);
  options.idle_job_ttl = absl::GetFlag(FLAGS_idle_job_ttl);
  options.max_waiting_calls = absl::GetFlag(FLAGS_max_waiting_calls);
  options.rendezvous.max_total_bytes = absl::GetFlag(FLAGS_store_max_bytes);
  if (options.lease <= absl::ZeroDuration() ||
      options.max_wait < absl::ZeroDuration() ||
      options.idle_job_ttl < absl::ZeroDuration()) {
    std::cerr << "shardd: --lease must be positive, --max-wait and "
                 "--idle-job-ttl not negative\n";
    return std::nullopt;
  }
  return options;
}

shard::server::CoordinatorServerOptions ServerOptionsFromFlags(
    shard::metrics::ServerMetrics* metrics) {
  shard::server::CoordinatorServerOptions server_options;
  server_options.listen = absl::GetFlag(FLAGS_listen);
  server_options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  server_options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  server_options.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  server_options.auth_token_file = absl::GetFlag(FLAGS_auth_token_file);
  server_options.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  server_options.health_listen = absl::GetFlag(FLAGS_health_listen);
  server_options.metrics = metrics;
  server_options.shutdown_grace = absl::GetFlag(FLAGS_shutdown_grace);
  // The Drain RPC takes the SIGTERM path below.
  server_options.on_drain_requested = [] { kill(getpid(), SIGTERM); };
  return server_options;
}

// Starts the metrics endpoint when --metrics-listen asks for one (false
// after reporting a failure). `view` is called at scrape time.
bool StartMetrics(shard::metrics::ServerMetrics& metrics,
                  std::function<shard::metrics::CoordinatorView()> view,
                  std::optional<shard::metrics::MetricsEndpoint>& endpoint) {
  const std::string listen = absl::GetFlag(FLAGS_metrics_listen);
  if (listen.empty()) return true;
  absl::StatusOr<shard::metrics::MetricsEndpoint> started =
      shard::metrics::StartMetricsEndpoint(listen, metrics, std::move(view));
  if (!started.ok()) {
    std::cerr << "shardd: " << started.status().message() << "\n";
    return false;
  }
  endpoint = *std::move(started);
  LogEvent(absl::StrCat("serving metrics on http://", endpoint->address,
                        "/metrics"));
  std::cout << "metrics on " << endpoint->address << std::endl;
  return true;
}

void LogServing(const shard::server::CoordinatorServerOptions& options,
                const std::string& address, bool tls,
                const std::string& health_address) {
  LogEvent(absl::StrCat(
      "serving shard.v1.Coordinator on ", address,
      tls ? " (TLS" : " (plaintext",
      options.tls_client_ca_file.empty() ? "" : ", client certificates",
      options.auth_token_file.empty() ? "" : ", bearer token", ")"));
  if (!health_address.empty()) {
    LogEvent(
        absl::StrCat("serving grpc.health.v1 (plaintext) on ", health_address));
  }
}

// Waits for SIGTERM or SIGINT (blocked in every thread); the grace the
// drain gets.
absl::Duration AwaitShutdownSignal(const sigset_t& signals) {
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  const absl::Duration grace = absl::GetFlag(FLAGS_shutdown_grace);
  LogEvent(absl::StrCat("received ", strsignal(signal_number),
                        ": draining for up to ", absl::FormatDuration(grace)));
  return grace;
}

// One shardd over a local journal (or --in-memory).
int RunStandalone(const sigset_t& signals,
                  shard::server::CoordinatorOptions options) {
  const std::string data_dir = absl::GetFlag(FLAGS_data_dir);
  auto metrics = std::make_unique<shard::metrics::ServerMetrics>();
  shard::storage::OpenedLog opened{
      shard::storage::StateLog::InMemory(), {}, {}};
  // Held until the process exits: a second shardd on this directory (or
  // on the same directory through a symlink) refuses to start.
  std::optional<shard::storage::DataDirLock> data_dir_lock;
  if (!data_dir.empty()) {
    absl::StatusOr<shard::storage::DataDirLock> locked =
        shard::storage::LockDataDir(data_dir);
    if (!locked.ok()) {
      std::cerr << "shardd: " << locked.status().message() << "\n";
      return kExitRuntimeError;
    }
    data_dir_lock = *std::move(locked);
    const absl::Time began = absl::Now();
    shard::storage::StateLogOptions log_options;
    log_options.snapshot_every = absl::GetFlag(FLAGS_snapshot_every);
    log_options.on_sync = [raw = metrics.get()](absl::Duration write,
                                                absl::Duration sync,
                                                size_t records) {
      raw->ObserveJournalGroup(write, sync, records);
    };
    // After a failed write or fsync only a restart can tell what reached
    // the disk (the kernel may have dropped the unwritten pages): drain and
    // exit 1 so that the supervisor restarts shardd and recovery re-reads
    // the journal. Meanwhile every call answers UNAVAILABLE.
    log_options.on_broken = [](const absl::Status&) {
      journal_broken.store(true);
      kill(getpid(), SIGTERM);
    };
    absl::StatusOr<shard::storage::OpenedLog> recovered =
        shard::storage::StateLog::Open(shard::storage::PosixFileSystem(),
                                       data_dir, log_options);
    if (!recovered.ok()) {
      std::cerr << "shardd: cannot recover state from " << data_dir << ": "
                << recovered.status() << "\n";
      return RecoveryExitCode(recovered.status());
    }
    opened = *std::move(recovered);
    LogEvent(absl::StrCat(
        "recovered ", opened.stats.jobs, " jobs from ", data_dir,
        " (snapshot at sequence ", opened.stats.snapshot_sequence, ", ",
        opened.stats.replayed_records, " journal records replayed",
        opened.stats.dropped_torn_tail ? ", torn tail dropped" : "", ") in ",
        absl::FormatDuration(absl::Now() - began)));
  } else {
    LogEvent("--in-memory: state is not persisted");
  }
  shard::server::CoordinatorService service(options, std::move(opened));

  // The endpoint stops before the service is destroyed.
  std::optional<shard::metrics::MetricsEndpoint> endpoint;
  if (!StartMetrics(
          *metrics, [&service, options] { return ViewOf(service, options); },
          endpoint)) {
    return kExitRuntimeError;
  }
  const shard::server::CoordinatorServerOptions server_options =
      ServerOptionsFromFlags(metrics.get());
  absl::StatusOr<std::unique_ptr<shard::server::CoordinatorServer>> server =
      shard::server::CoordinatorServer::Start(&service, server_options);
  if (!server.ok()) {
    std::cerr << "shardd: " << server.status().message() << "\n";
    return absl::IsInvalidArgument(server.status()) ? kExitUsage
                                                    : kExitRuntimeError;
  }
  metrics->SetLeader(true);
  LogServing(server_options, (*server)->address(), (*server)->tls(),
             (*server)->health_address());
  std::cout << "listening on " << (*server)->address() << std::endl;

  (*server)->Stop(AwaitShutdownSignal(signals));
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
int RunReplicated(const sigset_t& signals,
                  shard::server::CoordinatorOptions options) {
  auto metrics = std::make_unique<shard::metrics::ServerMetrics>();
  metrics->SetLeader(false);
  shard::server::replication::ReplicaOptions replica_options;
  replica_options.etcd = EtcdOptionsFromFlags();
  replica_options.advertise = absl::GetFlag(FLAGS_advertise_address);
  replica_options.snapshot_every = absl::GetFlag(FLAGS_snapshot_every);
  replica_options.coordinator = options;
  replica_options.server = ServerOptionsFromFlags(metrics.get());
  // A history that cannot be recovered: exit 3 like a bad data directory.
  replica_options.on_fatal = [] { kill(getpid(), SIGTERM); };
  if (replica_options.etcd.lease_ttl < absl::Seconds(1)) {
    std::cerr << "shardd: --leader-lease must be at least 1s\n";
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
  if (!StartMetrics(
          *metrics,
          [raw = replica->get(), options] {
            shard::metrics::CoordinatorView view;
            raw->WithLeaderService(
                [&](shard::server::CoordinatorService& service) {
                  view = ViewOf(service, options);
                });
            return view;
          },
          endpoint)) {
    return kExitRuntimeError;
  }
  LogEvent(absl::StrCat(
      "replica ", (*replica)->identity(), " of the coordinator cluster under ",
      replica_options.etcd.prefix, " (etcd ",
      absl::GetFlag(FLAGS_etcd_endpoints), ", lease ",
      absl::FormatDuration(replica_options.etcd.lease_ttl), ")"));
  LogServing(replica_options.server, (*replica)->address(),
             !replica_options.server.tls_cert_file.empty(),
             replica_options.server.health_listen);
  std::cout << "listening on " << (*replica)->address() << std::endl;

  (*replica)->Stop(AwaitShutdownSignal(signals));
  if (absl::Status fatal = (*replica)->fatal(); !fatal.ok()) {
    LogEvent(absl::StrCat("stopped: ", fatal.message()));
    return RecoveryExitCode(fatal);
  }
  LogEvent("stopped");
  return 0;
}
#else
int RunReplicated(const sigset_t&, shard::server::CoordinatorOptions) {
  return CheckEtcd();  // Reports the missing etcd support.
}
#endif

int Run() {
  // Block the shutdown signals in every thread; main waits for them below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  if (const std::string check = absl::GetFlag(FLAGS_check_data_dir);
      !check.empty()) {
    return CheckDataDir(check);
  }
  const bool journal = !absl::GetFlag(FLAGS_data_dir).empty();
  const bool etcd = !absl::GetFlag(FLAGS_etcd_endpoints).empty();
  const bool in_memory = absl::GetFlag(FLAGS_in_memory);
  if (absl::GetFlag(FLAGS_check_etcd)) {
    if (!etcd) {
      std::cerr << "shardd: --check-etcd needs --etcd-endpoints\n";
      return kExitUsage;
    }
    return CheckEtcd();
  }
  if (int{journal} + int{etcd} + int{in_memory} != 1) {
    std::cerr << "shardd: give exactly one of --data-dir DIR (durable state "
                 "on this machine), --etcd-endpoints HOST:PORT[,...] (state "
                 "in etcd, replicated shardd) and --in-memory (tests)\n";
    return kExitUsage;
  }
  std::optional<shard::server::CoordinatorOptions> options =
      CoordinatorOptionsFromFlags();
  if (!options) return kExitUsage;
  LogEvent(absl::StrCat("order cache budget ", options->order_cache_bytes,
                        " bytes"));
  if (etcd) return RunReplicated(signals, *std::move(options));
  return RunStandalone(signals, *std::move(options));
}

// Flags are documented with dashes (--data-dir); Abseil names them with
// underscores. Rewrites the name part of each "--flag[=value]" argument.
std::vector<std::string> DashesToUnderscores(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& arg = args[i];
    if (arg == "--") break;
    if (arg.rfind("--", 0) != 0) continue;
    const size_t end = std::min(arg.find('='), arg.size());
    std::replace(arg.begin() + 2, arg.begin() + end, '-', '_');
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  // One line, like shardctl and shard-train (Abseil's own --version would
  // print the build mode too).
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--version") {
      std::cout << "shardd " << shard::Version() << "\n";
      return 0;
    }
  }
  absl::SetProgramUsageMessage(
      "shardd --listen HOST:PORT (--data-dir DIR | --in-memory | "
      "--etcd-endpoints HOST:PORT[,...] [--etcd-prefix /shard/] "
      "[--leader-lease 5s] [--etcd-ca PEM [--etcd-cert PEM --etcd-key PEM]] "
      "[--advertise-address HOST:PORT]) "
      "[--snapshot-every N] [--lease 10s] [--max-order-bytes N] "
      "[--max-wait 5m] [--idle-job-ttl 168h] [--max-waiting-calls N] "
      "[--store-max-bytes N] "
      "[--shutdown-grace 10s] [--metrics-listen HOST:PORT] "
      "[--tls-cert PEM --tls-key PEM [--tls-client-ca PEM]] "
      "[--auth-token-file FILE] [--health-listen HOST:PORT] "
      "[--max-request-bytes N] | shardd --check-data-dir DIR | "
      "shardd --check-etcd --etcd-endpoints HOST:PORT[,...]");
  std::vector<std::string> args = DashesToUnderscores(argc, argv);
  std::vector<char*> arg_pointers;
  for (std::string& arg : args) arg_pointers.push_back(arg.data());
  std::vector<char*> positional = absl::ParseCommandLine(
      static_cast<int>(arg_pointers.size()), arg_pointers.data());
  if (positional.size() > 1) {
    std::cerr << "shardd: unexpected argument \"" << positional[1]
              << "\"; all options are --flags (see --help)\n";
    return kExitUsage;
  }
  return Run();
}

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
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
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

ABSL_FLAG(std::string, listen, "0.0.0.0:7070",
          "HOST:PORT to serve gRPC on; port 0 picks a free port");
ABSL_FLAG(std::string, data_dir, "",
          "directory for durable state (journal + snapshots); required "
          "unless --in-memory");
ABSL_FLAG(bool, in_memory, false,
          "keep state in memory only (tests): a restart loses every job");
ABSL_FLAG(uint64_t, snapshot_every, 10000,
          "journal appends between snapshots (bounds recovery time)");
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
  const std::string data_dir = absl::GetFlag(FLAGS_data_dir);
  if (data_dir.empty() == !absl::GetFlag(FLAGS_in_memory)) {
    std::cerr << "shardd: give exactly one of --data-dir DIR (durable state) "
                 "and --in-memory (tests)\n";
    return kExitUsage;
  }
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
  shard::server::CoordinatorOptions options;
  options.max_order_bytes = absl::GetFlag(FLAGS_max_order_bytes);
  options.order_cache_bytes = absl::GetFlag(FLAGS_order_cache_bytes);
  if (options.order_cache_bytes == 0) {
    options.order_cache_bytes = AvailableMemoryBytes() / 2;
  }
  LogEvent(
      absl::StrCat("order cache budget ", options.order_cache_bytes, " bytes"));
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
    return kExitUsage;
  }
  shard::server::CoordinatorService service(options, std::move(opened));

  std::optional<shard::metrics::MetricsEndpoint> endpoint;
  if (const std::string listen = absl::GetFlag(FLAGS_metrics_listen);
      !listen.empty()) {
    // Gauges are read from the service at scrape time (no jobs while it
    // drains). The endpoint stops before the service is destroyed.
    absl::StatusOr<shard::metrics::MetricsEndpoint> started = shard::metrics::
        StartMetricsEndpoint(listen, *metrics, [&service, options] {
          using Kind = shard::server::WaitingCalls::Kind;
          shard::metrics::CoordinatorView view;
          if (absl::StatusOr<shard::v1::ListJobsResponse> jobs =
                  service.ListJobs({});
              jobs.ok()) {
            view.jobs.assign(jobs->jobs().begin(), jobs->jobs().end());
          }
          for (Kind kind : {Kind::kJoin, Kind::kStoreGet, Kind::kStoreWait}) {
            view.waiting_calls.emplace_back(
                shard::server::WaitingCalls::KindName(kind),
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
        });
    if (!started.ok()) {
      std::cerr << "shardd: " << started.status().message() << "\n";
      return kExitRuntimeError;
    }
    endpoint = *std::move(started);
    LogEvent(absl::StrCat("serving metrics on http://", endpoint->address,
                          "/metrics"));
    std::cout << "metrics on " << endpoint->address << std::endl;
  }

  shard::server::CoordinatorServerOptions server_options;
  server_options.listen = absl::GetFlag(FLAGS_listen);
  server_options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  server_options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  server_options.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  server_options.auth_token_file = absl::GetFlag(FLAGS_auth_token_file);
  server_options.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  server_options.health_listen = absl::GetFlag(FLAGS_health_listen);
  server_options.metrics = metrics.get();
  server_options.shutdown_grace = absl::GetFlag(FLAGS_shutdown_grace);
  // The Drain RPC takes the SIGTERM path below.
  server_options.on_drain_requested = [] { kill(getpid(), SIGTERM); };
  absl::StatusOr<std::unique_ptr<shard::server::CoordinatorServer>> server =
      shard::server::CoordinatorServer::Start(&service, server_options);
  if (!server.ok()) {
    std::cerr << "shardd: " << server.status().message() << "\n";
    return absl::IsInvalidArgument(server.status()) ? 2 : 1;
  }
  LogEvent(absl::StrCat(
      "serving shard.v1.Coordinator on ", (*server)->address(),
      (*server)->tls() ? " (TLS" : " (plaintext",
      server_options.tls_client_ca_file.empty() ? "" : ", client certificates",
      server_options.auth_token_file.empty() ? "" : ", bearer token", ")"));
  if (!(*server)->health_address().empty()) {
    LogEvent(absl::StrCat("serving grpc.health.v1 (plaintext) on ",
                          (*server)->health_address()));
  }
  std::cout << "listening on " << (*server)->address() << std::endl;

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  LogEvent(absl::StrCat(
      "received ", strsignal(signal_number), ": draining for up to ",
      absl::FormatDuration(absl::GetFlag(FLAGS_shutdown_grace))));
  (*server)->Stop(absl::GetFlag(FLAGS_shutdown_grace));
  if (journal_broken.load()) {
    LogEvent(
        "stopped: the journal could not be written; exiting 1 so that "
        "a restart recovers from what reached the disk");
    return kExitRuntimeError;
  }
  LogEvent("stopped");
  return 0;
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
      "shardd --listen HOST:PORT (--data-dir DIR | --in-memory) "
      "[--snapshot-every N] [--lease 10s] [--max-order-bytes N] "
      "[--max-wait 5m] [--idle-job-ttl 168h] [--max-waiting-calls N] "
      "[--store-max-bytes N] "
      "[--shutdown-grace 10s] [--metrics-listen HOST:PORT] "
      "[--tls-cert PEM --tls-key PEM [--tls-client-ca PEM]] "
      "[--auth-token-file FILE] [--health-listen HOST:PORT] "
      "[--max-request-bytes N] | shardd --check-data-dir DIR");
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

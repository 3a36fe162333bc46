#include "server/shardd_flags.h"

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "common/cli/command_line.h"
#include "common/net/address.h"
#include "server/metrics/server_metrics.h"

namespace shard::server {
namespace {

// --data-dir, --etcd-endpoints or --in-memory.
void AddStateOptions(CLI::App& app, DaemonFlags* f) {
  const std::string state = "State (exactly one)";
  cli::AddOption(app, "--data-dir", f->data_dir,
                 "directory for durable state (journal + snapshots)")
      ->type_name("DIR")
      ->group(state);
  cli::AddOption(app, "--etcd-endpoints", f->etcd_endpoints,
                 "HOST:PORT[,HOST:PORT...] of etcd members: keep the state "
                 "in etcd and run as one replica of a coordinator cluster "
                 "(one leader serves, the others stand by)")
      ->type_name("HOST:PORT,...")
      ->check(cli::AddressCheck(net::AddressUse::kDial, /*list=*/true))
      ->group(state);
  app.add_flag("--in-memory", f->in_memory,
               "keep state in memory only (tests): a restart loses every job")
      ->group(state);
}

// A replica on etcd: prefix, lease, TLS to etcd, advertised address.
void AddReplicaOptions(CLI::App& app, DaemonFlags* f) {
  const std::string replicas = "Replicas on etcd";
  cli::AddOption(app, "--etcd-prefix", f->etcd_prefix,
                 "etcd key prefix of this coordinator cluster (clusters "
                 "sharing one etcd use different prefixes)")
      ->type_name("PREFIX")
      ->check(cli::NotEmpty(
          "the prefix keeps this cluster's keys apart from every other "
          "user of the etcd cluster; give one such as /shard/"))
      ->group(replicas);
  cli::AddDuration(app, "--leader-lease", &f->leader_lease,
                   "etcd lease of a replica: a leader that cannot renew it "
                   "for this long stops serving and a standby takes over "
                   "(whole seconds, at least 1s; etcd may grant more, and "
                   "the gate follows what it granted)")
      ->group(replicas);
  cli::AddOption(app, "--etcd-ca", f->etcd_ca,
                 "PEM CA of etcd's certificates (TLS to etcd); empty: "
                 "plaintext")
      ->type_name("PEM")
      ->group(replicas);
  cli::AddOption(app, "--etcd-cert", f->etcd_cert,
                 "PEM client certificate for etcd (with --etcd-key)")
      ->type_name("PEM")
      ->group(replicas);
  cli::AddOption(app, "--etcd-key", f->etcd_key,
                 "PEM private key of --etcd-cert")
      ->type_name("PEM")
      ->group(replicas);
  cli::AddOption(app, "--advertise-address", f->advertise_address,
                 "HOST:PORT clients reach this replica at (standbys name the "
                 "leader by it); empty: the bound address, with the host "
                 "name for a wildcard host")
      ->type_name("HOST:PORT")
      ->check(cli::AddressCheck(net::AddressUse::kDial))
      ->group(replicas);
  cli::AddOption(app, "--answer-log", f->answer_log,
                 "append a line for every call and streamed chunk this "
                 "replica admits as the leader (CLOCK_MONOTONIC ns, "
                 "leadership revision), for fault checkers; empty: none")
      ->type_name("FILE")
      ->group(replicas);
}

// Leases, waits, snapshots and the memory and request limits.
void AddLimitOptions(CLI::App& app, DaemonFlags* f) {
  const std::string limits = "Coordination and limits";
  cli::AddDuration(app, "--lease", &f->lease,
                   "a member without a heartbeat for this long is removed "
                   "and its generation ends")
      ->group(limits);
  cli::AddOption(app, "--max-heartbeat-rate", f->max_heartbeat_rate,
                 "heartbeats a second asked of all ranks at most: members "
                 "are asked to heartbeat every ranks / RATE seconds (if "
                 "longer than their own interval) and their leases last at "
                 "least 3 such intervals; 0: their own interval")
      ->type_name("RATE")
      ->group(limits);
  cli::AddDuration(app, "--max-wait", &f->max_wait,
                   "longest wait one call may ask for (JoinJob's wait for "
                   "the world, store gets and waits)")
      ->group(limits);
  cli::AddDuration(app, "--idle-job-ttl", &f->idle_job_ttl,
                   "a job with no member and no call naming it for this "
                   "long is deleted; 0 keeps jobs forever")
      ->group(limits);
  cli::AddOption(app, "--snapshot-every", f->snapshot_every,
                 "records between snapshots, in the journal or in etcd")
      ->type_name("N")
      ->check(cli::AtLeast(1))
      ->group(limits);
  cli::AddOption(app, "--max-order-bytes", f->max_order_bytes,
                 "largest shuffled epoch order (bytes) one job may hold; "
                 "jobs that need more are refused")
      ->type_name("BYTES")
      ->group(limits);
  cli::AddOption(app, "--max-cost-bytes", f->max_cost_bytes,
                 "memory the per-sample costs of balanced-batch jobs may "
                 "take, all jobs together (bytes; 2 or 4 per sample, 4 per "
                 "sample while an upload is in progress)")
      ->type_name("BYTES")
      ->group(limits);
  cli::AddDuration(app, "--cost-upload-ttl", &f->cost_upload_ttl,
                   "costs no job names (uploaded, job not created yet, or "
                   "their job deleted) and uploads that receive no piece "
                   "are removed after this long")
      ->group(limits);
  cli::AddOption(app, "--order-cache-bytes", f->order_cache_bytes,
                 "memory all epoch orders together may take (bytes); 0: "
                 "half of the memory available (the machine's, or the "
                 "cgroup limit if lower)")
      ->type_name("BYTES")
      ->group(limits);
  cli::AddOption(app, "--max-waiting-calls", f->max_waiting_calls,
                 "calls that may wait at once beyond 2 per rank held (members, "
                 "or the ranks a forming world waits for: a join, then a "
                 "rendezvous wait); more answer RESOURCE_EXHAUSTED")
      ->type_name("N")
      ->group(limits);
  cli::AddOption(app, "--store-max-bytes", f->store_max_bytes,
                 "budget of the rendezvous store (all jobs); writes beyond "
                 "it answer RESOURCE_EXHAUSTED")
      ->type_name("BYTES")
      ->group(limits);
  cli::AddOption(app, "--max-request-bytes", f->max_request_bytes,
                 "largest request message accepted")
      ->type_name("BYTES")
      ->check(cli::AtLeast(1))
      ->group(limits);
  cli::AddDuration(app, "--shutdown-grace", &f->shutdown_grace,
                   "how long in-flight calls may run after SIGTERM")
      ->group(limits);
}

// TLS, tokens, and the metrics and health listeners.
void AddSecurityOptions(CLI::App& app, DaemonFlags* f) {
  const std::string security = "Security and endpoints";
  cli::AddOption(app, "--tls-cert", f->tls_cert,
                 "PEM server certificate (chain); with --tls-key enables TLS")
      ->type_name("PEM")
      ->group(security);
  cli::AddOption(app, "--tls-key", f->tls_key, "PEM private key of --tls-cert")
      ->type_name("PEM")
      ->group(security);
  cli::AddOption(app, "--tls-client-ca", f->tls_client_ca,
                 "PEM CA bundle; clients must present a certificate it "
                 "signed (mutual TLS)")
      ->type_name("PEM")
      ->group(security);
  cli::AddOption(app, "--auth-token-file", f->auth_token_file,
                 "file holding the bearer token every call must carry")
      ->type_name("FILE")
      ->group(security);
  cli::AddOption(app, "--admin-token-file", f->admin_token_file,
                 "file holding the token admin calls (delete-job, drain) "
                 "must carry; the other calls accept it too")
      ->type_name("FILE")
      ->group(security);
  cli::AddOption(
      app, "--auth-policy", f->auth_policy,
      "YAML file of principals (token digests, certificate "
      "identities), their roles on job patterns and the tenants' "
      "quotas (docs/operations.md, Tenants); re-read on SIGHUP and when it "
      "changes; not with the token files")
      ->type_name("FILE")
      ->group(security);
  cli::AddDuration(app, "--auth-policy-check-every",
                   &f->auth_policy_check_every,
                   "how often --auth-policy is checked for a change (a "
                   "rotated Secret); 0: only on SIGHUP")
      ->group(security);
  cli::AddOption(app, "--metrics-listen", f->metrics_listen,
                 "HOST:PORT to serve Prometheus metrics on (GET /metrics); "
                 "empty: none")
      ->type_name("HOST:PORT")
      ->check(cli::AddressCheck(net::AddressUse::kListen))
      ->check(cli::StatusCheck(metrics::CheckMetricsListen))
      ->group(security);
  cli::AddOption(app, "--health-listen", f->health_listen,
                 "HOST:PORT of an extra plaintext listener serving only the "
                 "gRPC health service; empty: none")
      ->type_name("HOST:PORT")
      ->check(cli::AddressCheck(net::AddressUse::kListen))
      ->group(security);
}

// The offline checks of a data directory or of etcd.
void AddCheckOptions(CLI::App& app, DaemonFlags* f) {
  const std::string checks =
      "Offline checks (print and exit: 0 sound, 3 not "
      "recoverable)";
  cli::AddOption(app, "--check-data-dir", f->check_data_dir,
                 "verify the data directory DIR read only and print what "
                 "recovery would find")
      ->type_name("DIR")
      ->group(checks);
  app.add_flag("--check-etcd", f->check_etcd,
               "verify the state history in etcd (--etcd-endpoints, "
               "--etcd-prefix) read only and print what a new leader would "
               "find")
      ->group(checks);
}

}  // namespace

bool IsLoopbackListen(const std::string& listen) {
  absl::string_view host =
      absl::string_view(listen).substr(0, listen.rfind(':'));
  absl::ConsumePrefix(&host, "[");
  absl::ConsumeSuffix(&host, "]");
  return absl::StartsWith(host, "127.") || host == "::1" || host == "localhost";
}

void AddDaemonOptions(CLI::App& app, DaemonFlags* f) {
  cli::AddOption(app, "--listen", f->listen,
                 "HOST:PORT to serve gRPC on; port 0 picks a free port. "
                 "0.0.0.0:7070 serves every interface (then use TLS and "
                 "a token)")
      ->type_name("HOST:PORT")
      ->check(cli::AddressCheck(net::AddressUse::kListen));
  AddStateOptions(app, f);
  AddReplicaOptions(app, f);
  AddLimitOptions(app, f);
  AddSecurityOptions(app, f);
  AddCheckOptions(app, f);
}

}  // namespace shard::server

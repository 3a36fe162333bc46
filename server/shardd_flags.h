// shardd's command line: every option, its default and its help text.
// The "shardd" table of docs/reference.md documents the same options.
#ifndef SERVER_SHARDD_FLAGS_H_
#define SERVER_SHARDD_FLAGS_H_

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/time/time.h"

namespace shard::server {

struct DaemonFlags {
  std::string listen = "127.0.0.1:7070";
  std::string data_dir;
  bool in_memory = false;
  std::string etcd_endpoints;
  std::string etcd_prefix = "/shard/";
  absl::Duration leader_lease = absl::Seconds(5);
  std::string etcd_ca;
  std::string etcd_cert;
  std::string etcd_key;
  std::string advertise_address;
  std::string answer_log;
  bool check_etcd = false;
  uint64_t snapshot_every = 10000;
  uint64_t max_order_bytes = uint64_t{4} << 30;
  uint64_t max_cost_bytes = uint64_t{4} << 30;
  absl::Duration cost_upload_ttl = absl::Minutes(10);
  uint64_t order_cache_bytes = 0;
  absl::Duration lease = absl::Seconds(10);
  uint64_t max_heartbeat_rate = 15000;
  absl::Duration idle_job_ttl = absl::Hours(7 * 24);
  absl::Duration max_wait = absl::Minutes(5);
  uint64_t max_waiting_calls = 10000;
  uint64_t store_max_bytes = uint64_t{256} << 20;
  absl::Duration shutdown_grace = absl::Seconds(10);
  std::string metrics_listen;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string auth_token_file;
  std::string admin_token_file;
  std::string auth_policy;
  absl::Duration auth_policy_check_every = absl::Seconds(10);
  std::string health_listen;
  int32_t max_request_bytes = 4 << 20;
  std::string check_data_dir;
};

// Adds shardd's options to `app`, bound to *flags (owned by the caller).
void AddDaemonOptions(CLI::App& app, DaemonFlags* flags);

// True when `listen`'s host is a loopback address (127.0.0.0/8, ::1,
// localhost): only processes on this machine can connect.
bool IsLoopbackListen(const std::string& listen);

}  // namespace shard::server

#endif  // SERVER_SHARDD_FLAGS_H_

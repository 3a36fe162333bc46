// Prometheus metrics of one shardd (see docs/operations.md "Metrics" for every
// name).
//
// ServerMetrics owns the registry and the event metrics (RPC latency by
// service, method and code; indices streamed; journal write/fsync latency
// and group size; etcd leadership and Txn latency; build info). Job gauges
// (members, generation, committed progress, ...) are added by the endpoint,
// read from the coordinator at scrape time, so they are never stale and cost
// nothing between scrapes. Labels never name a rank or a member. Thread-safety:
// every method is thread-safe.
#ifndef SERVER_METRICS_SERVER_METRICS_H_
#define SERVER_METRICS_SERVER_METRICS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/support/server_interceptor.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/metrics/job_figures.h"
#include "shard/v1/shard.pb.h"

namespace shard::metrics {

class ServerMetrics {
 public:
  ServerMetrics();
  ~ServerMetrics();

  // The event metrics, for the HTTP endpoint.
  std::weak_ptr<prometheus::Collectable> registry() const { return registry_; }

  // `full_method` is gRPC's "/package.Service/Method".
  void ObserveRpc(absl::string_view full_method, int grpc_code,
                  absl::Duration latency);
  void AddIndicesStreamed(uint64_t count);
  // +1 when a StreamShard call starts, -1 when it ends.
  void AddActiveStreams(int delta);
  // One group commit: `records` journal records written and fsynced.
  void ObserveJournalGroup(absl::Duration write, absl::Duration sync,
                           size_t records);

  // A call refused by the authorization: `reason` is "unauthenticated"
  // (no credential the coordinator knows), "no_role" (a known caller
  // without the role, --auth-policy) or "quota" (a tenant's quota).
  void AddAuthDenial(absl::string_view reason);

  // Replicated coordinators (shardd --etcd-endpoints).
  // Whether this replica leads (shard_leader 1) or stands by (0).
  void SetLeader(bool leading);
  // This replica became the leader, `takeover` after it first found the
  // leader key gone.
  void ObserveTakeover(absl::Duration takeover);
  // One fenced etcd Txn of `records` state records.
  void ObserveEtcdTxn(absl::Duration latency, size_t records);
  // What CoordinatorOptions::on_lock_held calls: each hold of the
  // coordinator core's lock (histogram and longest). Its callers are
  // serialised by that lock; the ServerMetrics must outlive the core.
  std::function<void(absl::Duration)> CoreLockHoldObserver();

  // An interceptor factory that times every call (for ServerBuilder).
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
  NewInterceptorFactory();

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Histogram>& rpc_duration_;
  prometheus::Counter& indices_streamed_;
  prometheus::Gauge& active_streams_;
  prometheus::Family<prometheus::Counter>& auth_denials_;
  prometheus::Histogram& journal_write_;
  prometheus::Histogram& journal_sync_;
  prometheus::Histogram& journal_group_;
  prometheus::Gauge& leader_;
  prometheus::Counter& leadership_changes_;
  prometheus::Histogram& takeover_;
  prometheus::Histogram& etcd_txn_;
  prometheus::Histogram& etcd_txn_records_;
  prometheus::Histogram& core_lock_hold_;
  prometheus::Gauge& core_lock_hold_max_;
};

// One resource of one tenant (--auth-policy): what it holds, its quota
// (unset: none) and the calls refused for that quota so far.
struct TenantFigure {
  std::string tenant;
  std::string resource;  // jobs, ranks, store_bytes, cost_bytes, waiting_calls
  uint64_t used = 0;
  std::optional<uint64_t> quota;
  uint64_t refusals = 0;
};

// What the coordinator reports at scrape time.
struct CoordinatorView {
  // Each tenant's resources (empty without --auth-policy).
  std::vector<TenantFigure> tenants;
  // Empty when unavailable (draining).
  std::vector<server::JobFigures> jobs;
  // Calls waiting right now, by method name, and their common limit.
  std::vector<std::pair<std::string, size_t>> waiting_calls;
  size_t max_waiting_calls = 0;
  // What each heartbeat's answer asks members to wait at least.
  double heartbeat_pace_seconds = 0;
  // Rendezvous store bytes held and their budget.
  size_t store_bytes = 0;
  size_t store_max_bytes = 0;
  // Epoch order memory (cached or read by streams), its budget, and the
  // orders evicted to make room so far.
  uint64_t order_bytes = 0;
  uint64_t order_bytes_limit = 0;
  uint64_t order_evictions = 0;
  // Costs of balanced-batch jobs held (uploads and tables) and their budget.
  uint64_t cost_bytes = 0;
  uint64_t cost_bytes_limit = 0;
  // Jobs deleted for staying idle (--idle-job-ttl) so far.
  uint64_t idle_jobs_expired = 0;
  // Windows of balanced-batch epochs arranged so far.
  uint64_t batch_windows_arranged = 0;
};

// The HTTP endpoint Prometheus scrapes (GET /metrics); GET / names the
// endpoints and GET /healthz answers 200 (with only the exposer_* counters
// prometheus-cpp serves on every path).
struct MetricsEndpoint {
  std::unique_ptr<prometheus::Exposer> exposer;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables;
  std::string address;  // "HOST:PORT" with the bound port.
};

// Checks a --metrics-listen address beyond the common rule
// (common/net/address.h), as the HTTP server (prometheus-cpp over Debian's
// civetweb, built without IPv6) will take it: INVALID_ARGUMENT, saying why,
// for an IPv6 address and for a host name that does not resolve to an
// IPv4 address.
absl::Status CheckMetricsListen(const std::string& listen);

// Serves `metrics`, the process metrics (process_*) and the coordinator
// gauges built from `view` (called on the scraping thread) on `listen`
// ("HOST:PORT"; port 0 picks a free one). Idle or slow HTTP connections
// cannot block scrapes for long (several worker threads, short request
// timeout). INVALID_ARGUMENT if it cannot bind. `metrics` and what `view`
// reads must outlive the endpoint.
absl::StatusOr<MetricsEndpoint> StartMetricsEndpoint(
    const std::string& listen, const ServerMetrics& metrics,
    std::function<CoordinatorView()> view);

}  // namespace shard::metrics

#endif  // SERVER_METRICS_SERVER_METRICS_H_

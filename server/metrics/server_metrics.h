// Prometheus metrics of one shardd (see README "Metrics" for every name).
//
// ServerMetrics owns the registry and the event metrics (RPC latency by
// service, method and code; indices streamed; journal write/fsync latency;
// build info). Job gauges (members, generation, committed progress, ...) are
// added by the endpoint, read from the coordinator at scrape time, so they
// are never stale and cost nothing between scrapes. Labels never name a rank or
// a member. Thread-safety: every method is thread-safe.
#ifndef SERVER_METRICS_SERVER_METRICS_H_
#define SERVER_METRICS_SERVER_METRICS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/support/server_interceptor.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
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
  void ObserveJournalAppend(absl::Duration write, absl::Duration sync);

  // An interceptor factory that times every call (for ServerBuilder).
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
  NewInterceptorFactory();

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Histogram>& rpc_duration_;
  prometheus::Counter& indices_streamed_;
  prometheus::Histogram& journal_write_;
  prometheus::Histogram& journal_sync_;
};

// The HTTP endpoint Prometheus scrapes (GET /metrics).
struct MetricsEndpoint {
  std::unique_ptr<prometheus::Exposer> exposer;
  std::shared_ptr<prometheus::Collectable> job_gauges;
  std::string address;  // "HOST:PORT" with the bound port.
};

// Serves `metrics` and the per-job gauges built from `list_jobs` (the jobs
// to report, empty when unavailable; called on the scraping thread) on
// `listen` ("HOST:PORT"; port 0 picks a free one). INVALID_ARGUMENT if it
// cannot bind. `metrics` and what `list_jobs` reads must outlive the
// endpoint.
absl::StatusOr<MetricsEndpoint> StartMetricsEndpoint(
    const std::string& listen, const ServerMetrics& metrics,
    std::function<std::vector<shard::v1::Job>()> list_jobs);

}  // namespace shard::metrics

#endif  // SERVER_METRICS_SERVER_METRICS_H_

// Prometheus metrics of one shardd (see README "Metrics" for every name).
//
// ServerMetrics owns the registry and the event metrics (RPC latency by
// service, method and code; indices streamed; journal write/fsync latency;
// build info). Job gauges (members, generation, committed progress, ...) are
// read from the coordinator at scrape time through `list_jobs`, so they are
// never stale and cost nothing between scrapes. Labels never name a rank or
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
  // `list_jobs` returns the jobs to report (empty when unavailable, e.g.
  // while draining); it is called on the scraping thread.
  explicit ServerMetrics(
      std::function<std::vector<shard::v1::Job>()> list_jobs);
  ~ServerMetrics();

  // The registry and the job collector, for the HTTP endpoint.
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables() const;

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
  std::shared_ptr<prometheus::Collectable> job_gauges_;
  prometheus::Family<prometheus::Histogram>& rpc_duration_;
  prometheus::Counter& indices_streamed_;
  prometheus::Histogram& journal_write_;
  prometheus::Histogram& journal_sync_;
};

// The HTTP endpoint Prometheus scrapes (GET /metrics).
struct MetricsEndpoint {
  std::unique_ptr<prometheus::Exposer> exposer;
  int port = 0;  // The bound port (useful with port 0).
};

// Serves `metrics` on `listen` ("HOST:PORT"; port 0 picks a free one).
// INVALID_ARGUMENT if it cannot bind. `metrics` must outlive the endpoint.
absl::StatusOr<MetricsEndpoint> StartMetricsEndpoint(
    const std::string& listen, const ServerMetrics& metrics);

}  // namespace shard::metrics

#endif  // SERVER_METRICS_SERVER_METRICS_H_

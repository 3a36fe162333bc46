#include "server/metrics/server_metrics.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "grpcpp/support/status.h"
#include "prometheus/client_metric.h"
#include "prometheus/collectable.h"
#include "prometheus/gauge.h"
#include "prometheus/metric_family.h"
#include "server/bound_address.h"

namespace shard::metrics {
namespace {

// 100 us .. ~100 s, x ~3.16 per bucket: unary calls are sub-millisecond,
// joins and streams can last minutes (they land in +Inf).
prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.0001, 0.000316, 0.001, 0.00316, 0.01, 0.0316, 0.1,
          0.316,  1,        3.16,  10,      31.6, 100};
}

// 10 us .. ~300 ms for one journal write or fsync.
prometheus::Histogram::BucketBoundaries JournalBuckets() {
  return {0.00001, 0.0000316, 0.0001, 0.000316, 0.001,
          0.00316, 0.01,      0.0316, 0.1,      0.316};
}

// Per-job gauges, built from the coordinator's job list at scrape time.
class JobGauges : public prometheus::Collectable {
 public:
  explicit JobGauges(std::function<std::vector<shard::v1::Job>()> list_jobs)
      : list_jobs_(std::move(list_jobs)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    const std::vector<shard::v1::Job> jobs = list_jobs_();
    prometheus::MetricFamily count =
        Family("shard_jobs", "Jobs the coordinator holds.");
    count.metric.push_back(Gauge({}, static_cast<double>(jobs.size())));
    std::vector<prometheus::MetricFamily> families = {
        count,
        Family("shard_job_members", "Members joined to the job."),
        Family("shard_job_world_size",
               "Ranks of the job's current generation (0 while forming)."),
        Family("shard_job_generation", "The job's membership generation."),
        Family("shard_job_committed_epoch",
               "Epoch of the job's last committed progress."),
        Family("shard_job_committed_position",
               "Global position within the committed epoch.")};
    for (const shard::v1::Job& job : jobs) {
      const std::vector<prometheus::ClientMetric::Label> labels = {
          {"job", job.job_id()}};
      families[1].metric.push_back(Gauge(labels, job.joined_members()));
      families[2].metric.push_back(Gauge(labels, job.current_world_size()));
      families[3].metric.push_back(
          Gauge(labels, static_cast<double>(job.generation())));
      families[4].metric.push_back(
          Gauge(labels, static_cast<double>(job.committed_epoch())));
      families[5].metric.push_back(
          Gauge(labels, static_cast<double>(job.committed_position())));
    }
    return families;
  }

 private:
  static prometheus::MetricFamily Family(std::string name, std::string help) {
    prometheus::MetricFamily family;
    family.name = std::move(name);
    family.help = std::move(help);
    family.type = prometheus::MetricType::Gauge;
    return family;
  }
  static prometheus::ClientMetric Gauge(
      std::vector<prometheus::ClientMetric::Label> labels, double value) {
    prometheus::ClientMetric metric;
    metric.label = std::move(labels);
    metric.gauge.value = value;
    return metric;
  }

  std::function<std::vector<shard::v1::Job>()> list_jobs_;
};

// Times one call from its start to the status it sends.
class RpcTimer : public grpc::experimental::Interceptor {
 public:
  RpcTimer(ServerMetrics* metrics, const char* method)
      : metrics_(metrics), method_(method), began_(absl::Now()) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      metrics_->ObserveRpc(method_, methods->GetSendStatus().error_code(),
                           absl::Now() - began_);
    }
    methods->Proceed();
  }

 private:
  ServerMetrics* metrics_;
  const char* method_;
  absl::Time began_;
};

class RpcTimerFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcTimerFactory(ServerMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new RpcTimer(metrics_, info->method());
  }

 private:
  ServerMetrics* metrics_;
};

}  // namespace

ServerMetrics::ServerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      rpc_duration_(prometheus::BuildHistogram()
                        .Name("shard_rpc_duration_seconds")
                        .Help("gRPC calls by service, method and status "
                              "code: time from start to status (streams: "
                              "the whole stream). _count counts calls.")
                        .Register(*registry_)),
      indices_streamed_(prometheus::BuildCounter()
                            .Name("shard_indices_streamed_total")
                            .Help("Sample indices sent to trainers over "
                                  "StreamShard.")
                            .Register(*registry_)
                            .Add({})),
      journal_write_(prometheus::BuildHistogram()
                         .Name("shard_journal_write_duration_seconds")
                         .Help("Writing one record to the journal, before "
                               "fsync.")
                         .Register(*registry_)
                         .Add({}, JournalBuckets())),
      journal_sync_(prometheus::BuildHistogram()
                        .Name("shard_journal_fsync_duration_seconds")
                        .Help("fsync of the journal after one record.")
                        .Register(*registry_)
                        .Add({}, JournalBuckets())) {
  prometheus::BuildGauge()
      .Name("shard_build_info")
      .Help("Always 1; the labels describe the running shardd.")
      .Register(*registry_)
      .Add({{"version", SHARD_VERSION}})
      .Set(1);
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::ObserveRpc(absl::string_view full_method, int grpc_code,
                               absl::Duration latency) {
  // "/shard.v1.Coordinator/JoinJob" -> ("shard.v1.Coordinator", "JoinJob").
  // Paths no service implements are one "unknown" series, so that a client
  // cannot grow the label space.
  std::vector<absl::string_view> parts =
      absl::StrSplit(full_method, '/', absl::SkipEmpty());
  const bool known = parts.size() == 2 && grpc_code != grpc::UNIMPLEMENTED;
  const std::string service(known ? parts[0] : "unknown");
  const std::string method(known ? parts[1] : "unknown");
  rpc_duration_
      .Add({{"service", service},
            {"method", method},
            {"code", absl::StatusCodeToString(
                         static_cast<absl::StatusCode>(grpc_code))}},
           LatencyBuckets())
      .Observe(absl::ToDoubleSeconds(latency));
}

void ServerMetrics::AddIndicesStreamed(uint64_t count) {
  indices_streamed_.Increment(static_cast<double>(count));
}

void ServerMetrics::ObserveJournalAppend(absl::Duration write,
                                         absl::Duration sync) {
  journal_write_.Observe(absl::ToDoubleSeconds(write));
  journal_sync_.Observe(absl::ToDoubleSeconds(sync));
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
ServerMetrics::NewInterceptorFactory() {
  return std::make_unique<RpcTimerFactory>(this);
}

absl::StatusOr<MetricsEndpoint> StartMetricsEndpoint(
    const std::string& listen, const ServerMetrics& metrics,
    std::function<std::vector<shard::v1::Job>()> list_jobs) {
  MetricsEndpoint endpoint;
  try {
    endpoint.exposer = std::make_unique<prometheus::Exposer>(listen);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics-listen ", listen, ": cannot serve HTTP (", e.what(), ")"));
  }
  endpoint.job_gauges = std::make_shared<JobGauges>(std::move(list_jobs));
  endpoint.exposer->RegisterCollectable(metrics.registry());
  endpoint.exposer->RegisterCollectable(endpoint.job_gauges);
  const std::vector<int> ports = endpoint.exposer->GetListeningPorts();
  endpoint.address =
      server::BoundAddress(listen, ports.empty() ? 0 : ports.front());
  return endpoint;
}

}  // namespace shard::metrics

#include "server/metrics/server_metrics.h"

#include <netdb.h>
#include <sys/socket.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "grpcpp/support/status.h"
#include "prometheus/client_metric.h"
#include "prometheus/collectable.h"
#include "prometheus/gauge.h"
#include "prometheus/metric_family.h"
#include "server/metrics/process_collector.h"
#include "server/runtime/bound_address.h"
#include "shard/version.h"

namespace shard::metrics {
namespace {

// One unlabelled series (or one with `labels`) of a new family.
prometheus::Counter& Counter(prometheus::Registry& registry,
                             const std::string& name, const std::string& help) {
  return prometheus::BuildCounter()
      .Name(name)
      .Help(help)
      .Register(registry)
      .Add({});
}

prometheus::Gauge& Gauge(
    prometheus::Registry& registry, const std::string& name,
    const std::string& help,
    const std::map<std::string, std::string>& labels = {}) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add(
      labels);
}

prometheus::Histogram& Histogram(
    prometheus::Registry& registry, const std::string& name,
    const std::string& help,
    const prometheus::Histogram::BucketBoundaries& buckets) {
  return prometheus::BuildHistogram()
      .Name(name)
      .Help(help)
      .Register(registry)
      .Add({}, buckets);
}

// 100 us .. ~100 s, x ~3.16 per bucket: unary calls are sub-millisecond,
// joins and streams can last minutes (they land in +Inf).
prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.0001, 0.000316, 0.001, 0.00316, 0.01, 0.0316, 0.1,
          0.316,  1,        3.16,  10,      31.6, 100};
}

// 1, 2, 5 per decade from 1 us to 10 s: how long one call holds the
// coordinator core's lock.
prometheus::Histogram::BucketBoundaries LockHoldBuckets() {
  prometheus::Histogram::BucketBoundaries bounds;
  for (int exponent = -6; exponent <= 0; ++exponent) {
    for (double step : {1.0, 2.0, 5.0}) {
      bounds.push_back(step * std::pow(10.0, exponent));
    }
  }
  bounds.push_back(10);
  return bounds;
}

// 10 us .. ~300 ms for one journal write or fsync.
prometheus::Histogram::BucketBoundaries JournalBuckets() {
  return {0.00001, 0.0000316, 0.0001, 0.000316, 0.001,
          0.00316, 0.01,      0.0316, 0.1,      0.316};
}

// Records per group commit: 1 .. 4096, x4 per bucket.
prometheus::Histogram::BucketBoundaries GroupBuckets() {
  return {1, 4, 16, 64, 256, 1024, 4096};
}

prometheus::MetricFamily GaugeFamily(std::string name, std::string help) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = prometheus::MetricType::Gauge;
  return family;
}

prometheus::ClientMetric GaugeValue(
    std::vector<prometheus::ClientMetric::Label> labels, double value) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  metric.gauge.value = value;
  return metric;
}

// One unlabelled gauge.
prometheus::MetricFamily SingleGauge(std::string name, std::string help,
                                     double value) {
  prometheus::MetricFamily family =
      GaugeFamily(std::move(name), std::move(help));
  family.metric.push_back(GaugeValue({}, value));
  return family;
}

prometheus::MetricFamily CounterFamily(std::string name, std::string help) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = prometheus::MetricType::Counter;
  return family;
}

prometheus::ClientMetric CounterValue(
    std::vector<prometheus::ClientMetric::Label> labels, double value) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  metric.counter.value = value;
  return metric;
}

prometheus::MetricFamily SingleCounter(std::string name, std::string help,
                                       double value) {
  prometheus::MetricFamily family =
      CounterFamily(std::move(name), std::move(help));
  family.metric.push_back(CounterValue({}, value));
  return family;
}

// Fixed families: GET / answers one whose help names the endpoints, GET
// /healthz none (200 while the endpoint serves, with only the exposer_*
// counters prometheus-cpp adds to every path).
class FixedFamilies : public prometheus::Collectable {
 public:
  explicit FixedFamilies(std::vector<prometheus::MetricFamily> families)
      : families_(std::move(families)) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    return families_;
  }

 private:
  const std::vector<prometheus::MetricFamily> families_;
};

std::vector<prometheus::MetricFamily> EndpointIndex() {
  prometheus::MetricFamily family;
  family.name = "shard_http_endpoints";
  family.help =
      "shardd metrics port: GET /metrics (Prometheus text format), GET "
      "/healthz (200 while shardd runs)";
  family.type = prometheus::MetricType::Gauge;
  prometheus::ClientMetric metric;
  metric.gauge.value = 2;
  family.metric.push_back(metric);
  return {family};
}

// The job gauges (one series per job) and the counters of a mixture's
// indices streamed by source.
std::vector<prometheus::MetricFamily> JobFamilies(const CoordinatorView& view) {
  std::vector<prometheus::MetricFamily> families = {
      SingleGauge("shard_jobs", "Jobs the coordinator holds.",
                  static_cast<double>(view.jobs.size())),
      GaugeFamily("shard_job_members", "Members joined to the job."),
      GaugeFamily("shard_job_world_size",
                  "Ranks of the job's current generation (0 while "
                  "forming)."),
      GaugeFamily("shard_job_generation", "The job's membership generation."),
      GaugeFamily("shard_job_committed_epoch",
                  "Epoch of the job's last committed progress."),
      GaugeFamily("shard_job_committed_position",
                  "Global position within the committed epoch."),
      CounterFamily("shard_job_source_indices_streamed_total",
                    "Indices of a mixture job delivered over StreamShard, "
                    "by source (the first 16 sources by name, the rest as "
                    "(other)), since this shardd began serving.")};
  for (const server::JobFigures& job : view.jobs) {
    const std::vector<prometheus::ClientMetric::Label> labels = {
        {"job_id", job.job_id}};
    families[1].metric.push_back(GaugeValue(labels, job.members));
    families[2].metric.push_back(GaugeValue(labels, job.world_size));
    families[3].metric.push_back(
        GaugeValue(labels, static_cast<double>(job.generation)));
    families[4].metric.push_back(
        GaugeValue(labels, static_cast<double>(job.committed_epoch)));
    families[5].metric.push_back(
        GaugeValue(labels, static_cast<double>(job.committed_position)));
    for (const auto& [source, count] : job.indices_streamed_by_source) {
      families[6].metric.push_back(
          CounterValue({{"job_id", job.job_id}, {"source", source}}, count));
    }
  }
  return families;
}

// The tenants' resources against their quotas, and the refusals.
std::vector<prometheus::MetricFamily> TenantFamilies(
    const CoordinatorView& view) {
  std::vector<prometheus::MetricFamily> families = {
      GaugeFamily("shard_tenant_used",
                  "What a tenant's jobs hold now, by resource (jobs, ranks, "
                  "store_bytes, cost_bytes, waiting_calls; shardd "
                  "--auth-policy)."),
      GaugeFamily("shard_tenant_quota",
                  "A tenant's quota of a resource (only those its policy "
                  "sets)."),
      CounterFamily("shard_tenant_quota_refusals_total",
                    "Calls refused RESOURCE_EXHAUSTED for a tenant's quota, "
                    "by resource, since shardd started.")};
  for (const TenantFigure& figure : view.tenants) {
    const std::vector<prometheus::ClientMetric::Label> labels = {
        {"resource", figure.resource}, {"tenant", figure.tenant}};
    families[0].metric.push_back(
        GaugeValue(labels, static_cast<double>(figure.used)));
    if (figure.quota) {
      families[1].metric.push_back(
          GaugeValue(labels, static_cast<double>(*figure.quota)));
    }
    families[2].metric.push_back(
        CounterValue(labels, static_cast<double>(figure.refusals)));
  }
  return families;
}

// Job and coordinator gauges, built from the coordinator at scrape time.
class CoordinatorGauges : public prometheus::Collectable {
 public:
  explicit CoordinatorGauges(std::function<CoordinatorView()> view)
      : view_(std::move(view)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    const CoordinatorView view = view_();
    std::vector<prometheus::MetricFamily> families = JobFamilies(view);
    for (prometheus::MetricFamily& family : TenantFamilies(view)) {
      families.push_back(std::move(family));
    }
    prometheus::MetricFamily waiting = GaugeFamily(
        "shard_waiting_calls",
        "Calls blocked waiting right now (joins for their world, store "
        "gets and waits for keys), by method.");
    for (const auto& [method, count] : view.waiting_calls) {
      waiting.metric.push_back(
          GaugeValue({{"method", method}}, static_cast<double>(count)));
    }
    families.push_back(std::move(waiting));
    families.push_back(SingleGauge(
        "shard_waiting_calls_limit",
        "Waiting calls allowed at once (shardd --max-waiting-calls plus 2 "
        "per rank of the jobs held).",
        static_cast<double>(view.max_waiting_calls)));
    families.push_back(SingleGauge(
        "shard_heartbeat_pace_seconds",
        "How long each heartbeat's answer asks a member to wait before its "
        "next (ranks held / shardd --max-heartbeat-rate); members wait the "
        "longer of this and their own interval.",
        view.heartbeat_pace_seconds));
    families.push_back(
        SingleGauge("shard_store_bytes",
                    "Bytes the rendezvous store holds (keys, values and "
                    "per-key overhead).",
                    static_cast<double>(view.store_bytes)));
    families.push_back(
        SingleGauge("shard_store_bytes_limit",
                    "Rendezvous store budget (shardd --store-max-bytes).",
                    static_cast<double>(view.store_max_bytes)));
    families.push_back(SingleGauge(
        "shard_order_cache_bytes",
        "Bytes of epoch orders being computed, cached or read by streams.",
        static_cast<double>(view.order_bytes)));
    families.push_back(
        SingleGauge("shard_order_cache_bytes_limit",
                    "Epoch order budget (shardd --order-cache-bytes).",
                    static_cast<double>(view.order_bytes_limit)));
    families.push_back(SingleGauge(
        "shard_cost_bytes",
        "Bytes of balanced-batch costs held: uploads in progress and the "
        "costs of jobs (or uploaded for jobs not created yet).",
        static_cast<double>(view.cost_bytes)));
    families.push_back(SingleGauge("shard_cost_bytes_limit",
                                   "Costs budget (shardd --max-cost-bytes).",
                                   static_cast<double>(view.cost_bytes_limit)));
    families.push_back(SingleCounter(
        "shard_order_cache_evictions_total",
        "Cached epoch orders nobody read that were evicted to make room.",
        static_cast<double>(view.order_evictions)));
    families.push_back(
        SingleCounter("shard_jobs_expired_total",
                      "Jobs deleted because they had no member and no call for "
                      "shardd --idle-job-ttl.",
                      static_cast<double>(view.idle_jobs_expired)));
    families.push_back(SingleCounter(
        "shard_batch_windows_arranged_total",
        "Windows of balanced-batch epochs arranged: once for the ranks of "
        "a world, again for a rank past what is kept (it lagged, or "
        "re-opened its stream).",
        static_cast<double>(view.batch_windows_arranged)));
    return families;
  }

 private:
  std::function<CoordinatorView()> view_;
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
      indices_streamed_(
          Counter(*registry_, "shard_indices_streamed_total",
                  "Sample indices sent to trainers over StreamShard.")),
      active_streams_(
          Gauge(*registry_, "shard_active_streams",
                "StreamShard calls in progress (opening or streaming).")),
      auth_denials_(prometheus::BuildCounter()
                        .Name("shard_auth_denials_total")
                        .Help("Calls refused by the authorization, by "
                              "reason: unauthenticated, no_role, quota.")
                        .Register(*registry_)),
      journal_write_(Histogram(
          *registry_, "shard_journal_write_duration_seconds",
          "Writing one group of records to the journal, before fsync.",
          JournalBuckets())),
      journal_sync_(
          Histogram(*registry_, "shard_journal_fsync_duration_seconds",
                    "fsync of the journal after one group of records.",
                    JournalBuckets())),
      journal_group_(Histogram(*registry_, "shard_journal_group_records",
                               "Records made durable by one fsync (group "
                               "commit of the updates queued meanwhile).",
                               GroupBuckets())),
      leader_(Gauge(*registry_, "shard_leader",
                    "1 while this shardd serves: the leader of its "
                    "coordinator cluster (etcd mode) or a shardd with a "
                    "local journal; 0 while it stands by.")),
      leadership_changes_(
          Counter(*registry_, "shard_leadership_changes_total",
                  "Times this replica became the leader or stopped leading.")),
      takeover_(Histogram(*registry_, "shard_takeover_seconds",
                          "From finding the leader key gone (the old "
                          "leader's lease lapsed or was revoked) to serving "
                          "as the new leader.",
                          LatencyBuckets())),
      etcd_txn_(
          Histogram(*registry_, "shard_etcd_txn_duration_seconds",
                    "One fenced etcd Txn writing a group of state records.",
                    LatencyBuckets())),
      etcd_txn_records_(Histogram(
          *registry_, "shard_etcd_txn_records",
          "State records written by one fenced etcd Txn (group commit).",
          GroupBuckets())),
      core_lock_hold_(Histogram(
          *registry_, "shard_core_lock_hold_seconds",
          "How long each call (and each lease check and scrape) held the "
          "coordinator core's lock.",
          LockHoldBuckets())),
      core_lock_hold_max_(
          Gauge(*registry_, "shard_core_lock_hold_max_seconds",
                "The longest the coordinator core's lock was held by one call "
                "since shardd started.")) {
  Gauge(*registry_, "shard_build_info",
        "Always 1; the labels describe the running shardd.",
        {{"version", shard::Version()}})
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

void ServerMetrics::AddAuthDenial(absl::string_view reason) {
  auth_denials_.Add({{"reason", std::string(reason)}}).Increment();
}

void ServerMetrics::AddActiveStreams(int delta) {
  active_streams_.Increment(delta);
}

void ServerMetrics::ObserveJournalGroup(absl::Duration write,
                                        absl::Duration sync, size_t records) {
  journal_write_.Observe(absl::ToDoubleSeconds(write));
  journal_sync_.Observe(absl::ToDoubleSeconds(sync));
  journal_group_.Observe(static_cast<double>(records));
}

std::function<void(absl::Duration)> ServerMetrics::CoreLockHoldObserver() {
  return [this](absl::Duration held) {
    const double seconds = absl::ToDoubleSeconds(held);
    core_lock_hold_.Observe(seconds);
    // Read and set without a race: the core's lock serialises the calls.
    if (seconds > core_lock_hold_max_.Value()) {
      core_lock_hold_max_.Set(seconds);
    }
  };
}

void ServerMetrics::SetLeader(bool leading) {
  if ((leader_.Value() != 0) != leading) leadership_changes_.Increment();
  leader_.Set(leading ? 1 : 0);
}

void ServerMetrics::ObserveTakeover(absl::Duration takeover) {
  takeover_.Observe(absl::ToDoubleSeconds(takeover));
}

void ServerMetrics::ObserveEtcdTxn(absl::Duration latency, size_t records) {
  etcd_txn_.Observe(absl::ToDoubleSeconds(latency));
  etcd_txn_records_.Observe(static_cast<double>(records));
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
ServerMetrics::NewInterceptorFactory() {
  return std::make_unique<RpcTimerFactory>(this);
}

absl::Status CheckMetricsListen(const std::string& listen) {
  if (absl::StartsWith(listen, "[")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", listen,
        "\" is an IPv6 address: the metrics endpoint serves IPv4 only (its "
        "HTTP server, Debian's civetweb, is built without IPv6); give an "
        "IPv4 address or host name, e.g. 0.0.0.0:9090"));
  }
  const std::string host = listen.substr(0, listen.rfind(':'));
  if (host.empty()) return absl::OkStatus();
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  const int error = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (error != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", listen, "\": host \"", host, "\" has no IPv4 address here (",
        gai_strerror(error), "); the metrics endpoint serves IPv4 only"));
  }
  freeaddrinfo(found);
  return absl::OkStatus();
}

absl::StatusOr<MetricsEndpoint> StartMetricsEndpoint(
    const std::string& listen, const ServerMetrics& metrics,
    std::function<CoordinatorView()> view) {
  MetricsEndpoint endpoint;
  try {
    // civetweb serves one connection per worker thread and waits up to
    // request_timeout_ms for a request on it: enough workers and a short
    // timeout keep idle connections from blocking scrapes.
    endpoint.exposer = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", listen, "num_threads", "16",
                                 "request_timeout_ms", "5000"});
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics-listen ", listen, ": cannot serve HTTP (", e.what(), ")"));
  }
  endpoint.collectables = {std::make_shared<CoordinatorGauges>(std::move(view)),
                           NewProcessCollector()};
  endpoint.exposer->RegisterCollectable(metrics.registry());
  for (const auto& collectable : endpoint.collectables) {
    endpoint.exposer->RegisterCollectable(collectable);
  }
  endpoint.collectables.push_back(
      std::make_shared<FixedFamilies>(EndpointIndex()));
  endpoint.exposer->RegisterCollectable(endpoint.collectables.back(), "/");
  endpoint.collectables.push_back(
      std::make_shared<FixedFamilies>(std::vector<prometheus::MetricFamily>{}));
  endpoint.exposer->RegisterCollectable(endpoint.collectables.back(),
                                        "/healthz");
  const std::vector<int> ports = endpoint.exposer->GetListeningPorts();
  endpoint.address =
      server::BoundAddress(listen, ports.empty() ? 0 : ports.front());
  return endpoint;
}

}  // namespace shard::metrics

#include "server/shardd_metrics.h"

#include <cstdint>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/runtime/event_log.h"

namespace shard::server {
namespace {

// Each tenant's resources of the policy in force (none without one).
std::vector<metrics::TenantFigure> TenantFiguresOf(
    CoordinatorService& service, const security::PolicyHolder* policy) {
  std::vector<metrics::TenantFigure> figures;
  if (policy == nullptr) return figures;
  const auto refusals = policy->quota_refusals().Counts();
  for (const TenantLimits& tenant : policy->Current()->tenants()) {
    const TenantUsage usage = service.UsageOf(tenant);
    const struct {
      const char* resource;
      uint64_t used;
      std::optional<uint64_t> TenantLimits::*quota;
    } resources[] = {
        {"jobs", usage.jobs, &TenantLimits::max_jobs},
        {"ranks", usage.ranks, &TenantLimits::max_ranks},
        {"store_bytes", usage.store_bytes, &TenantLimits::max_store_bytes},
        {"cost_bytes", usage.cost_bytes, &TenantLimits::max_cost_bytes},
        {"waiting_calls", usage.waiting_calls,
         &TenantLimits::max_waiting_calls}};
    for (const auto& [resource, used, quota] : resources) {
      const auto refused = refusals.find({tenant.tenant, resource});
      figures.push_back({tenant.tenant, resource, used, tenant.*quota,
                         refused == refusals.end() ? 0 : refused->second});
    }
  }
  return figures;
}

}  // namespace

metrics::CoordinatorView CoordinatorViewOf(
    CoordinatorService& service, const CoordinatorOptions& options,
    const security::PolicyHolder* policy) {
  using Kind = WaitingCalls::Kind;
  metrics::CoordinatorView view;
  CoordinatorFigures figures = service.Figures();
  view.jobs = std::move(figures.jobs);
  for (Kind kind : {Kind::kJoin, Kind::kStoreGet, Kind::kStoreWait}) {
    view.waiting_calls.emplace_back(WaitingCalls::KindName(kind),
                                    figures.waiting(kind));
  }
  view.max_waiting_calls = figures.waiting_limit;
  view.heartbeat_pace_seconds = absl::ToDoubleSeconds(figures.heartbeat_pace);
  view.store_bytes = figures.rendezvous_bytes;
  view.store_max_bytes = options.rendezvous.max_total_bytes;
  view.order_bytes = figures.order_bytes;
  view.order_bytes_limit = options.order_cache_bytes;
  view.order_evictions = figures.order_evictions;
  view.cost_bytes = figures.cost_bytes;
  view.cost_bytes_limit = options.max_cost_bytes;
  view.idle_jobs_expired = figures.idle_jobs_expired;
  view.batch_windows_arranged = figures.batch_windows_arranged;
  view.tenants = TenantFiguresOf(service, policy);
  return view;
}

bool StartMetrics(const DaemonFlags& flags, metrics::ServerMetrics& metrics,
                  std::function<metrics::CoordinatorView()> view,
                  std::optional<metrics::MetricsEndpoint>& endpoint) {
  const std::string listen = flags.metrics_listen;
  if (listen.empty()) return true;
  absl::StatusOr<metrics::MetricsEndpoint> started =
      metrics::StartMetricsEndpoint(listen, metrics, std::move(view));
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

}  // namespace shard::server

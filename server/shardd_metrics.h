// shardd's metrics endpoint: what the coordinator reports at scrape time
// (its figures, and each tenant's use of its quotas under --auth-policy)
// and the endpoint that serves it. Used by shardd_main.cc only.
#ifndef SERVER_SHARDD_METRICS_H_
#define SERVER_SHARDD_METRICS_H_

#include <functional>
#include <optional>

#include "server/metrics/server_metrics.h"
#include "server/security/policy_holder.h"
#include "server/services/coordinator_service.h"
#include "server/shardd_flags.h"

namespace shard::server {

// The coordinator gauges Prometheus reads at scrape time; `policy` (null:
// none) adds each tenant's resources. Called on the scraping thread.
metrics::CoordinatorView CoordinatorViewOf(
    CoordinatorService& service, const CoordinatorOptions& options,
    const security::PolicyHolder* policy);

// Starts the metrics endpoint when --metrics-listen asks for one (false
// after reporting a failure on stderr). `view` is called at scrape time.
bool StartMetrics(const DaemonFlags& flags, metrics::ServerMetrics& metrics,
                  std::function<metrics::CoordinatorView()> view,
                  std::optional<metrics::MetricsEndpoint>& endpoint);

}  // namespace shard::server

#endif  // SERVER_SHARDD_METRICS_H_

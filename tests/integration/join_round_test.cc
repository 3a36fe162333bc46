// A waiting join's rounds: a coordinator that answers a round at once (a
// wait bound of 0, which shardd now refuses but an older one took) does
// not make the client join again in a busy loop.
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "server/metrics/server_metrics.h"
#include "tests/support/test_cluster.h"

namespace shard::testing {
namespace {

// JoinJob calls the coordinator answered, by the RPC histogram's count.
double JoinCalls(const metrics::ServerMetrics& metrics) {
  double calls = 0;
  for (const prometheus::MetricFamily& family :
       metrics.registry().lock()->Collect()) {
    if (family.name != "shard_rpc_duration_seconds") continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      for (const prometheus::ClientMetric::Label& label : metric.label) {
        if (label.value == "JoinJob") {
          calls += static_cast<double>(metric.histogram.sample_count);
        }
      }
    }
  }
  return calls;
}

TEST(JoinRoundTest, ARoundAnsweredAtOnceIsNotRepeatedAtOnce) {
  metrics::ServerMetrics metrics;
  server::CoordinatorServerOptions server_options;
  server_options.metrics = &metrics;
  server::CoordinatorOptions options;
  options.max_wait = absl::ZeroDuration();
  TestCluster cluster(options, server_options);
  shard::v1::JobSpec spec;
  spec.set_dataset_size(10);
  spec.set_world_size(2);
  const absl::StatusOr<client::Membership> joined =
      cluster.NewClient()->Join("job", "alone", spec, absl::Seconds(3));
  EXPECT_TRUE(absl::IsDeadlineExceeded(joined.status())) << joined.status();
  // A round a second: 3 or 4 joins (a busy loop made thousands).
  EXPECT_LE(JoinCalls(metrics), 5) << "joins in 3 s";
  EXPECT_GE(JoinCalls(metrics), 2) << "joins in 3 s";
}

}  // namespace
}  // namespace shard::testing

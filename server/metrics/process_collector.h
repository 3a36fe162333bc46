// The standard Prometheus process metrics of this process, read from /proc
// at scrape time: process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_open_fds, process_max_fds,
// process_start_time_seconds, plus process_threads. Linux only; a value
// that cannot be read is left out of the scrape. Thread-safe.
#ifndef SERVER_METRICS_PROCESS_COLLECTOR_H_
#define SERVER_METRICS_PROCESS_COLLECTOR_H_

#include <memory>

#include "prometheus/collectable.h"

namespace shard::metrics {

std::shared_ptr<prometheus::Collectable> NewProcessCollector();

}  // namespace shard::metrics

#endif  // SERVER_METRICS_PROCESS_COLLECTOR_H_

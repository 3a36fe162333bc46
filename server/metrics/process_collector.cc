#include "server/metrics/process_collector.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"

namespace shard::metrics {
namespace {

// The fields of /proc/self/stat this collector reports.
struct ProcStat {
  double cpu_seconds;
  double threads;
  double start_ticks_after_boot;
  double virtual_bytes;
  double resident_bytes;
};

std::optional<ProcStat> ReadProcStat() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // The command name (field 2) may hold spaces; fields after it follow the
  // last ')'. Field 3 is then the first one read.
  const size_t name_end = line.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(name_end + 2));
  std::vector<std::string> values;
  for (std::string value; fields >> value;) values.push_back(value);
  // Field n (1-based, as in proc(5)) is values[n - 3].
  auto field = [&values](size_t n) { return std::stod(values.at(n - 3)); };
  try {
    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    return ProcStat{(field(14) + field(15)) / ticks, field(20),
                    field(22) / ticks, field(23), field(24) * page};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<double> BootTimeSeconds() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      double seconds;
      if (in >> seconds) return seconds;
      return std::nullopt;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

std::optional<double> OpenFds() {
  std::error_code error;
  std::filesystem::directory_iterator fds("/proc/self/fd", error);
  if (error) return std::nullopt;
  double count = 0;
  for (auto it = fds; it != std::filesystem::directory_iterator();
       it.increment(error)) {
    if (error) return std::nullopt;
    ++count;
  }
  return count - 1;  // Not the descriptor listing the directory.
}

prometheus::MetricFamily Family(std::string name, std::string help,
                                prometheus::MetricType type, double value) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(metric);
  return family;
}

class ProcessCollector : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    using prometheus::MetricType;
    std::vector<prometheus::MetricFamily> families;
    if (std::optional<ProcStat> stat = ReadProcStat()) {
      families.push_back(Family("process_cpu_seconds_total",
                                "Total user and system CPU time spent in "
                                "seconds.",
                                MetricType::Counter, stat->cpu_seconds));
      families.push_back(Family("process_resident_memory_bytes",
                                "Resident memory size in bytes.",
                                MetricType::Gauge, stat->resident_bytes));
      families.push_back(Family("process_virtual_memory_bytes",
                                "Virtual memory size in bytes.",
                                MetricType::Gauge, stat->virtual_bytes));
      families.push_back(Family("process_threads", "Threads of the process.",
                                MetricType::Gauge, stat->threads));
      if (std::optional<double> boot = BootTimeSeconds()) {
        families.push_back(
            Family("process_start_time_seconds",
                   "Start time of the process since unix epoch in seconds.",
                   MetricType::Gauge, *boot + stat->start_ticks_after_boot));
      }
    }
    if (std::optional<double> fds = OpenFds()) {
      families.push_back(Family("process_open_fds",
                                "Number of open file descriptors.",
                                MetricType::Gauge, *fds));
    }
    rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
      families.push_back(
          Family("process_max_fds", "Maximum number of open file descriptors.",
                 MetricType::Gauge, static_cast<double>(limit.rlim_cur)));
    }
    return families;
  }
};

}  // namespace

std::shared_ptr<prometheus::Collectable> NewProcessCollector() {
  return std::make_shared<ProcessCollector>();
}

}  // namespace shard::metrics

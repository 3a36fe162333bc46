#include "client/shardctl/job_warnings.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/plan/mixtures/mixture.h"

namespace shard::shardctl {

std::vector<std::string> JobWarnings(const shard::v1::Job& job) {
  const shard::v1::JobSpec& spec = job.spec();
  std::vector<std::string> warnings;
  for (int k = 0; k < spec.sources_size() && k < job.source_counts_size();
       ++k) {
    if (job.source_counts(k) == 0) {
      warnings.push_back(absl::StrCat(
          "source ", spec.sources(k).name(),
          " gets 0 samples per epoch: its share rounds to none of the "
          "epoch's ",
          spec.epoch_size(), ", so it is never served"));
    }
  }
  if (job.samples_per_rank() == 0 && !spec.has_batches()) {
    warnings.push_back(absl::StrCat(
        "every rank gets 0 samples per epoch: the drop tail cuts an epoch of ",
        plan::EpochSize(spec), " samples to whole rounds of the world size ",
        spec.world_size(), " (tail pad or uneven serves them)"));
  }
  return warnings;
}

void PrintJobWarnings(const shard::v1::Job& job) {
  for (const std::string& warning : JobWarnings(job)) {
    std::fprintf(stderr, "shardctl: warning: %s\n", warning.c_str());
  }
}

}  // namespace shard::shardctl

#include "server/plans/stored_costs_check.h"

#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/plans/cost_store.h"

namespace shard::server {

StoredCostsReport CheckStoredCosts(const CoordinatorState& state,
                                   storage::CostBlobs& blobs) {
  struct Named {
    uint64_t samples = 0;
    std::vector<std::string> jobs;
  };
  // By digest; a digest names the same bytes, so one count for all jobs.
  std::map<std::string, Named> named;
  for (const auto& [id, job] : state.jobs()) {
    if (!job->spec.has_batches()) continue;
    Named& costs = named[job->spec.batches().costs_sha256()];
    costs.samples = job->spec.dataset_size();
    costs.jobs.push_back(id);
  }
  StoredCostsReport report;
  report.sets = named.size();
  for (const auto& [sha256, costs] : named) {
    const std::string whose = absl::StrCat(
        "job ", absl::StrJoin(costs.jobs, ", "), ": costs ", sha256, " ");
    absl::StatusOr<std::shared_ptr<const plan::CostTable>> table =
        ReadStoredCosts(blobs, sha256);
    if (!table.ok()) {
      report.problems.push_back(
          absl::StrCat(whose, absl::StatusCodeToString(table.status().code()),
                       ": ", table.status().message()));
    } else if ((*table)->size() != costs.samples) {
      report.problems.push_back(absl::StrCat(whose, "hold ", (*table)->size(),
                                             " samples, the job has ",
                                             costs.samples));
    } else {
      ++report.sound;
    }
  }
  return report;
}

}  // namespace shard::server

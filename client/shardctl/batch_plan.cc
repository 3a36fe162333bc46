#include "client/shardctl/batch_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/shardctl/costs_file.h"
#include "common/plan/cost_digest.h"
#include "common/plan/cost_table.h"
#include "common/plan/epoch_batches.h"
#include "common/plan/epoch_order.h"
#include "common/plan/job_spec.h"

namespace shard::shardctl {
namespace {

// The costs in the file, when they are the job's.
absl::StatusOr<plan::CostTable> JobCosts(const shard::v1::JobSpec& spec,
                                         const BatchPlanRequest& request) {
  absl::StatusOr<std::string> le32 =
      ReadDatasetCosts(request.costs_files, request.costs_format, spec);
  if (!le32.ok()) return le32.status();
  const std::string sha256 = plan::Sha256Hex(*le32);
  if (sha256 != spec.batches().costs_sha256()) {
    return absl::FailedPreconditionError(
        absl::StrCat(absl::StrJoin(request.costs_files, ", "),
                     request.costs_files.size() == 1 ? " holds" : " hold",
                     " other costs than the job's (SHA-256 ", sha256,
                     ", the job's ", spec.batches().costs_sha256(), ")"));
  }
  return plan::CostTable::FromLittleEndian32(*le32);
}

// One micro-batch: its samples, the sum and the largest of their costs,
// and its cost under the job's model.
struct MicroBatch {
  std::vector<uint64_t> samples;
  uint64_t tokens = 0;
  uint64_t longest = 0;
  uint64_t cost = 0;
};

// Calls `each(step_end, micro-batches of the step, rank by rank)` for
// every step of the epoch, in training order.
void ForEachStep(
    const shard::v1::JobSpec& spec, uint64_t epoch,
    const plan::CostTable& costs,
    const std::function<void(uint64_t, const std::vector<MicroBatch>&)>& each) {
  const plan::EpochOrder order = plan::BuildEpochOrder(spec, epoch);
  const plan::EpochBatches batches =
      plan::EpochBatchesOf(spec, spec.world_size());
  const plan::BatchPolicy policy = plan::BatchPolicyOf(spec);
  auto sample_at = [&order](uint64_t position) {
    return order.At(position % order.size());
  };
  std::vector<MicroBatch> step(spec.world_size());
  for (uint64_t w = 0; w < batches.windows(); ++w) {
    const plan::WindowBatches window = batches.Arrange(
        w, plan::EpochBatches::CostsInOrder(order, costs), spec.seed(), epoch);
    for (uint64_t s = 0; s < window.steps(); ++s) {
      for (uint32_t r = 0; r < window.world_size(); ++r) {
        MicroBatch& batch = step[r];
        batch = MicroBatch();
        for (uint64_t i = window.BatchBegin(s, r); i < window.BatchEnd(s, r);
             ++i) {
          const uint64_t sample = sample_at(window.positions()[i]);
          batch.samples.push_back(sample);
          batch.tokens += costs.At(sample);
          batch.longest = std::max<uint64_t>(batch.longest, costs.At(sample));
        }
        batch.cost =
            policy.CostOf(batch.samples.size(), batch.tokens, batch.longest);
      }
      each(batches.WindowBegin(w) + window.StepBegin(s + 1), step);
    }
  }
}

void PrintRank(const shard::v1::JobSpec& spec, const BatchPlanRequest& request,
               const plan::CostTable& costs) {
  ForEachStep(spec, request.epoch, costs,
              [&](uint64_t step_end, const std::vector<MicroBatch>& step) {
                const MicroBatch& batch = step[request.rank];
                std::string line = absl::StrCat(step_end, " ", batch.cost, ":");
                for (uint64_t sample : batch.samples) {
                  absl::StrAppend(&line, " ", sample);
                }
                line += '\n';
                std::fputs(line.c_str(), stdout);
              });
}

double Quantile(std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t at = static_cast<size_t>(std::ceil(q * sorted.size()));
  return sorted[std::max<size_t>(at, 1) - 1];
}

void PrintBalance(const shard::v1::JobSpec& spec,
                  const BatchPlanRequest& request,
                  const plan::CostTable& costs) {
  std::vector<double> imbalance;
  uint64_t samples = 0, tokens = 0, padded = 0;
  ForEachStep(spec, request.epoch, costs,
              [&](uint64_t, const std::vector<MicroBatch>& step) {
                uint64_t total = 0, most = 0;
                for (const MicroBatch& batch : step) {
                  total += batch.cost;
                  most = std::max(most, batch.cost);
                  tokens += batch.tokens;
                  padded += batch.longest * batch.samples.size();
                  samples += batch.samples.size();
                }
                const double mean = static_cast<double>(total) /
                                    static_cast<double>(step.size());
                imbalance.push_back(mean > 0 ? most / mean : 1.0);
              });
  std::sort(imbalance.begin(), imbalance.end());
  std::printf("epoch %llu: %zu steps of %u micro-batches, %llu samples\n",
              static_cast<unsigned long long>(request.epoch), imbalance.size(),
              spec.world_size(), static_cast<unsigned long long>(samples));
  std::printf(
      "step cost imbalance (max / mean of the ranks'): p50 %.3f, p99 %.3f, "
      "max %.3f\n",
      Quantile(imbalance, 0.5), Quantile(imbalance, 0.99),
      imbalance.empty() ? 0.0 : imbalance.back());
  std::printf("padding (micro-batches padded to their longest): %.2f%%\n",
              padded == 0 ? 0.0 : 100.0 * (padded - tokens) / padded);
}

}  // namespace

absl::Status PrintBatchPlan(const shard::v1::JobSpec& spec,
                            const BatchPlanRequest& request) {
  if (request.rank >= spec.world_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", request.rank, " is out of range for world size ",
                     spec.world_size()));
  }
  absl::StatusOr<plan::CostTable> costs = JobCosts(spec, request);
  if (!costs.ok()) return costs.status();
  if (request.balance) {
    PrintBalance(spec, request, *costs);
  } else {
    PrintRank(spec, request, *costs);
  }
  return absl::OkStatus();
}

}  // namespace shard::shardctl

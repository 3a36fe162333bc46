#include "client/shardctl/batch_plan.h"

#include <cstdio>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/shardctl/costs_file.h"
#include "common/plan/batches/balance_figures.h"
#include "common/plan/batches/cost_digest.h"
#include "common/plan/batches/cost_table.h"
#include "common/plan/batches/epoch_batches.h"
#include "common/plan/orders/epoch_order.h"
#include "common/plan/spec/job_spec.h"

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

// Calls `each(epoch order, first position of the window, window)` for
// every window of the epoch, in training order.
void ForEachWindow(
    const shard::v1::JobSpec& spec, uint64_t epoch,
    const plan::CostTable& costs,
    const std::function<void(const plan::EpochOrder&, uint64_t,
                             const plan::WindowBatches&)>& each) {
  const plan::EpochOrder order = plan::BuildEpochOrder(spec, epoch);
  const plan::EpochBatches batches =
      plan::EpochBatchesOf(spec, spec.world_size());
  for (uint64_t w = 0; w < batches.windows(); ++w) {
    each(order, batches.WindowBegin(w),
         batches.Arrange(w, plan::EpochBatches::CostsInOrder(order, costs),
                         spec.seed(), epoch));
  }
}

void PrintRank(const shard::v1::JobSpec& spec, const BatchPlanRequest& request,
               const plan::CostTable& costs) {
  const uint32_t rank = request.rank;
  ForEachWindow(spec, request.epoch, costs,
                [&](const plan::EpochOrder& order, uint64_t window_begin,
                    const plan::WindowBatches& window) {
                  for (uint64_t s = 0; s < window.steps(); ++s) {
                    std::string line =
                        absl::StrCat(window_begin + window.StepBegin(s + 1),
                                     " ", window.BatchCost(s, rank), ":");
                    for (uint64_t i = window.BatchBegin(s, rank);
                         i < window.BatchEnd(s, rank); ++i) {
                      absl::StrAppend(
                          &line, " ",
                          order.At(window.positions()[i] % order.size()));
                    }
                    line += '\n';
                    std::fputs(line.c_str(), stdout);
                  }
                });
}

void PrintBalance(const shard::v1::JobSpec& spec,
                  const BatchPlanRequest& request,
                  const plan::CostTable& costs) {
  plan::BalanceFigures figures;
  ForEachWindow(
      spec, request.epoch, costs,
      [&](const plan::EpochOrder&, uint64_t,
          const plan::WindowBatches& window) { figures.AddWindow(window); });
  std::printf("epoch %llu: %llu steps of %u micro-batches, %llu samples\n",
              static_cast<unsigned long long>(request.epoch),
              static_cast<unsigned long long>(figures.steps()),
              spec.world_size(),
              static_cast<unsigned long long>(figures.samples()));
  std::fputs(BalanceLines(plan::BalanceProto(figures, request.epoch)).c_str(),
             stdout);
}

}  // namespace

std::string BalanceLines(const shard::v1::BatchBalance& balance) {
  std::string lines = absl::StrFormat(
      "step cost imbalance (max / mean of the ranks'): p50 %.3f, p99 %.3f, "
      "max %.3f\n"
      "padding (micro-batches padded to their longest): %.2f%%\n",
      balance.imbalance_p50(), balance.imbalance_p99(), balance.imbalance_max(),
      100 * balance.padding());
  if (balance.fill() > 0) {
    absl::StrAppendFormat(
        &lines, "fill (real tokens over world size x batch_tokens): %.2f%%\n",
        100 * balance.fill());
  }
  return lines;
}

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

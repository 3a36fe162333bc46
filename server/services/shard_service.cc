#include "server/services/shard_service.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/plan/layouts/rank_indices.h"
#include "common/plan/spec/job_spec.h"

namespace shard::server {
namespace {

constexpr uint32_t kDefaultPreviewLimit = 1024;
constexpr uint32_t kMaxPreviewLimit = 1000000;

// INVALID_ARGUMENT / OUT_OF_RANGE unless the request's rank and start
// position fit `layout`.
absl::Status CheckStreamStart(const plan::ShardLayout& layout,
                              const shard::v1::StreamShardRequest& request) {
  if (request.rank() >= layout.world_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", request.rank(),
                     " is out of range for world size ", layout.world_size()));
  }
  if (request.start_position() > layout.total()) {
    return absl::OutOfRangeError(
        absl::StrCat("start_position ", request.start_position(),
                     " is past the end of epoch ", request.epoch(), " (",
                     layout.total(), " positions)"));
  }
  if (!layout.IsRoundBoundary(request.start_position())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "start_position ", request.start_position(), " must be ", layout.base(),
        " plus a multiple of the world size ", layout.world_size()));
  }
  return absl::OkStatus();
}

// The shape of a preview request, before it is checked against the job.
absl::Status CheckPreviewRequest(
    const shard::v1::PreviewShardRequest& request) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) return s;
  if (absl::Status s = plan::ValidateEpoch(request.epoch()); !s.ok()) return s;
  if (request.limit() > kMaxPreviewLimit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "limit must be at most ", kMaxPreviewLimit, ", got ", request.limit()));
  }
  return absl::OkStatus();
}

// The balance tally of the job of `incarnation` in `tallies`, made on
// first use (live(): the jobs held).
std::shared_ptr<BalanceTally> TallyOf(
    JobTable<BalanceTally>& tallies, uint64_t incarnation,
    absl::FunctionRef<absl::flat_hash_set<uint64_t>()> live) {
  return tallies.ForJob(incarnation, live,
                        [] { return std::make_shared<BalanceTally>(); });
}

// Where a balanced-batch job's stream starts, with the job's tally of
// `tallies` (live(): the jobs held); nullopt for other jobs.
std::optional<ShardService::BatchedStart> BatchedStartOf(
    const JobState& job, const shard::v1::StreamShardRequest& request,
    JobTable<BalanceTally>& tallies,
    absl::FunctionRef<absl::flat_hash_set<uint64_t>()> live) {
  const shard::v1::JobSpec& spec = job.spec;
  if (!spec.has_batches()) return std::nullopt;
  return ShardService::BatchedStart{
      job.incarnation,
      TallyOf(tallies, job.incarnation, live),
      plan::EpochWorldsOf(spec, job.WorldsOf(request.epoch())),
      spec.seed(),
      request.epoch(),
      request.start_position(),
      spec.batches().costs_sha256()};
}

// Window 0 of epoch 0 of a job's first world, to arrange ahead into
// `windows`.
struct FirstWindow {
  std::shared_ptr<SharedWindows> windows;
  plan::EpochBatches batches;  // the world's part of epoch 0
  uint64_t seed;

  // Arranges it once the entries of `order` it reads are final: here if
  // they are, else on the thread that finalises them (as a stream's next
  // window is arranged).
  void ArrangeWhenFinal(EpochOrderCache::Order order,
                        std::shared_ptr<const plan::CostTable> costs) && {
    if (batches.windows() == 0) return;
    const uint64_t last = LastOrderEntryOf(batches, 0, *order);
    plan::OrderProgress* progress = order->progress();
    auto arrange = [first = std::move(*this), order = std::move(order),
                    costs = std::move(costs)] {
      first.windows->ArrangeAhead(0, [&] {
        return first.batches.Arrange(
            0, plan::EpochBatches::CostsInOrder(*order, *costs), first.seed, 0);
      });
    };
    if (progress == nullptr || last < progress->Final()) return arrange();
    progress->WhenFinal(
        last, [arrange = std::move(arrange)](absl::Status built) mutable {
          if (built.ok()) arrange();  // else the streams report the failure
        });
  }
};

}  // namespace

absl::flat_hash_set<uint64_t> LiveIncarnations(const LockedCore& core) {
  absl::flat_hash_set<uint64_t> live;
  for (const auto& [id, job] : core.state().jobs()) {
    live.insert(job->incarnation);
  }
  return live;
}

void ShardService::ArrangeFirstWindowAhead(LockedCore& core,
                                           const JobState& job) {
  const shard::v1::JobSpec& spec = job.spec;
  if (!spec.has_batches()) return;
  const plan::EpochWorlds worlds =
      plan::EpochWorldsOf(spec, {plan::EpochLink{0, spec.world_size()}});
  std::shared_ptr<SharedWindows> windows =
      shared_windows_.Pin(job.incarnation, 0, worlds,
                          TallyOf(balance_tallies_, job.incarnation,
                                  [&core] { return LiveIncarnations(core); }));
  // Claimed with the state it was read from, like a stream's.
  EpochOrderCache::Claim claim =
      core_->orders().ClaimOrder(IncarnationOf(job), spec, 0);
  FirstWindow first{std::move(windows), worlds.Resolve(nullptr, spec.seed(), 0),
                    spec.seed()};
  ahead_.Schedule([costs = &core_->costs(), orders = &core_->orders(),
                   sha256 = spec.batches().costs_sha256(),
                   deadline = absl::Now() + core_->options().max_wait,
                   claim = std::move(claim),
                   first = std::move(first)]() mutable {
    costs->WhenLoaded(
        sha256,
        [orders, deadline, claim = std::move(claim), first = std::move(first)](
            absl::StatusOr<std::shared_ptr<const plan::CostTable>>
                table) mutable {
          if (!table.ok()) return;  // the streams report it
          // The first window's gather then finds the table's address
          // translations cached (cost_table.h).
          (*table)->TouchPages();
          orders->WhenReady(
              std::move(claim),
              [first = std::move(first), table = *std::move(table)](
                  absl::StatusOr<EpochOrderCache::Order> order) mutable {
                if (!order.ok()) return;  // the streams report it
                std::move(first).ArrangeWhenFinal(*std::move(order),
                                                  std::move(table));
              },
              deadline);
        });
  });
}

absl::StatusOr<ShardService::PreparedShard> ShardService::PrepareShard(
    const shard::v1::StreamShardRequest& request) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) return s;
  if (absl::Status s = plan::ValidateEpoch(request.epoch()); !s.ok()) return s;
  const CoordinatorOptions& options = core_->options();
  return core_->Read<PreparedShard>(
      [&](LockedCore& core) -> absl::StatusOr<PreparedShard> {
        absl::StatusOr<const JobState*> job =
            core.FindFormedJob(request.job_id(), request.generation());
        if (!job.ok()) return job.status();
        absl::StatusOr<plan::ShardLayout> layout =
            (*job)->WorldLayout(request.epoch());
        if (!layout.ok()) return layout.status();
        if (absl::Status s = CheckStreamStart(*layout, request); !s.ok()) {
          return s;
        }
        const uint32_t chunk = request.max_chunk_indices() == 0
                                   ? options.default_chunk_indices
                                   : std::min(request.max_chunk_indices(),
                                              options.max_chunk_indices);
        const uint64_t offset = std::min(
            (request.start_position() - layout->base()) / layout->world_size(),
            layout->RankShardSize(request.rank()));
        // Claimed with the state it was read from: a job deleted and
        // re-created meanwhile has another incarnation and other orders.
        return PreparedShard{
            core_->orders().ClaimOrder(IncarnationOf(**job), (*job)->spec,
                                       request.epoch()),
            *layout,
            request.rank(),
            offset,
            chunk,
            source_counters_.ForJob((*job)->incarnation, (*job)->spec,
                                    [&core] { return LiveIncarnations(core); }),
            BatchedStartOf(**job, request, balance_tallies_,
                           [&core] { return LiveIncarnations(core); }),
            /*costs=*/nullptr};
      });
}

absl::StatusOr<ShardCursor> ShardService::PreparedShard::Open(
    absl::StatusOr<EpochOrderCache::Order> order,
    SharedWindowTable& windows) const {
  if (!order.ok()) return order.status();
  if (batched.has_value()) {
    return ShardCursor(
        *std::move(order), layout,
        BatchWalk(costs, batched->worlds,
                  windows.For(batched->incarnation, batched->epoch,
                              batched->worlds, batched->balance),
                  rank, batched->seed, batched->epoch, batched->start_position),
        chunk);
  }
  return ShardCursor(*std::move(order), layout, rank, offset, chunk, by_source);
}

void ShardService::StartOpenShard(const shard::v1::StreamShardRequest& request,
                                  Reply<ShardCursor> reply) {
  absl::StatusOr<PreparedShard> prepared = PrepareShard(request);
  if (!prepared.ok()) return std::move(reply)(prepared.status());
  if (!prepared->batched.has_value()) {
    return OpenWhenOrdered(*std::move(prepared), std::move(reply));
  }
  // Read back (off this thread) on first use after a restart or failover.
  const std::string sha256 = prepared->batched->costs_sha256;
  core_->costs().WhenLoaded(
      sha256, [this, prepared = *std::move(prepared), reply = std::move(reply)](
                  absl::StatusOr<std::shared_ptr<const plan::CostTable>>
                      costs) mutable {
        if (!costs.ok()) return std::move(reply)(costs.status());
        prepared.costs = *std::move(costs);
        OpenWhenOrdered(std::move(prepared), std::move(reply));
      });
}

void ShardService::OpenWhenOrdered(PreparedShard prepared,
                                   Reply<ShardCursor> reply) {
  EpochOrderCache::Claim claim = std::move(prepared.claim);
  // Waiting for memory in the order cache is bounded like every other wait.
  core_->orders().WhenReady(
      std::move(claim),
      [this, prepared = std::move(prepared), reply = std::move(reply)](
          absl::StatusOr<EpochOrderCache::Order> order) mutable {
        std::move(reply)(prepared.Open(std::move(order), shared_windows_));
      },
      absl::Now() + core_->options().max_wait);
}

shard::v1::PreviewShardResponse ShardService::PreviewPage(
    const plan::EpochOrder& order, const plan::ShardLayout& layout,
    uint32_t rank, uint64_t offset, uint64_t count) {
  shard::v1::PreviewShardResponse response;
  response.mutable_indices()->Resize(static_cast<int>(count), 0);
  plan::CopyRankIndices(
      order, layout, rank, offset,
      absl::MakeSpan(response.mutable_indices()->mutable_data(), count));
  response.set_rank_shard_size(layout.RankShardSize(rank));
  return response;
}

absl::StatusOr<ShardService::PreparedPage> ShardService::PreparePage(
    const shard::v1::PreviewShardRequest& request) {
  if (absl::Status s = CheckPreviewRequest(request); !s.ok()) return s;
  return core_->Read<PreparedPage>(
      [&](LockedCore& core) -> absl::StatusOr<PreparedPage> {
        absl::StatusOr<const JobState*> job = core.FindJob(request.job_id());
        if (!job.ok()) return job.status();
        const shard::v1::JobSpec& spec = (*job)->spec;
        if (spec.has_batches()) {
          return absl::FailedPreconditionError(
              "PreviewShard does not show balanced batches: compute the plan "
              "from the job's costs (shardctl plan --costs FILE) or stream "
              "it (StreamShard, shardctl consume)");
        }
        if (request.rank() >= spec.world_size()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "rank ", request.rank(), " is out of range for world size ",
              spec.world_size()));
        }
        const plan::ShardLayout layout = plan::LayoutOf(spec);
        const uint64_t shard_size = layout.RankShardSize(request.rank());
        if (request.offset() > shard_size) {
          return absl::OutOfRangeError(absl::StrCat(
              "offset ", request.offset(), " is past the end of rank ",
              request.rank(), "'s shard (", shard_size, " indices)"));
        }
        return PreparedPage{core_->orders().ClaimOrder(IncarnationOf(**job),
                                                       spec, request.epoch()),
                            layout, shard_size};
      });
}

void ShardService::StartPreviewShard(
    const shard::v1::PreviewShardRequest& request, absl::Time call_deadline,
    Reply<shard::v1::PreviewShardResponse> reply) {
  absl::StatusOr<PreparedPage> page = PreparePage(request);
  if (!page.ok()) return std::move(reply)(page.status());
  const uint32_t limit =
      request.limit() == 0 ? kDefaultPreviewLimit : request.limit();
  const uint64_t count =
      std::min<uint64_t>(limit, page->shard_size - request.offset());
  // No thread waits for the order: the answer is built where it becomes
  // ready (at most kMaxPreviewLimit entries). Waiting for memory is bounded
  // by --max-wait like every other wait, so a read-only call never holds
  // anything mutations need.
  core_->orders().WhenReady(
      std::move(page->claim),
      [layout = page->layout, rank = request.rank(), offset = request.offset(),
       count, reply = std::move(reply)](
          absl::StatusOr<EpochOrderCache::Order> order) mutable {
        if (!order.ok()) return std::move(reply)(order.status());
        const uint64_t needed =
            plan::EntriesNeeded(layout, rank, offset, count);
        plan::OrderProgress* progress = (*order)->progress();
        if (progress == nullptr || needed <= progress->Final()) {
          return std::move(reply)(
              PreviewPage(**order, layout, rank, offset, count));
        }
        // Still being shuffled: answered where the page's entries are final.
        progress->WhenFinal(
            needed - 1, [order = *std::move(order), layout, rank, offset, count,
                         reply = std::move(reply)](absl::Status built) mutable {
              if (!built.ok()) return std::move(reply)(built);
              std::move(reply)(
                  PreviewPage(*order, layout, rank, offset, count));
            });
      },
      std::min(call_deadline, absl::Now() + core_->options().max_wait));
}

}  // namespace shard::server

#include "client/shardctl/commands.h"

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/cli_flags.h"
#include "client/heartbeater.h"

namespace shard::shardctl {
using cli::CliFlags;
namespace {

// Buffers text and writes it to stdout in large blocks.
class StdoutBuffer {
 public:
  ~StdoutBuffer() { Flush(); }
  std::string& text() { return text_; }
  void MaybeFlush() {
    if (text_.size() >= (1 << 16)) Flush();
  }
  void Flush() {
    std::fwrite(text_.data(), 1, text_.size(), stdout);
    text_.clear();
  }

 private:
  std::string text_;
};

absl::StatusOr<shard::v1::TailPolicy> ParseTail(const std::string& text) {
  if (text == "pad") return shard::v1::TAIL_POLICY_PAD;
  if (text == "drop") return shard::v1::TAIL_POLICY_DROP;
  if (text == "uneven") return shard::v1::TAIL_POLICY_UNEVEN;
  return absl::InvalidArgumentError(
      absl::StrCat("--tail must be pad, drop or uneven, got \"", text, "\""));
}

absl::StatusOr<shard::v1::TorchRandperm> ParseRandperm(
    const std::string& text) {
  if (text == "legacy") return shard::v1::TORCH_RANDPERM_LEGACY;
  if (text == "2.6") return shard::v1::TORCH_RANDPERM_2_6;
  return absl::InvalidArgumentError(absl::StrCat(
      "--torch-randperm must be legacy or 2.6, got \"", text, "\""));
}

absl::StatusOr<shard::v1::ShuffleAlgorithm> ParseAlgorithm(
    const std::string& text) {
  if (text == "torch") return shard::v1::SHUFFLE_ALGORITHM_TORCH;
  if (text == "feistel") return shard::v1::SHUFFLE_ALGORITHM_FEISTEL;
  if (text == "block") return shard::v1::SHUFFLE_ALGORITHM_BLOCK;
  return absl::InvalidArgumentError(absl::StrCat(
      "--shuffle-algorithm must be torch, feistel or block, got \"", text,
      "\""));
}

}  // namespace

absl::Status CreateJob(client::CoordinatorClient& client,
                       const std::vector<std::string>& args) {
  absl::StatusOr<CliFlags> flags = CliFlags::Parse(
      args, {"job", "size", "world-size", "seed", "shuffle", "tail",
             "torch-randperm", "min-world-size", "max-world-size",
             "shuffle-algorithm", "block-size", "window-blocks"});
  if (!flags.ok()) return flags.status();
  absl::StatusOr<std::string> job = flags->String("job");
  absl::StatusOr<uint64_t> size = flags->Uint64("size");
  absl::StatusOr<uint64_t> world = flags->Uint64("world-size");
  absl::StatusOr<uint64_t> seed = flags->Uint64("seed", 0);
  absl::StatusOr<uint64_t> min_world = flags->Uint64("min-world-size", 0);
  absl::StatusOr<uint64_t> max_world = flags->Uint64("max-world-size", 0);
  absl::StatusOr<shard::v1::ShuffleAlgorithm> algorithm =
      ParseAlgorithm(flags->String("shuffle-algorithm", "torch"));
  absl::StatusOr<uint64_t> block_size = flags->Uint64("block-size", 0);
  absl::StatusOr<uint64_t> window_blocks = flags->Uint64("window-blocks", 0);
  absl::StatusOr<bool> shuffle = flags->Bool("shuffle", true);
  absl::StatusOr<shard::v1::TailPolicy> tail =
      ParseTail(flags->String("tail", "pad"));
  absl::StatusOr<shard::v1::TorchRandperm> randperm =
      ParseRandperm(flags->String("torch-randperm", "2.6"));
  for (const absl::Status& s :
       {job.status(), size.status(), world.status(), seed.status(),
        shuffle.status(), tail.status(), randperm.status(), min_world.status(),
        max_world.status(), algorithm.status(), block_size.status(),
        window_blocks.status()}) {
    if (!s.ok()) return s;
  }
  for (uint64_t value : {*world, *min_world, *max_world, *window_blocks}) {
    if (value > UINT32_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat("--world-size, --min-world-size, --max-world-size and "
                       "--window-blocks must fit in 32 bits, got ",
                       value));
    }
  }
  shard::v1::JobSpec spec;
  spec.set_dataset_size(*size);
  spec.set_world_size(static_cast<uint32_t>(*world));
  spec.set_min_world_size(static_cast<uint32_t>(*min_world));
  spec.set_max_world_size(static_cast<uint32_t>(*max_world));
  spec.set_shuffle_algorithm(*algorithm);
  spec.set_block_size(*block_size);
  spec.set_window_blocks(static_cast<uint32_t>(*window_blocks));
  spec.set_seed(*seed);
  spec.set_shuffle(*shuffle);
  spec.set_tail(*tail);
  spec.set_torch_randperm(*randperm);
  absl::StatusOr<shard::v1::Job> created = client.CreateJob(*job, spec);
  if (!created.ok()) return created.status();
  std::printf("job %s: dataset_size=%llu world_size=%u samples_per_rank=%llu\n",
              created->job_id().c_str(),
              static_cast<unsigned long long>(created->spec().dataset_size()),
              created->spec().world_size(),
              static_cast<unsigned long long>(created->samples_per_rank()));
  return absl::OkStatus();
}

absl::Status Plan(client::CoordinatorClient& client,
                  const std::vector<std::string>& args) {
  absl::StatusOr<CliFlags> flags =
      CliFlags::Parse(args, {"job", "epoch", "rank"});
  if (!flags.ok()) return flags.status();
  absl::StatusOr<std::string> job = flags->String("job");
  absl::StatusOr<uint64_t> epoch = flags->Uint64("epoch");
  absl::StatusOr<uint64_t> rank = flags->Uint64("rank");
  for (const absl::Status& s : {job.status(), epoch.status(), rank.status()}) {
    if (!s.ok()) return s;
  }
  if (*rank > UINT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank is too large: ", *rank));
  }
  constexpr uint32_t kPage = 1000000;
  StdoutBuffer out;
  uint64_t offset = 0;
  while (true) {
    absl::StatusOr<shard::v1::PreviewShardResponse> page = client.Preview(
        *job, static_cast<uint32_t>(*rank), *epoch, offset, kPage);
    if (!page.ok()) return page.status();
    for (uint64_t index : page->indices()) {
      absl::StrAppend(&out.text(), index, "\n");
      out.MaybeFlush();
    }
    offset += page->indices_size();
    if (offset >= page->rank_shard_size() || page->indices_size() == 0) break;
  }
  return absl::OkStatus();
}

absl::Status Consume(const std::shared_ptr<client::CoordinatorClient>& client,
                     const std::vector<std::string>& args) {
  absl::StatusOr<CliFlags> flags =
      CliFlags::Parse(args, {"job", "member", "epochs", "wait"});
  if (!flags.ok()) return flags.status();
  absl::StatusOr<std::string> job = flags->String("job");
  absl::StatusOr<std::string> member = flags->String("member");
  absl::StatusOr<uint64_t> epochs = flags->Uint64("epochs", 1);
  absl::StatusOr<absl::Duration> wait =
      flags->Duration("wait", absl::Minutes(5));
  for (const absl::Status& s :
       {job.status(), member.status(), epochs.status(), wait.status()}) {
    if (!s.ok()) return s;
  }
  absl::StatusOr<client::Membership> membership =
      client->Join(*job, *member, std::nullopt, *wait);
  if (!membership.ok()) return membership.status();
  client::Heartbeater heartbeater(client, *membership, absl::Seconds(2));

  StdoutBuffer out;
  std::vector<uint64_t> batch(4096);
  for (uint64_t epoch = 0; epoch < *epochs; ++epoch) {
    std::unique_ptr<client::ShardStream> stream =
        client->OpenStream(*membership, epoch, /*start_position=*/0);
    while (true) {
      absl::StatusOr<size_t> got = stream->Next(absl::MakeSpan(batch));
      if (!got.ok()) return got.status();
      if (*got == 0) break;
      for (size_t i = 0; i < *got; ++i) {
        absl::StrAppend(&out.text(), epoch, " ", membership->rank, " ",
                        batch[i], "\n");
      }
      out.MaybeFlush();
    }
  }
  return absl::OkStatus();
}

}  // namespace shard::shardctl

#include "client/shardctl/commands.h"

#include <cstdio>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/cli_flags.h"
#include "client/job_spec_flags.h"
#include "shard/client/heartbeater.h"

namespace shard::shardctl {
using client::CliFlags;
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

}  // namespace

absl::Status CreateJob(client::CoordinatorClient& client,
                       const std::vector<std::string>& args) {
  std::set<std::string> accepted = {"job", "size", "world-size"};
  client::AddJobSpecFlagNames(accepted);
  absl::StatusOr<CliFlags> flags = CliFlags::Parse(args, accepted);
  if (!flags.ok()) return flags.status();
  absl::StatusOr<std::string> job = flags->String("job");
  absl::StatusOr<uint64_t> size = flags->Uint64("size");
  absl::StatusOr<uint64_t> world = flags->Uint64("world-size");
  for (const absl::Status& s : {job.status(), size.status(), world.status()}) {
    if (!s.ok()) return s;
  }
  absl::StatusOr<shard::v1::JobSpec> spec =
      client::JobSpecFromFlags(*flags, *size, *world);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<shard::v1::Job> created = client.CreateJob(*job, *spec);
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
  // Pages sized by bytes, not counts: near N = 2^62 every index takes 9
  // bytes on the wire.
  constexpr uint32_t kPage = client::CoordinatorClient::kMaxPreviewPage;
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

#include "shard/client/torch/shard_sampler.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "shard/client/torch/status_error.h"
#include "torch/serialize/archive.h"

namespace shard::torch_adapter {

EpochPosition ShardSamplerProgress::RestartPoint() const {
  return restart_.epoch == epoch_ ? restart_ : EpochPosition{epoch_, 0};
}

EpochPosition ShardSamplerProgress::Current() const {
  absl::MutexLock lock(&mu_);
  if (!pass_) return RestartPoint();
  // A finished pass is at the epoch's end, also on a rank that held fewer
  // indices of an uneven epoch.
  if (pass_->Ended()) return {pass_->start.epoch, pass_->end_position};
  if (pass_->batched) {
    return {pass_->start.epoch,
            pass_->tracked ? pass_->consumed_end : pass_->handed_end};
  }
  const uint64_t samples = pass_->tracked ? pass_->consumed : pass_->handed;
  return {pass_->start.epoch,
          pass_->start.position + samples * uint64_t{world_size_}};
}

void ShardSamplerProgress::ResumeAt(EpochPosition start) {
  absl::MutexLock lock(&mu_);
  restart_ = start;
  epoch_ = start.epoch;
  pass_.reset();
}

void ShardSamplerProgress::Consumed(size_t samples) {
  absl::MutexLock lock(&mu_);
  if (!pass_) return;
  pass_->tracked = true;
  pass_->consumed += samples;
  auto& ends = pass_->batch_ends;
  while (!ends.empty() && ends.front().first <= pass_->consumed) {
    pass_->consumed_end = ends.front().second;
    ends.pop_front();
  }
}

EpochPosition ShardSamplerProgress::BeginPass() {
  absl::MutexLock lock(&mu_);
  if (pass_ && pass_->Ended()) epoch_ = pass_->start.epoch + 1;
  pass_.emplace();
  pass_->start = RestartPoint();
  pass_->handed_end = pass_->consumed_end = pass_->start.position;
  return pass_->start;
}

void ShardSamplerProgress::Handed(size_t indices) {
  absl::MutexLock lock(&mu_);
  if (pass_) pass_->handed += indices;
}

void ShardSamplerProgress::HandedBatch(size_t indices, uint64_t step_end) {
  absl::MutexLock lock(&mu_);
  if (!pass_) return;
  pass_->batched = true;
  pass_->handed += indices;
  pass_->handed_end = step_end;
  pass_->batch_ends.emplace_back(pass_->handed, step_end);
  if (!pass_->tracked && pass_->batch_ends.size() > kMaxUntrackedBatchEnds) {
    pass_->batch_ends.pop_front();
  }
}

void ShardSamplerProgress::Exhausted(uint64_t end_position) {
  absl::MutexLock lock(&mu_);
  if (!pass_) return;
  pass_->exhausted = true;
  pass_->end_position = end_position;
}

void ShardSamplerProgress::AddIndexWait(absl::Duration waited) {
  absl::MutexLock lock(&mu_);
  index_wait_ += waited;
}

absl::Duration ShardSamplerProgress::IndexWait() const {
  absl::MutexLock lock(&mu_);
  return index_wait_;
}

ShardSampler::ShardSampler(std::shared_ptr<client::CoordinatorClient> client,
                           client::Membership membership,
                           client::StreamOptions stream_options)
    : client_(std::move(client)),
      membership_(std::move(membership)),
      stream_options_(stream_options),
      progress_(
          std::make_shared<ShardSamplerProgress>(membership_.world_size)) {}

void ShardSampler::reset(torch_compat::optional<size_t>) {
  const absl::Time began = absl::Now();
  const EpochPosition start = progress_->BeginPass();
  stream_.reset();  // Cancels the previous epoch's stream first.
  stream_ = client_->OpenStream(membership_, start.epoch, start.position,
                                stream_options_);
  progress_->AddIndexWait(absl::Now() - began);
}

torch_compat::optional<std::vector<size_t>> ShardSampler::next(
    size_t batch_size) {
  if (stream_ == nullptr) reset();
  if (membership_.spec.has_batches()) return NextMicroBatch();
  buffer_.resize(batch_size);
  const absl::Time began = absl::Now();
  absl::StatusOr<size_t> got = stream_->Next(absl::MakeSpan(buffer_));
  progress_->AddIndexWait(absl::Now() - began);
  if (!got.ok()) throw StatusError("ShardSampler", got.status());
  if (*got == 0) {
    progress_->Exhausted(stream_->position());
    return torch_compat::nullopt;
  }
  progress_->Handed(*got);
  return std::vector<size_t>(buffer_.begin(), buffer_.begin() + *got);
}

torch_compat::optional<std::vector<size_t>> ShardSampler::NextMicroBatch() {
  const absl::Time began = absl::Now();
  absl::StatusOr<std::optional<client::MicroBatch>> batch =
      stream_->NextBatch();
  progress_->AddIndexWait(absl::Now() - began);
  if (!batch.ok()) throw StatusError("ShardSampler", batch.status());
  if (!batch->has_value()) {
    progress_->Exhausted(stream_->position());
    return torch_compat::nullopt;
  }
  progress_->HandedBatch((*batch)->indices.size(), (*batch)->step_end);
  return std::vector<size_t>((*batch)->indices.begin(),
                             (*batch)->indices.end());
}

void ShardSampler::save(torch::serialize::OutputArchive& archive) const {
  const EpochPosition now = progress_->Current();
  archive.write("epoch", torch::tensor(static_cast<int64_t>(now.epoch)),
                /*is_buffer=*/true);
  archive.write("position", torch::tensor(static_cast<int64_t>(now.position)),
                /*is_buffer=*/true);
}

void ShardSampler::load(torch::serialize::InputArchive& archive) {
  torch::Tensor epoch = torch::empty(1, torch::kInt64);
  torch::Tensor position = torch::empty(1, torch::kInt64);
  archive.read("epoch", epoch, /*is_buffer=*/true);
  archive.read("position", position, /*is_buffer=*/true);
  progress_->ResumeAt(
      EpochPosition{static_cast<uint64_t>(epoch.item<int64_t>()),
                    static_cast<uint64_t>(position.item<int64_t>())});
}

}  // namespace shard::torch_adapter

#include "shard/client/torch/shard_sampler.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "torch/serialize/archive.h"

namespace shard::torch_adapter {

EpochPosition ShardSamplerProgress::Current() const {
  absl::MutexLock lock(&mu_);
  if (!started_ && resume_) return *resume_;
  return current_;
}

void ShardSamplerProgress::ResumeAt(EpochPosition start) {
  absl::MutexLock lock(&mu_);
  resume_ = start;
}

EpochPosition ShardSamplerProgress::BeginEpoch() {
  absl::MutexLock lock(&mu_);
  if (resume_) {
    current_ = *resume_;
    resume_.reset();
  } else if (started_) {
    current_ = EpochPosition{current_.epoch + 1, 0};
  }
  started_ = true;
  return current_;
}

void ShardSamplerProgress::SetPosition(uint64_t position) {
  absl::MutexLock lock(&mu_);
  current_.position = position;
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
      progress_(std::make_shared<ShardSamplerProgress>()) {}

void ShardSampler::reset(torch_compat::optional<size_t>) {
  const absl::Time began = absl::Now();
  const EpochPosition start = progress_->BeginEpoch();
  stream_.reset();  // Cancels the previous epoch's stream first.
  stream_ = client_->OpenStream(membership_, start.epoch, start.position,
                                stream_options_);
  progress_->AddIndexWait(absl::Now() - began);
}

torch_compat::optional<std::vector<size_t>> ShardSampler::next(
    size_t batch_size) {
  if (stream_ == nullptr) reset();
  buffer_.resize(batch_size);
  const absl::Time began = absl::Now();
  absl::StatusOr<size_t> got = stream_->Next(absl::MakeSpan(buffer_));
  progress_->AddIndexWait(absl::Now() - began);
  if (!got.ok()) {
    throw std::runtime_error(
        absl::StrCat("ShardSampler: ", got.status().ToString()));
  }
  progress_->SetPosition(stream_->position());
  if (*got == 0) return torch_compat::nullopt;
  return std::vector<size_t>(buffer_.begin(), buffer_.begin() + *got);
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

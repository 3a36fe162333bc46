#include "trainer/gradient_sync.h"

#include <utility>

#include "torch/torch.h"

namespace shard::trainer {

void BroadcastParameters(const std::vector<torch::Tensor>& parameters,
                         const ProcessGroupPtr& group) {
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& parameter : parameters) {
    std::vector<torch::Tensor> tensors = {parameter.data()};
    group->broadcast(tensors)->wait();
  }
}

void WaitForAllRanks(const ProcessGroupPtr& group, torch::Device device) {
  std::vector<torch::Tensor> tensors = {
      torch::ones({1}, torch::dtype(torch::kFloat32).device(device))};
  group->allreduce(tensors)->wait();
}

GradientSync::GradientSync(std::vector<torch::Tensor> parameters,
                           ProcessGroupPtr group, size_t bucket_bytes)
    : parameters_(std::move(parameters)),
      group_(std::move(group)),
      slots_(parameters_.size()) {
  // Reverse order: backward produces the last layers' gradients first.
  int64_t bucket_elements = 0;
  for (size_t i = parameters_.size(); i-- > 0;) {
    const int64_t elements = parameters_[i].numel();
    if (buckets_.empty() ||
        static_cast<size_t>(bucket_elements * sizeof(float)) >= bucket_bytes) {
      buckets_.emplace_back();
      bucket_elements = 0;
    }
    slots_[i] = Slot{buckets_.size() - 1, bucket_elements};
    buckets_.back().parameters.push_back(i);
    bucket_elements += elements;
    buckets_.back().flat =
        torch::zeros({bucket_elements}, parameters_[i].options());
  }
  for (size_t i = 0; i < parameters_.size(); ++i) {
    parameters_[i].register_hook(
        [this, i](torch::Tensor gradient) { OnGradient(i, gradient); });
  }
}

void GradientSync::Prepare() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Bucket& bucket : buckets_) {
    bucket.ready = 0;
    bucket.work.reset();
    bucket.flat.zero_();
  }
  next_launch_ = 0;
}

void GradientSync::OnGradient(size_t parameter, const torch::Tensor& gradient) {
  std::lock_guard<std::mutex> lock(mu_);
  const Slot& slot = slots_[parameter];
  Bucket& bucket = buckets_[slot.bucket];
  bucket.flat.narrow(0, slot.offset, gradient.numel())
      .copy_(gradient.reshape({-1}));
  ++bucket.ready;
  LaunchReady();
}

void GradientSync::LaunchReady() {
  while (next_launch_ < buckets_.size() &&
         buckets_[next_launch_].ready ==
             buckets_[next_launch_].parameters.size()) {
    Launch(buckets_[next_launch_++]);
  }
}

void GradientSync::Launch(Bucket& bucket) {
  std::vector<torch::Tensor> tensors = {bucket.flat};
  bucket.work = group_->allreduce(tensors);
}

void GradientSync::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (next_launch_ < buckets_.size()) Launch(buckets_[next_launch_++]);
  }
  torch::NoGradGuard no_grad;
  const double world = group_->getSize();
  for (Bucket& bucket : buckets_) {
    bucket.work->wait();
    bucket.flat.div_(world);
    for (size_t i : bucket.parameters) {
      torch::Tensor& parameter = parameters_[i];
      torch::Tensor averaged =
          bucket.flat.narrow(0, slots_[i].offset, parameter.numel())
              .view(parameter.sizes());
      if (parameter.grad().defined()) {
        parameter.mutable_grad().copy_(averaged);
      } else {
        parameter.mutable_grad() = averaged.clone();
      }
    }
  }
}

}  // namespace shard::trainer

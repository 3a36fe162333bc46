#include "trainer/gather_uneven.h"

#include <algorithm>
#include <vector>

#include "torch/torch.h"

namespace shard::trainer {
namespace {

// All-gathers one tensor of identical shape from every rank.
std::vector<torch::Tensor> AllGather(const torch::Tensor& local,
                                     const ProcessGroupPtr& group) {
  std::vector<std::vector<torch::Tensor>> outputs(1);
  for (int r = 0; r < group->getSize(); ++r) {
    outputs[0].push_back(torch::empty_like(local));
  }
  std::vector<torch::Tensor> inputs = {local};
  group->allgather(outputs, inputs)->wait();
  return outputs[0];
}

}  // namespace

torch::Tensor GatherUneven(const torch::Tensor& local,
                           const ProcessGroupPtr& group) {
  const torch::Tensor flat = local.reshape({-1}).contiguous();
  const std::vector<torch::Tensor> sizes = AllGather(
      torch::full({1}, flat.numel(), flat.options().dtype(torch::kInt64)),
      group);
  int64_t largest = 0;
  for (const torch::Tensor& size : sizes) {
    largest = std::max(largest, size.item<int64_t>());
  }
  torch::Tensor padded = torch::zeros({largest}, flat.options());
  padded.narrow(0, 0, flat.numel()).copy_(flat);
  const std::vector<torch::Tensor> gathered = AllGather(padded, group);
  std::vector<torch::Tensor> trimmed;
  for (size_t r = 0; r < gathered.size(); ++r) {
    trimmed.push_back(gathered[r].narrow(0, 0, sizes[r].item<int64_t>()));
  }
  return torch::cat(trimmed);
}

}  // namespace shard::trainer

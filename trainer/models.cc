#include "trainer/models.h"

#include "absl/strings/str_cat.h"
#include "torch/torch.h"

namespace shard::trainer {

absl::StatusOr<ModelKind> ParseModelKind(const std::string& name) {
  if (name == "linear") return ModelKind::kLinear;
  if (name == "mlp") return ModelKind::kMlp;
  if (name == "cnn") return ModelKind::kCnn;
  return absl::InvalidArgumentError(
      absl::StrCat("--model must be linear, mlp or cnn, got \"", name, "\""));
}

absl::StatusOr<torch::nn::Sequential> MakeModel(
    ModelKind kind, const std::vector<int64_t>& example_shape,
    int64_t outputs) {
  int64_t inputs = 1;
  for (int64_t d : example_shape) inputs *= d;
  switch (kind) {
    case ModelKind::kLinear:
      return torch::nn::Sequential(torch::nn::Flatten(),
                                   torch::nn::Linear(inputs, outputs));
    case ModelKind::kMlp:
      return torch::nn::Sequential(
          torch::nn::Flatten(), torch::nn::Linear(inputs, 32),
          torch::nn::ReLU(), torch::nn::Linear(32, outputs));
    case ModelKind::kCnn: {
      if (example_shape.size() != 3 || example_shape[1] < 4 ||
          example_shape[2] < 4) {
        return absl::InvalidArgumentError(
            "--model cnn needs image examples of at least 4x4 (use "
            "--dataset fashion-mnist or records)");
      }
      namespace nn = torch::nn;
      const int64_t channels = example_shape[0];
      const int64_t flat = 32 * (example_shape[1] / 4) * (example_shape[2] / 4);
      return nn::Sequential(
          nn::Conv2d(nn::Conv2dOptions(channels, 16, 5).padding(2)), nn::ReLU(),
          nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(16, 32, 5).padding(2)),
          nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
          nn::Linear(flat, outputs));
    }
  }
  return absl::InternalError("unknown model kind");
}

void PlaceModel(torch::nn::Sequential& model, torch::Device device) {
  model->to(device);
  torch::NoGradGuard no_grad;
  for (torch::Tensor& parameter : model->parameters()) {
    if (parameter.dim() == 4) {
      // Not contiguous(ChannelsLast): with one input channel that keeps
      // the NCHW strides, and the convolution then computes in NCHW.
      torch::Tensor laid = torch::empty_like(parameter.data(),
                                             torch::MemoryFormat::ChannelsLast);
      parameter.set_data(laid.copy_(parameter.data()));
    }
  }
}

torch::Tensor ModelInput(const torch::Tensor& features, torch::Device device) {
  torch::Tensor placed = features.to(device);
  if (placed.dim() != 4) return placed;
  return placed.contiguous(torch::MemoryFormat::ChannelsLast);
}

}  // namespace shard::trainer

// The networks shard-train can train (--model):
//   linear  one linear layer (linear / softmax regression);
//   mlp     one hidden layer of 32 ReLU units;
//   cnn     two 5x5 convolutions (16 and 32 channels, ReLU, 2x2 max
//           pooling each), then a linear layer; needs [C, H, W] examples.
#ifndef TRAINER_MODELS_H_
#define TRAINER_MODELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "torch/nn/modules/container/sequential.h"

namespace shard::trainer {

enum class ModelKind { kLinear, kMlp, kCnn };
absl::StatusOr<ModelKind> ParseModelKind(const std::string& name);

// A network for examples of `example_shape` with `outputs` outputs (logits
// for classification). INVALID_ARGUMENT when the model does not fit the
// shape (cnn on flat features, or images smaller than 4x4).
absl::StatusOr<torch::nn::Sequential> MakeModel(
    ModelKind kind, const std::vector<int64_t>& example_shape, int64_t outputs);

// The models compute image batches channels-last (NHWC): libtorch 1.13's
// CPU max pooling is a scalar loop in the default NCHW layout (21 % of
// shard-train's CPU time at W = 2) and vectorised in NHWC, and oneDNN's
// convolutions take NHWC natively. The same model; the convolutions may
// sum in another order (as any two kernels do).
//
// Moves the model to `device` and lays its 4-D weights out channels-last.
void PlaceModel(torch::nn::Sequential& model, torch::Device device);
// A batch of features on `device` in the layout the models compute in.
torch::Tensor ModelInput(const torch::Tensor& features, torch::Device device);

}  // namespace shard::trainer

#endif  // TRAINER_MODELS_H_

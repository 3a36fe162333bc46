// The few spellings that differ between libtorch 1.13 (Debian) and 2.x.
// Everything version-dependent in the project goes through this header.
#ifndef CLIENT_TORCH_TORCH_COMPAT_H_
#define CLIENT_TORCH_TORCH_COMPAT_H_

#include "torch/types.h"

namespace shard::torch_compat {

// Sampler<> signatures use torch's optional: c10::optional in 1.13, an alias
// of std::optional in 2.x; torch::optional names the right one in both.
template <typename T>
using optional = torch::optional<T>;
inline constexpr auto nullopt = torch::nullopt;

}  // namespace shard::torch_compat

#endif  // CLIENT_TORCH_TORCH_COMPAT_H_

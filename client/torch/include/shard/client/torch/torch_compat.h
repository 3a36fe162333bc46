// The few spellings that differ between libtorch 1.13 (Debian) and 2.x.
// Differences between libtorch builds rather than versions (Gloo headers,
// a pure virtual c10d::Store::clone) are detected when CMake configures
// (SHARD_HAVE_GLOO, SHARD_TORCH_STORE_HAS_CLONE), not here.
#ifndef SHARD_CLIENT_TORCH_TORCH_COMPAT_H_
#define SHARD_CLIENT_TORCH_TORCH_COMPAT_H_

#include "torch/types.h"
#include "torch/version.h"

#if TORCH_VERSION_MAJOR >= 2
#include "torch/csrc/distributed/c10d/Backend.hpp"
#else
#include "torch/csrc/distributed/c10d/ProcessGroup.hpp"
#endif

namespace shard::torch_compat {

// The class a concrete process group (ProcessGroupGloo / ProcessGroupNCCL)
// derives from and that carries the collectives: ProcessGroup in 1.13,
// Backend in 2.x.
#if TORCH_VERSION_MAJOR >= 2
using Collectives = c10d::Backend;
#else
using Collectives = c10d::ProcessGroup;
#endif

// Sampler<> signatures use torch's optional: c10::optional in 1.13, an alias
// of std::optional in 2.x; torch::optional names the right one in both.
template <typename T>
using optional = torch::optional<T>;
inline constexpr auto nullopt = torch::nullopt;

}  // namespace shard::torch_compat

#endif  // SHARD_CLIENT_TORCH_TORCH_COMPAT_H_

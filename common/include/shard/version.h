// The version of this build of shard (the project version in
// CMakeLists.txt), as every binary's --version prints it. Installed as
// <shard/version.h>. Thread-safe.
#ifndef SHARD_VERSION_H_
#define SHARD_VERSION_H_

#include <string>

namespace shard {

// "MAJOR.MINOR.PATCH", e.g. "0.1.0".
std::string Version();

}  // namespace shard

#endif  // SHARD_VERSION_H_

// The version of this build of shard (the project version in
// CMakeLists.txt), as every binary's --version prints it. Installed as
// <shard/version.h>. Thread-safe.
#ifndef COMMON_VERSION_H_
#define COMMON_VERSION_H_

#include <string>

namespace shard {

// "MAJOR.MINOR.PATCH", e.g. "0.1.0".
std::string Version();

}  // namespace shard

#endif  // COMMON_VERSION_H_

// "HOST:PORT" of a listener: the --listen style address with the port it
// actually bound (which differs when the flag asked for port 0).
#ifndef SERVER_RUNTIME_BOUND_ADDRESS_H_
#define SERVER_RUNTIME_BOUND_ADDRESS_H_

#include <string>

#include "absl/strings/str_cat.h"

namespace shard::server {

inline std::string BoundAddress(const std::string& listen, int port) {
  const size_t colon = listen.rfind(':');
  const std::string host =
      colon == std::string::npos ? listen : listen.substr(0, colon);
  return absl::StrCat(host, ":", port);
}

}  // namespace shard::server

#endif  // SERVER_RUNTIME_BOUND_ADDRESS_H_

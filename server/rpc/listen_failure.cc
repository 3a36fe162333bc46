#include "server/rpc/listen_failure.h"

#include <errno.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace shard::server {

std::string ListenFailure(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == listen.size()) {
    return "expected HOST:PORT";
  }
  absl::string_view host(listen.data(), colon);
  const std::string port = listen.substr(colon + 1);
  if (absl::ConsumePrefix(&host, "[")) absl::ConsumeSuffix(&host, "]");
  const std::string host_name(host);
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int error =
          getaddrinfo(host_name.empty() ? nullptr : host_name.c_str(),
                      port.c_str(), &hints, &found);
      error != 0) {
    return absl::StrCat(host_name, " does not resolve (", gai_strerror(error),
                        ")");
  }
  std::string cause = "gRPC could not bind it";
  const int fd =
      socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  if (fd >= 0) {
    if (bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
      switch (errno) {
        case EADDRINUSE:
          cause = "address already in use (is another shardd running?)";
          break;
        case EACCES:
          cause =
              "permission denied (ports below 1024 need root or "
              "CAP_NET_BIND_SERVICE)";
          break;
        case EADDRNOTAVAIL:
          cause = "not an address of this host";
          break;
        default:
          cause = std::strerror(errno);
      }
    }
    close(fd);
  }
  freeaddrinfo(found);
  return cause;
}

}  // namespace shard::server

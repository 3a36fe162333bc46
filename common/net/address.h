// Network addresses, one rule for every flag and client that takes one:
// HOST:PORT or [IPV6]:PORT, PORT a decimal number in 1..65535 (a listener
// may take 0: any free port), and, where a client dials, a gRPC target URI
// (dns:///host:port, unix:/path, ipv4:..., ipv6:...) as gRPC spells them.
// The Python client (shard/_channel.py) applies the same rule. Pure
// functions; thread-safe.
#ifndef COMMON_NET_ADDRESS_H_
#define COMMON_NET_ADDRESS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shard::net {

// What an address is for.
enum class AddressUse {
  kListen,  // A local listener: port 0 picks a free one; no target URIs.
  kDial,    // What a client connects to: a real port, or a target URI.
};

// OK if `address` fits the rule for `use`; otherwise INVALID_ARGUMENT
// whose message starts with the address in quotes and says what is wrong
// and how to write it (e.g. "\"h:95537\" has port 95537, out of range:
// give a port from 1 to 65535").
absl::Status CheckAddress(absl::string_view address, AddressUse use);

// A comma-separated list of addresses to dial (spaces around commas and
// empty entries are ignored), each checked by CheckAddress; INVALID_ARGUMENT
// for the first that does not fit, or for an empty list.
absl::StatusOr<std::vector<std::string>> ParseAddressList(
    absl::string_view addresses);

}  // namespace shard::net

#endif  // COMMON_NET_ADDRESS_H_

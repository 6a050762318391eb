// A sockaddr for an Endpoint, shared by the prober and the sink.
#pragma once

#include <sys/socket.h>

#include <optional>

#include "zcal/probes/endpoint.h"

namespace zcal::probes {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
};

/// nullopt when the host is not a numeric IPv4 or IPv6 address.
std::optional<SocketAddress> ToSockaddr(const Endpoint& endpoint);

}  // namespace zcal::probes

#include "zcal/probes/endpoint.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "sender.h"
#include "socket_address.h"

namespace zcal::probes {

Result<Endpoint> ParseEndpoint(std::string_view text) {
  const std::string quoted = "\"" + std::string(text) + "\"";
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() ||
        text[close + 1] != ':') {
      return Fail(Errc::kInvalidArgument,
                  "endpoint " + quoted + ": expected [IPV6]:PORT, e.g. [::1]:7070");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      return Fail(Errc::kInvalidArgument,
                  "endpoint " + quoted +
                      ": expected ADDRESS:PORT, e.g. 10.0.0.2:7070 or [::1]:7070");
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() ||
      value == 0 || value > 65535) {
    return Fail(Errc::kInvalidArgument,
                "endpoint " + quoted + ": port must be a number from 1 to 65535");
  }
  Endpoint endpoint{std::string(host), static_cast<std::uint16_t>(value)};
  if (!ToSockaddr(endpoint)) {
    return Fail(Errc::kInvalidArgument,
                "endpoint " + quoted + ": \"" + endpoint.host +
                    "\" is not a numeric IPv4 or IPv6 address (names are not resolved)");
  }
  return endpoint;
}

std::string ToString(const Endpoint& endpoint) {
  if (endpoint.host.find(':') != std::string::npos) {
    return "[" + endpoint.host + "]:" + std::to_string(endpoint.port);
  }
  return endpoint.host + ":" + std::to_string(endpoint.port);
}

std::optional<SocketAddress> ToSockaddr(const Endpoint& endpoint) {
  SocketAddress address;
  sockaddr_in v4{};
  if (::inet_pton(AF_INET, endpoint.host.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(endpoint.port);
    std::memcpy(&address.storage, &v4, sizeof v4);
    address.length = sizeof v4;
    return address;
  }
  sockaddr_in6 v6{};
  if (::inet_pton(AF_INET6, endpoint.host.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(endpoint.port);
    std::memcpy(&address.storage, &v6, sizeof v6);
    address.length = sizeof v6;
    return address;
  }
  return std::nullopt;
}

Result<int> ConnectTcp(const Endpoint& endpoint, int timeout_ms) {
  const auto address = ToSockaddr(endpoint);
  const std::string where = ToString(endpoint);
  if (!address) {
    return Fail(Errc::kInvalidArgument, "connect " + where + ": not a numeric address");
  }
  const int fd = ::socket(address->storage.ss_family,
                          SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    return Fail(Errc::kFailed, "connect " + where + ": socket(2) failed with " +
                                   ErrnoText(errno));
  }
  auto fail = [&](const std::string& what, int err) {
    ::close(fd);
    return Fail(Errc::kFailed, "connect " + where + ": " + what + " " + ErrnoText(err) +
                                   "; is a zcal sink listening there?");
  };
  const int one = 1;
  // Small messages must not wait for ACKs of the previous ones (Nagle).
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    return fail("setsockopt(TCP_NODELAY) failed with", errno);
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address->storage),
                address->length) != 0) {
    if (errno != EINPROGRESS) return fail("failed with", errno);
    pollfd p{fd, POLLOUT, 0};
    const int ready = ::poll(&p, 1, timeout_ms);
    if (ready == 0) return fail("timed out after " + std::to_string(timeout_ms) + " ms,", ETIMEDOUT);
    if (ready < 0) return fail("poll failed with", errno);
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return fail("failed with", err);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return fail("fcntl failed with", errno);
  }
  return fd;
}

}  // namespace zcal::probes

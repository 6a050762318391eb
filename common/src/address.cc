#include "zcal/common/address.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

namespace zcal::common {
namespace {

std::string DoubleQuoted(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

}  // namespace

bool IpAddress::IsLoopback() const {
  if (!IsIpv6()) return bytes[0] == 127;
  static constexpr std::array<std::uint8_t, 16> kLoopback6 = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return bytes == kLoopback6;
}

Result<IpAddress> ParseIpAddress(std::string_view text) {
  const std::string copy(text);
  IpAddress address;
  if (copy.find(':') == std::string::npos) {
    if (::inet_pton(AF_INET, copy.c_str(), address.bytes.data()) == 1) {
      address.family = AF_INET;
      return address;
    }
  } else if (::inet_pton(AF_INET6, copy.c_str(), address.bytes.data()) == 1) {
    address.family = AF_INET6;
    return address;
  }
  return Fail(Errc::kInvalidArgument,
              DoubleQuoted(text) +
                  " is not a numeric IPv4 or IPv6 address (names are not "
                  "resolved here)");
}

std::string ToString(const IpAddress& address) {
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(address.family, address.bytes.data(), text, sizeof text);
  return text;
}

Result<HostPort> ParseHostPort(std::string_view text, PortRule rule) {
  const std::string example = "e.g. 10.0.0.2:7070 or [::1]:7070";
  std::string_view host;
  std::string_view port;
  if (text.starts_with('[')) {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() ||
        text[close + 1] != ':') {
      return Fail(Errc::kInvalidArgument,
                  DoubleQuoted(text) + " is not [IPV6]:PORT; " + example);
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      return Fail(Errc::kInvalidArgument,
                  DoubleQuoted(text) + " is not ADDRESS:PORT (an IPv6 address goes "
                                 "in brackets); " + example);
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  const auto [end, ec] =
      std::from_chars(port.data(), port.data() + port.size(), value);
  const unsigned lowest = rule == PortRule::kZeroAllowed ? 0 : 1;
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() ||
      value < lowest || value > 65535) {
    return Fail(Errc::kInvalidArgument,
                DoubleQuoted(text) + ": the port must be a number from " +
                    std::to_string(lowest) + " to 65535");
  }
  Result<IpAddress> address = ParseIpAddress(host);
  if (!address) {
    return Fail(Errc::kInvalidArgument,
                DoubleQuoted(text) + ": " + address.error().message);
  }
  if (text.starts_with('[') != address->IsIpv6()) {
    return Fail(Errc::kInvalidArgument,
                DoubleQuoted(text) + (address->IsIpv6()
                                    ? " needs brackets around the IPv6 address; "
                                    : " has brackets around an IPv4 address; ") +
                    example);
  }
  return HostPort{*address, static_cast<std::uint16_t>(value)};
}

std::string ToString(const HostPort& endpoint) {
  const std::string host = ToString(endpoint.address);
  const std::string port = std::to_string(endpoint.port);
  return endpoint.address.IsIpv6() ? "[" + host + "]:" + port
                                   : host + ":" + port;
}

SocketAddress ToSocketAddress(const HostPort& endpoint) {
  SocketAddress out;
  if (endpoint.address.IsIpv6()) {
    sockaddr_in6 v6{};
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(endpoint.port);
    std::memcpy(&v6.sin6_addr, endpoint.address.bytes.data(), 16);
    std::memcpy(&out.storage, &v6, sizeof v6);
    out.length = sizeof v6;
  } else {
    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    v4.sin_port = htons(endpoint.port);
    std::memcpy(&v4.sin_addr, endpoint.address.bytes.data(), 4);
    std::memcpy(&out.storage, &v4, sizeof v4);
    out.length = sizeof v4;
  }
  return out;
}

Result<HostPort> FromSocketAddress(const sockaddr* address, socklen_t length) {
  HostPort out;
  if (address->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
    sockaddr_in v4{};
    std::memcpy(&v4, address, sizeof v4);
    out.address.family = AF_INET;
    std::memcpy(out.address.bytes.data(), &v4.sin_addr, 4);
    out.port = ntohs(v4.sin_port);
    return out;
  }
  if (address->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    sockaddr_in6 v6{};
    std::memcpy(&v6, address, sizeof v6);
    out.port = ntohs(v6.sin6_port);
    if (IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) {
      out.address.family = AF_INET;
      std::memcpy(out.address.bytes.data(), &v6.sin6_addr.s6_addr[12], 4);
    } else {
      out.address.family = AF_INET6;
      std::memcpy(out.address.bytes.data(), &v6.sin6_addr, 16);
    }
    return out;
  }
  return Fail(Errc::kInvalidArgument,
              "not an IPv4 or IPv6 socket address (family " +
                  std::to_string(address->sa_family) + ")");
}

bool IpPrefix::Contains(const IpAddress& other) const {
  if (other.family != address.family) return false;
  const std::size_t full = length / 8;
  if (std::memcmp(other.bytes.data(), address.bytes.data(), full) != 0) {
    return false;
  }
  const unsigned rest = length % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xFF << (8 - rest));
  return (other.bytes[full] & mask) == address.bytes[full];
}

Result<IpPrefix> ParsePrefix(std::string_view text) {
  const std::size_t slash = text.find('/');
  Result<IpAddress> address = ParseIpAddress(text.substr(0, slash));
  if (!address) {
    return Fail(Errc::kInvalidArgument,
                "prefix " + DoubleQuoted(text) + ": " + address.error().message +
                    "; write ADDRESS/LENGTH, e.g. 198.18.0.0/15");
  }
  const unsigned bits = static_cast<unsigned>(address->Size() * 8);
  unsigned length = bits;
  if (slash != std::string_view::npos) {
    const std::string_view digits = text.substr(slash + 1);
    const auto [end, ec] =
        std::from_chars(digits.data(), digits.data() + digits.size(), length);
    if (digits.empty() || ec != std::errc() ||
        end != digits.data() + digits.size() || length > bits) {
      return Fail(Errc::kInvalidArgument,
                  "prefix " + DoubleQuoted(text) + ": the length must be a number "
                  "from 0 to " + std::to_string(bits));
    }
  }
  IpPrefix prefix{*address, static_cast<std::uint8_t>(length)};
  IpAddress masked = *address;
  for (unsigned bit = length; bit < bits; ++bit) {
    masked.bytes[bit / 8] &= static_cast<std::uint8_t>(~(0x80U >> (bit % 8)));
  }
  if (masked != *address) {
    return Fail(Errc::kInvalidArgument,
                "prefix " + DoubleQuoted(text) + " has host bits set; write " +
                    ToString(IpPrefix{masked, prefix.length}));
  }
  return prefix;
}

std::string ToString(const IpPrefix& prefix) {
  return ToString(prefix.address) + "/" + std::to_string(prefix.length);
}

}  // namespace zcal::common

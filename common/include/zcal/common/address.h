// Numeric IP addresses, ADDRESS:PORT endpoints and CIDR prefixes: the one
// parser behind every address zcal reads (sink and metrics listeners, peer
// sinks, allow-lists).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "zcal/common/result.h"

namespace zcal::common {

/// An IPv4 or IPv6 address. IPv4 uses the first 4 bytes.
struct IpAddress {
  sa_family_t family = AF_INET;  ///< AF_INET or AF_INET6
  std::array<std::uint8_t, 16> bytes{};

  bool operator==(const IpAddress&) const = default;
  bool IsIpv6() const { return family == AF_INET6; }
  /// 127.0.0.0/8 or ::1.
  bool IsLoopback() const;
  /// 4 or 16.
  std::size_t Size() const { return IsIpv6() ? 16 : 4; }
};

/// A numeric address ("10.0.0.2", "::1"); names are not resolved.
/// Errc::kInvalidArgument otherwise.
Result<IpAddress> ParseIpAddress(std::string_view text);

/// The canonical numeric spelling (inet_ntop): "10.0.0.2", "fe80::1".
std::string ToString(const IpAddress& address);

/// An address and a TCP or UDP port.
struct HostPort {
  IpAddress address;
  std::uint16_t port = 0;

  bool operator==(const HostPort&) const = default;
};

/// Whether port 0 (any free port, for a listener) is acceptable.
enum class PortRule : std::uint8_t { kNonZero, kZeroAllowed };

/// Parses "IPV4:PORT" or "[IPV6]:PORT" (numeric, port 1-65535, or 0 with
/// kZeroAllowed). Errc::kInvalidArgument with a message naming the text and
/// what is expected.
Result<HostPort> ParseHostPort(std::string_view text,
                               PortRule rule = PortRule::kNonZero);

/// "10.0.0.2:7070" or "[::1]:7070"; ParseHostPort reads it back.
std::string ToString(const HostPort& endpoint);

/// A socket address for bind/connect.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  const sockaddr* get() const {
    return reinterpret_cast<const sockaddr*>(&storage);
  }
};
SocketAddress ToSocketAddress(const HostPort& endpoint);

/// The endpoint of an AF_INET or AF_INET6 socket address (IPv4-mapped IPv6
/// addresses become IPv4); kInvalidArgument for another family.
Result<HostPort> FromSocketAddress(const sockaddr* address, socklen_t length);

/// A CIDR prefix: "10.0.0.0/8", "2001:db8::/32"; an address without "/N"
/// is a host prefix (/32 or /128).
struct IpPrefix {
  IpAddress address;  ///< bits beyond `length` are zero
  std::uint8_t length = 0;

  bool operator==(const IpPrefix&) const = default;
  /// True when `address` is of the same family and inside the prefix.
  bool Contains(const IpAddress& address) const;
};

/// kInvalidArgument for a malformed prefix, a length beyond the family's
/// bits, or host bits set beyond the length ("10.0.0.1/8": write 10.0.0.0/8).
Result<IpPrefix> ParsePrefix(std::string_view text);

/// "10.0.0.0/8".
std::string ToString(const IpPrefix& prefix);

}  // namespace zcal::common

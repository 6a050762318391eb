#include "zcal/agent/peers/peer_discovery.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "zcal/common/errno_text.h"
#include "zcal/common/unique_fd.h"

namespace zcal::agent {
namespace {

constexpr std::size_t kMaxNameBytes = 253;
constexpr std::size_t kMaxLabelBytes = 63;

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

FieldError Invalid(std::string_view text, const std::string& why) {
  std::string detail = Quoted(text) + ": " + why +
                       "; expected NAME:PORT, e.g. zcal-agents.zcal.svc.cluster.local:7070";
  return FieldError(Errc::kInvalidArgument, "peers.dns " + detail, "peers.dns", detail);
}

// getaddrinfo takes what inet_aton(3) takes as a number, which is more than
// dotted quads ("127.1", "0x7f000001", "2130706433"): such a "name" would be
// one fixed address, never a DNS lookup.
bool IsNumericAddress(const std::string& name) {
  in_addr v4{};
  in6_addr v6{};
  return ::inet_aton(name.c_str(), &v4) != 0 || ::inet_pton(AF_INET6, name.c_str(), &v6) == 1;
}

bool IsNameByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '.' || c == '_';
}

using IfAddrs = std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)>;

Result<IfAddrs> ListInterfaces() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) {
    return Fail(Errc::kIo, "cannot list this host's network interfaces (getifaddrs: " +
                               common::ErrnoText(errno) + ")");
  }
  return IfAddrs(list, &::freeifaddrs);
}

// The address of an AF_INET or AF_INET6 entry; nullopt for other families
// (AF_PACKET, ...) and for interfaces without an address.
std::optional<common::IpAddress> AddressOf(const ifaddrs& entry) {
  if (entry.ifa_addr == nullptr) return std::nullopt;
  const sa_family_t family = entry.ifa_addr->sa_family;
  if (family != AF_INET && family != AF_INET6) return std::nullopt;
  const socklen_t length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  auto endpoint = common::FromSocketAddress(entry.ifa_addr, length);
  if (!endpoint) return std::nullopt;
  return endpoint->address;
}

// An IPv4-mapped IPv6 address ("::ffff:198.18.0.1") names the IPv4 host:
// one spelling, so that it deduplicates with and is excluded as that host.
common::HostPort Canonical(const common::HostPort& endpoint) {
  const common::SocketAddress socket_address = common::ToSocketAddress(endpoint);
  auto canonical = common::FromSocketAddress(socket_address.get(), socket_address.length);
  return canonical ? *canonical : endpoint;
}

auto SortKey(const common::HostPort& peer) {
  return std::tie(peer.address.family, peer.address.bytes, peer.port);
}

DnsFailure FailureOf(int rc) {
  switch (rc) {
    case EAI_NONAME:
      return DnsFailure::kNxDomain;
#ifdef EAI_NODATA
    case EAI_NODATA:
      return DnsFailure::kNoAnswer;
#endif
    case EAI_AGAIN:
      return DnsFailure::kTemporary;
    default:
      return DnsFailure::kFailed;
  }
}

std::string_view AdviceFor(DnsFailure failure) {
  switch (failure) {
    case DnsFailure::kNxDomain:
      return "no such name: check the name (a headless Service is "
             "SERVICE.NAMESPACE.svc.cluster.local) and the resolver in /etc/resolv.conf";
    case DnsFailure::kNoAnswer:
      return "the name has no A or AAAA record: is any agent behind it ready?";
    case DnsFailure::kTemporary:
      return "the resolver did not answer for now; discovery tries again at the next refresh";
    case DnsFailure::kFailed:
    case DnsFailure::kNone:
      break;
  }
  return "check the resolver configuration (/etc/resolv.conf, /etc/nsswitch.conf)";
}

// Resolves into `out`, or returns why not.
DnsFailure Resolve(const DnsPeerName& dns, std::vector<common::HostPort>& out,
                   std::string& error) {
  const std::string where = "peers.dns " + dns.name + ":" + std::to_string(dns.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;  // one entry per address, not per socket type
  addrinfo* list = nullptr;
  const int rc = ::getaddrinfo(dns.name.c_str(), nullptr, &hints, &list);
  if (rc != 0) {
    const DnsFailure failure = FailureOf(rc);
    error = where + ": " + ::gai_strerror(rc);
    if (rc == EAI_SYSTEM) error += " (" + common::ErrnoText(errno) + ")";
    error += "; " + std::string(AdviceFor(failure));
    return failure;
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owner(list, &::freeaddrinfo);
  const std::size_t before = out.size();
  for (const addrinfo* entry = list; entry != nullptr; entry = entry->ai_next) {
    if (entry->ai_addr == nullptr) continue;
    auto endpoint = common::FromSocketAddress(entry->ai_addr, entry->ai_addrlen);
    if (!endpoint) continue;
    endpoint->port = dns.port;
    out.push_back(*endpoint);
  }
  if (out.size() == before) {
    error = where + ": the answer holds no IPv4 or IPv6 address; " +
            std::string(AdviceFor(DnsFailure::kNoAnswer));
    return DnsFailure::kNoAnswer;
  }
  return DnsFailure::kNone;
}

}  // namespace

Result<DnsPeerName, FieldError> ParseDnsPeerName(std::string_view text) {
  if (text.starts_with('[')) {
    return tl::unexpected(
        Invalid(text, "is a numeric address: list it under peers.static"));
  }
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    if (IsNumericAddress(std::string(text))) {
      return tl::unexpected(
          Invalid(text, "is a numeric address: list it under peers.static as ADDRESS:PORT"));
    }
    return tl::unexpected(Invalid(text, "has no :PORT"));
  }
  const std::string name(text.substr(0, colon));
  const std::string_view port = text.substr(colon + 1);
  if (IsNumericAddress(name) || IsNumericAddress(std::string(text))) {
    return tl::unexpected(
        Invalid(text, "is a numeric address: list it under peers.static"));
  }
  if (name.empty()) return tl::unexpected(Invalid(text, "the name is empty"));
  for (char c : name) {
    if (!IsNameByte(c)) {
      return tl::unexpected(Invalid(
          text, "the name holds " + Quoted(std::string_view(&c, 1)) +
                    "; a name has letters, digits, '-', '_' and '.' only"));
    }
  }
  // A trailing dot marks an absolute name; it is not part of the length.
  const std::string_view bare =
      name.ends_with('.') ? std::string_view(name).substr(0, name.size() - 1) : name;
  if (bare.size() > kMaxNameBytes) {
    return tl::unexpected(Invalid(text, "the name has " + std::to_string(bare.size()) +
                                            " bytes, more than 253"));
  }
  std::size_t start = 0;
  while (start <= bare.size()) {
    const std::size_t dot = std::min(bare.find('.', start), bare.size());
    const std::size_t length = dot - start;
    if (length == 0) {
      return tl::unexpected(Invalid(text, "the name has an empty label (\"..\", or a "
                                          "leading dot)"));
    }
    if (length > kMaxLabelBytes) {
      return tl::unexpected(Invalid(text, "the label " + Quoted(bare.substr(start, length)) +
                                              " has " + std::to_string(length) +
                                              " bytes, more than 63"));
    }
    start = dot + 1;
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value < 1 ||
      value > 65535) {
    return tl::unexpected(Invalid(text, "the port must be a number from 1 to 65535"));
  }
  return DnsPeerName{name, static_cast<std::uint16_t>(value)};
}

Discovery DiscoverPeers(const std::vector<common::HostPort>& static_peers,
                        const DnsPeerName& dns,
                        const std::vector<common::IpAddress>& own) {
  Discovery discovery;
  std::vector<common::HostPort> candidates;
  for (const common::HostPort& peer : static_peers) candidates.push_back(Canonical(peer));
  std::vector<common::IpAddress> own_addresses;
  for (const common::IpAddress& address : own) {
    own_addresses.push_back(Canonical(common::HostPort{address, 0}).address);
  }
  if (!dns.name.empty()) {
    discovery.dns_failure = Resolve(dns, candidates, discovery.dns_error);
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const common::HostPort& a, const common::HostPort& b) {
              return SortKey(a) < SortKey(b);
            });
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (const common::HostPort& candidate : candidates) {
    if (std::find(own_addresses.begin(), own_addresses.end(), candidate.address) !=
        own_addresses.end()) {
      ++discovery.own_excluded;
    } else {
      discovery.peers.push_back(candidate);
    }
  }
  return discovery;
}

Result<std::vector<common::IpAddress>> OwnAddresses() {
  auto list = ListInterfaces();
  if (!list) return tl::unexpected(list.error());
  std::vector<common::IpAddress> addresses;
  for (const ifaddrs* entry = list->get(); entry != nullptr; entry = entry->ifa_next) {
    const auto address = AddressOf(*entry);
    if (!address) continue;
    if (std::find(addresses.begin(), addresses.end(), *address) == addresses.end()) {
      addresses.push_back(*address);
    }
  }
  return addresses;
}

std::string HostIdentity() {
  char name[256] = {};
  std::string identity = gethostname(name, sizeof name - 1) == 0 ? name : "";
  if (Result<std::vector<common::IpAddress>> own = OwnAddresses()) {
    std::vector<std::string> addresses;
    for (const common::IpAddress& a : *own) {
      if (!a.IsLoopback()) addresses.push_back(common::ToString(a));
    }
    std::sort(addresses.begin(), addresses.end());
    for (const std::string& a : addresses) identity += " " + a;
  }
  return identity;
}

}  // namespace zcal::agent

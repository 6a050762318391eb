// The egress interface, as the kernel routes: one RTM_GETROUTE per
// question, so that policy rules and every table they select are honoured
// (the main table in /proc/net/route is not the whole answer under policy
// routing, and the interface holding a connected socket's source address
// need not be the route's).
#include <net/if.h>

#include <cerrno>

#include "zcal/common/errno_text.h"
#include "zcal/probes/host/host_facts.h"
#include "zcal/probes/host/rtnetlink.h"

namespace zcal::probes {

namespace {

// Where "traffic to other hosts" is asked about: addresses reserved for
// documentation (RFC 5737, RFC 3849), which no real network routes
// specifically, so the answer is the default route's, or where policy
// rules send traffic without a route of its own.
constexpr const char* kDefaultProbeV4 = "203.0.113.1";
constexpr const char* kDefaultProbeV6 = "2001:db8::1";

// An IPv4-mapped IPv6 address ("::ffff:198.18.0.1") is routed as IPv4.
common::IpAddress Unmapped(const common::IpAddress& address) {
  if (!address.IsIpv6()) return address;
  for (std::size_t i = 0; i < 10; ++i) {
    if (address.bytes[i] != 0) return address;
  }
  if (address.bytes[10] != 0xff || address.bytes[11] != 0xff) return address;
  common::IpAddress v4;
  v4.family = AF_INET;
  for (std::size_t i = 0; i < 4; ++i) v4.bytes[i] = address.bytes[12 + i];
  return v4;
}

bool NoRoute(int err) {
  return err == ENETUNREACH || err == EHOSTUNREACH || err == EACCES || err == EINVAL ||
         err == EAFNOSUPPORT;
}

}  // namespace

Result<std::string> EgressInterface(const common::IpAddress& destination) {
  const common::IpAddress address = Unmapped(destination);
  const std::string target = common::ToString(address);
  const std::string check = "; check `ip route get " + target + "`";
  const auto netlink = Rtnetlink::Open();
  if (!netlink) {
    return Fail(Errc::kIo, "cannot ask the kernel for the route to " + target + ": " +
                               netlink.error().message + " with " +
                               common::ErrnoText(netlink.error().err));
  }
  const auto index = (*netlink)->RouteInterface(address);
  if (!index) {
    const NetlinkError& status = index.error();
    const std::string said = status.message.empty() ? "" : " (\"" + status.message + "\")";
    if (NoRoute(status.err)) {
      return Fail(Errc::kNotFound, "no route to " + target + " from this host (RTM_GETROUTE: " +
                                       common::ErrnoText(status.err) + said + ")" + check);
    }
    return Fail(Errc::kIo, "cannot find the route to " + target + " (RTM_GETROUTE: " +
                               common::ErrnoText(status.err) + said + ")" + check);
  }
  char name[IF_NAMESIZE] = {};
  if (::if_indextoname(*index, name) == nullptr) {
    return Fail(Errc::kIo, "the kernel routes " + target + " through interface index " +
                               std::to_string(*index) + ", which has no name now (" +
                               common::ErrnoText(errno) + ")" + check);
  }
  return std::string(name);
}

Result<std::string> DefaultRouteInterface() {
  auto v4 = EgressInterface(*common::ParseIpAddress(kDefaultProbeV4));
  if (v4 || v4.error().code != Errc::kNotFound) return v4;
  auto v6 = EgressInterface(*common::ParseIpAddress(kDefaultProbeV6));
  if (v6 || v6.error().code != Errc::kNotFound) return v6;
  return Fail(Errc::kNotFound, "no default route: IPv4: " + v4.error().message +
                                   "; IPv6: " + v6.error().message);
}

}  // namespace zcal::probes

// The few rtnetlink requests zcal needs (bring a link up and install a
// root qdisc for the discard path, ask the kernel's route to an address),
// sent with libmnl rather than by running ip(8) and tc(8): no dependency on
// iproute2 being installed, and the kernel's own error (errno and
// extended-ack text) reaches the user.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "zcal/common/address.h"
#include "zcal/common/result.h"

struct mnl_socket;
struct nlmsghdr;

namespace zcal::probes {

/// What the kernel refused: the Error's message is its extended-ack text,
/// or what failed on this side ("" when the kernel gave no text); `err` is
/// the errno the kernel (or a syscall) gave, which callers branch on.
struct NetlinkError : Error {
  int err = 0;

  NetlinkError() = default;
  NetlinkError(int errno_value, std::string detail);
};

/// A NETLINK_ROUTE socket of the calling thread's network namespace.
/// Requests are synchronous (each waits for its ACK). Not thread-safe.
class Rtnetlink {
 public:
  /// Opens and binds the socket and asks for extended acks.
  static Result<std::unique_ptr<Rtnetlink>, NetlinkError> Open();
  ~Rtnetlink();
  Rtnetlink(const Rtnetlink&) = delete;
  Rtnetlink& operator=(const Rtnetlink&) = delete;

  /// RTM_NEWLINK setting IFF_UP on the interface with this index.
  Result<void, NetlinkError> SetLinkUp(unsigned ifindex);

  /// RTM_NEWQDISC (create, exclusive) of qdisc `kind` as the root qdisc of
  /// the interface: what `tc qdisc add dev IF root KIND` sends. A kind the
  /// kernel does not know fails with ENOENT; a kernel without traffic
  /// control (CONFIG_NET_SCHED=n) has no handler: EOPNOTSUPP.
  Result<void, NetlinkError> AddRootQdisc(unsigned ifindex, const std::string& kind);

  /// RTM_GETROUTE for `destination` (IPv4, or IPv6 that is not
  /// IPv4-mapped): the index of the interface the kernel's answer leaves
  /// through, after its policy rules and every table they select, as `ip
  /// route get ADDR` asks. The kernel's errno when it has no route:
  /// ENETUNREACH, EHOSTUNREACH (an unreachable route), EACCES (prohibit),
  /// EINVAL (blackhole); EAFNOSUPPORT without IPv6.
  Result<unsigned, NetlinkError> RouteInterface(const common::IpAddress& destination);

 private:
  explicit Rtnetlink(mnl_socket* socket);
  // Sends `request` with NLM_F_ACK and waits for its ACK; the answers before
  // it (of the same sequence) go to `on_answer`.
  Result<void, NetlinkError> Transact(void* request,
                                      const std::function<void(const nlmsghdr*)>& on_answer = {});

  mnl_socket* socket_;
  unsigned port_id_;
  unsigned sequence_ = 1;
};

}  // namespace zcal::probes

// The few rtnetlink requests zcal needs (bring a link up and install a
// root qdisc for the discard path, ask the kernel's route to an address),
// sent with libmnl rather than by running ip(8) and tc(8): no dependency on
// iproute2 being installed, and the kernel's own error (errno and
// extended-ack text) reaches the user.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <tl/expected.hpp>

#include "zcal/common/address.h"

struct mnl_socket;
struct nlmsghdr;

namespace zcal::probes {

/// What the kernel answered to one request.
struct NetlinkStatus {
  int err = 0;         ///< 0, or the errno the kernel (or a syscall) gave
  std::string detail;  ///< the kernel's extended-ack message, or what failed
  bool ok() const { return err == 0; }
};

/// A NETLINK_ROUTE socket of the calling thread's network namespace.
/// Requests are synchronous (each waits for its ACK). Not thread-safe.
class Rtnetlink {
 public:
  /// Opens and binds the socket and asks for extended acks. `status`
  /// receives the errno when it returns nullptr.
  static std::unique_ptr<Rtnetlink> Open(NetlinkStatus& status);
  ~Rtnetlink();
  Rtnetlink(const Rtnetlink&) = delete;
  Rtnetlink& operator=(const Rtnetlink&) = delete;

  /// RTM_NEWLINK setting IFF_UP on the interface with this index.
  NetlinkStatus SetLinkUp(unsigned ifindex);

  /// RTM_NEWQDISC (create, exclusive) of qdisc `kind` as the root qdisc of
  /// the interface: what `tc qdisc add dev IF root KIND` sends. A kind the
  /// kernel does not know fails with ENOENT; a kernel without traffic
  /// control (CONFIG_NET_SCHED=n) has no handler: EOPNOTSUPP.
  NetlinkStatus AddRootQdisc(unsigned ifindex, const std::string& kind);

  /// RTM_GETROUTE for `destination` (IPv4, or IPv6 that is not
  /// IPv4-mapped): the index of the interface the kernel's answer leaves
  /// through, after its policy rules and every table they select, as `ip
  /// route get ADDR` asks. The kernel's errno when it has no route:
  /// ENETUNREACH, EHOSTUNREACH (an unreachable route), EACCES (prohibit),
  /// EINVAL (blackhole); EAFNOSUPPORT without IPv6.
  tl::expected<unsigned, NetlinkStatus> RouteInterface(const common::IpAddress& destination);

 private:
  explicit Rtnetlink(mnl_socket* socket);
  // Sends `request` with NLM_F_ACK and waits for its ACK; the answers before
  // it (of the same sequence) go to `on_answer`.
  NetlinkStatus Transact(void* request,
                         const std::function<void(const nlmsghdr*)>& on_answer = {});

  mnl_socket* socket_;
  unsigned port_id_;
  unsigned sequence_ = 1;
};

}  // namespace zcal::probes

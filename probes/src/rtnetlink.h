// The few rtnetlink requests the discard path needs (bring a link up,
// install a root qdisc), sent with libmnl rather than by running ip(8) and
// tc(8): no dependency on iproute2 being installed, and the kernel's own
// error (errno and extended-ack text) reaches the user.
#pragma once

#include <memory>
#include <string>

struct mnl_socket;

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

 private:
  explicit Rtnetlink(mnl_socket* socket);
  NetlinkStatus Transact(void* request);

  mnl_socket* socket_;
  unsigned port_id_;
  unsigned sequence_ = 1;
};

}  // namespace zcal::probes

#include "zcal/probes/host/rtnetlink.h"

#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace zcal::probes {

namespace {

// Enough for either request and for an error ACK that echoes it.
constexpr std::size_t kBufferBytes = 8192;

tl::unexpected<NetlinkError> Refused(int err, std::string what) {
  return tl::unexpected<NetlinkError>(NetlinkError(err, std::move(what)));
}

Errc ClassOf(int err) {
  switch (err) {
    case EPERM:
    case EACCES: return Errc::kPermission;
    case EOPNOTSUPP:
    case EAFNOSUPPORT:
    case EPROTONOSUPPORT: return Errc::kUnsupported;
    case ENOENT:
    case ENODEV:
    case ENETUNREACH:
    case EHOSTUNREACH: return Errc::kNotFound;
    case EINVAL: return Errc::kInvalidArgument;
    default: return Errc::kIo;
  }
}

// The extended-ack message (NLMSGERR_ATTR_MSG) that follows an error, if
// the kernel included one.
std::string ExtackMessage(const nlmsghdr* header, const nlmsgerr* error) {
  if ((header->nlmsg_flags & NLM_F_ACK_TLVS) == 0) return {};
  std::size_t offset = sizeof(nlmsgerr);
  if ((header->nlmsg_flags & NLM_F_CAPPED) == 0) {
    offset += error->msg.nlmsg_len - sizeof(nlmsghdr);
  }
  const std::size_t payload = mnl_nlmsg_get_payload_len(header);
  if (offset >= payload) return {};
  std::string text;
  const auto* attribute = static_cast<const nlattr*>(
      mnl_nlmsg_get_payload_offset(header, offset));
  int left = static_cast<int>(payload - offset);
  for (; mnl_attr_ok(attribute, left);
       left -= static_cast<int>(MNL_ALIGN(attribute->nla_len)),
       attribute = mnl_attr_next(attribute)) {
    if (mnl_attr_get_type(attribute) == NLMSGERR_ATTR_MSG &&
        mnl_attr_validate(attribute, MNL_TYPE_NUL_STRING) == 0) {
      text = mnl_attr_get_str(attribute);
    }
  }
  return text;
}

}  // namespace

NetlinkError::NetlinkError(int errno_value, std::string detail)
    : Error{ClassOf(errno_value), std::move(detail)}, err(errno_value) {}

Result<std::unique_ptr<Rtnetlink>, NetlinkError> Rtnetlink::Open() {
  mnl_socket* socket = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
  if (socket == nullptr) return Refused(errno, "socket(AF_NETLINK, NETLINK_ROUTE) failed");
  if (mnl_socket_bind(socket, 0, MNL_SOCKET_AUTOPID) < 0) {
    const int err = errno;
    mnl_socket_close(socket);
    return Refused(err, "binding the netlink socket failed");
  }
  // Optional (Linux 4.12): without it errors come without the kernel's text.
  int one = 1;
  (void)mnl_socket_setsockopt(socket, NETLINK_EXT_ACK, &one, sizeof one);
  return std::unique_ptr<Rtnetlink>(new Rtnetlink(socket));
}

Rtnetlink::Rtnetlink(mnl_socket* socket)
    : socket_(socket), port_id_(mnl_socket_get_portid(socket)) {}

Rtnetlink::~Rtnetlink() { mnl_socket_close(socket_); }

Result<void, NetlinkError> Rtnetlink::SetLinkUp(unsigned ifindex) {
  alignas(nlmsghdr) char buffer[kBufferBytes] = {};
  nlmsghdr* header = mnl_nlmsg_put_header(buffer);
  header->nlmsg_type = RTM_NEWLINK;
  header->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  auto* link = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(header, sizeof(ifinfomsg)));
  link->ifi_family = AF_UNSPEC;
  link->ifi_index = static_cast<int>(ifindex);
  link->ifi_flags = IFF_UP;
  link->ifi_change = IFF_UP;
  return Transact(buffer);
}

Result<void, NetlinkError> Rtnetlink::AddRootQdisc(unsigned ifindex, const std::string& kind) {
  alignas(nlmsghdr) char buffer[kBufferBytes] = {};
  nlmsghdr* header = mnl_nlmsg_put_header(buffer);
  header->nlmsg_type = RTM_NEWQDISC;
  header->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
  auto* tc = static_cast<tcmsg*>(mnl_nlmsg_put_extra_header(header, sizeof(tcmsg)));
  tc->tcm_family = AF_UNSPEC;
  tc->tcm_ifindex = static_cast<int>(ifindex);
  tc->tcm_handle = 0;  // the kernel picks one
  tc->tcm_parent = TC_H_ROOT;
  if (!mnl_attr_put_strz_check(header, sizeof buffer, TCA_KIND, kind.c_str())) {
    return Refused(EINVAL, "the qdisc kind is too long");
  }
  return Transact(buffer);
}

Result<unsigned, NetlinkError> Rtnetlink::RouteInterface(
    const common::IpAddress& destination) {
  alignas(nlmsghdr) char buffer[kBufferBytes] = {};
  nlmsghdr* header = mnl_nlmsg_put_header(buffer);
  header->nlmsg_type = RTM_GETROUTE;
  header->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  auto* route = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(header, sizeof(rtmsg)));
  route->rtm_family = destination.family;
  route->rtm_dst_len = static_cast<unsigned char>(destination.Size() * 8);
  mnl_attr_put(header, RTA_DST, static_cast<std::uint32_t>(destination.Size()),
               destination.bytes.data());
  unsigned oif = 0;
  const Result<void, NetlinkError> status = Transact(buffer, [&oif](const nlmsghdr* answer) {
    if (answer->nlmsg_type != RTM_NEWROUTE) return;
    mnl_attr_parse(
        answer, sizeof(rtmsg),
        [](const nlattr* attribute, void* data) {
          if (mnl_attr_get_type(attribute) == RTA_OIF &&
              mnl_attr_validate(attribute, MNL_TYPE_U32) == 0) {
            *static_cast<unsigned*>(data) = mnl_attr_get_u32(attribute);
          }
          return MNL_CB_OK;
        },
        &oif);
  });
  if (!status) return tl::unexpected(status.error());
  if (oif == 0) return Refused(ENODEV, "the kernel's route has no output interface");
  return oif;
}

Result<void, NetlinkError> Rtnetlink::Transact(
    void* request, const std::function<void(const nlmsghdr*)>& on_answer) {
  auto* header = static_cast<nlmsghdr*>(request);
  const unsigned sequence = sequence_++;
  header->nlmsg_seq = sequence;
  if (mnl_socket_sendto(socket_, header, header->nlmsg_len) < 0) {
    return Refused(errno, "sending the netlink request failed");
  }
  alignas(nlmsghdr) char reply[kBufferBytes];
  for (;;) {
    const ssize_t n = mnl_socket_recvfrom(socket_, reply, sizeof reply);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Refused(errno, "reading the netlink reply failed");
    }
    int left = static_cast<int>(n);
    for (auto* message = reinterpret_cast<const nlmsghdr*>(reply);
         mnl_nlmsg_ok(message, left); message = mnl_nlmsg_next(message, &left)) {
      if (!mnl_nlmsg_seq_ok(message, sequence) ||
          !mnl_nlmsg_portid_ok(message, port_id_)) {
        continue;  // not the answer to this request
      }
      if (message->nlmsg_type != NLMSG_ERROR) {
        if (on_answer) on_answer(message);
        continue;
      }
      if (mnl_nlmsg_get_payload_len(message) < sizeof(nlmsgerr)) {
        return Refused(EBADMSG, "the kernel's netlink ACK was truncated");
      }
      const auto* error = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(message));
      if (error->error == 0) return {};
      return Refused(-error->error, ExtackMessage(message, error));
    }
  }
}

}  // namespace zcal::probes

#include "zcal/probes/send/connect.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>

#include "zcal/common/errno_text.h"

namespace zcal::probes {

namespace {

// A connection the network or the kernel's TCP timer gave up on, against
// one nobody answered.
PeerFailure ConnectFailureOf(int err) {
  return err == ETIMEDOUT ? PeerFailure::kTimeout : PeerFailure::kUnreachable;
}

}  // namespace

Result<common::UniqueFd, PeerError> ConnectTcp(const common::HostPort& endpoint, int timeout_ms) {
  const common::SocketAddress address = common::ToSocketAddress(endpoint);
  const std::string where = common::ToString(endpoint);
  auto local = [&](const std::string& what, int err) {
    return FailPeer(PeerFailure::kLocalError, Errc::kFailed,
                    "connect " + where + ": " + what + " " + common::ErrnoText(err));
  };
  auto fail = [&](PeerFailure kind, const std::string& what, int err) {
    return FailPeer(kind, Errc::kFailed,
                    "connect " + where + ": " + what + " " + common::ErrnoText(err) +
                        "; is a zcal sink listening there?");
  };
  common::UniqueFd fd(::socket(address.storage.ss_family,
                               SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return local("socket(2) failed with", errno);
  const int one = 1;
  // Small messages must not wait for ACKs of the previous ones (Nagle).
  if (::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    return local("setsockopt(TCP_NODELAY) failed with", errno);
  }
  if (::connect(fd.get(), address.get(), address.length) != 0) {
    if (errno != EINPROGRESS) return fail(ConnectFailureOf(errno), "failed with", errno);
    pollfd p{fd.get(), POLLOUT, 0};
    const int ready = ::poll(&p, 1, timeout_ms);
    if (ready == 0) {
      return fail(PeerFailure::kTimeout,
                  "timed out after " + std::to_string(timeout_ms) + " ms,", ETIMEDOUT);
    }
    if (ready < 0) return local("poll failed with", errno);
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return fail(ConnectFailureOf(err), "failed with", err);
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return local("fcntl failed with", errno);
  }
  return fd;
}

}  // namespace zcal::probes

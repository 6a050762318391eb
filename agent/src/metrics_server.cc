#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <prometheus/exposer.h>

#include "zcal/common/address.h"
#include "zcal/common/errno_text.h"
#include "zcal/common/unique_fd.h"
#include "zcal/agent/metrics.h"

namespace zcal::agent {
namespace {

// civetweb reports a failed bind only as "null context"; binding once
// ourselves first yields the errno a user can act on.
Result<void> ProbeBind(const common::HostPort& address, const std::string& text) {
  const common::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) {
    return Fail(Errc::kIo, "metrics: cannot create a socket: " +
                               common::ErrnoText(errno));
  }
  const int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const common::SocketAddress sin = common::ToSocketAddress(address);
  const int rc = bind(fd.get(), sin.get(), sin.length);
  const int error = errno;
  if (rc == 0) return {};
  const Errc code = error == EADDRINUSE ? Errc::kBusy
                    : error == EACCES   ? Errc::kPermission
                                        : Errc::kIo;
  return Fail(code, "metrics.listen " + text + ": cannot listen: " +
                        common::ErrnoText(error) +
                        "; choose a free port on a local address, or set "
                        "metrics.listen: \"\" to disable metrics");
}

}  // namespace

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen,
    const std::shared_ptr<prometheus::Collectable>& collectable) {
  const Result<common::HostPort> address =
      common::ParseHostPort(listen, common::PortRule::kZeroAllowed);
  if (!address || address->address.IsIpv6()) {
    return Fail(Errc::kInvalidArgument,
                "metrics.listen '" + listen +
                    "' is not IPv4:PORT, e.g. 127.0.0.1:9464");
  }
  if (auto probe = ProbeBind(*address, listen); !probe) {
    return tl::unexpected(probe.error());
  }
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->listen_ = listen;
  server->host_ = common::ToString(address->address);
  try {
    // Two threads: one scrape never waits behind another slow one.
    server->exposer_ = std::make_unique<prometheus::Exposer>(listen, 2);
  } catch (const std::exception& e) {
    return Fail(Errc::kIo, "metrics.listen " + listen +
                               ": cannot start the HTTP server (" + e.what() +
                               "); choose another address or port");
  }
  server->exposer_->RegisterCollectable(collectable);
  const std::vector<int> ports = server->exposer_->GetListeningPorts();
  server->port_ = ports.empty() ? address->port : ports.front();
  return server;
}

MetricsServer::~MetricsServer() = default;

std::string MetricsServer::Url() const {
  return "http://" + host_ + ":" + std::to_string(port_) + "/metrics";
}

}  // namespace zcal::agent

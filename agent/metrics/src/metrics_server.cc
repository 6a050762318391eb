#include "zcal/agent/metrics/metrics_server.h"

#include "zcal/agent/metrics/metrics.h"
#include "zcal/common/address.h"

namespace zcal::agent {

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, std::shared_ptr<Metrics> metrics,
    MetricsServerOptions options) {
  const Result<common::HostPort> address =
      common::ParseHostPort(listen, common::PortRule::kZeroAllowed);
  if (!address) {
    return Fail(Errc::kInvalidArgument,
                options.setting + " '" + listen +
                    "' is not ADDRESS:PORT, e.g. 127.0.0.1:9464 or "
                    "[::1]:9464");
  }
  std::vector<HttpRoute> routes = std::move(options.routes);
  routes.push_back({"/metrics", [metrics](const HttpRequest&) {
                      return HttpResponse{
                          200, "text/plain; version=0.0.4; charset=utf-8",
                          metrics->Text()};
                    }});
  HttpObserver observer;
  observer.dropped = [metrics](HttpDrop drop) { metrics->RecordHttpDrop(drop); };
  observer.answered = [metrics](int status) {
    metrics->RecordHttpResponse(status);
  };
  observer.open_connections_changed = [metrics](int change) {
    metrics->AddHttpOpenConnections(change);
  };
  auto server = HttpServer::Start(*address, std::move(routes), options.limits,
                                  std::move(observer));
  if (!server) {
    if (server.error().code == Errc::kInvalidArgument) {
      return tl::unexpected(server.error());
    }
    return Fail(server.error().code,
                options.setting + " " + server.error().message +
                    "; choose a free port on a local address, or " +
                    options.disable_hint);
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(*server)));
}

MetricsServer::MetricsServer(std::unique_ptr<HttpServer> server)
    : server_(std::move(server)) {}

MetricsServer::~MetricsServer() = default;

void MetricsServer::Stop() { server_->Stop(); }

int MetricsServer::port() const { return server_->local().port; }

std::string MetricsServer::Url() const {
  return "http://" + common::ToString(server_->local()) + "/metrics";
}

}  // namespace zcal::agent

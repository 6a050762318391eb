// The agent's HTTP endpoint: GET /metrics renders a Metrics, and further
// routes (the status page and its JSON API) may be served beside it
// on the same listener. What it refuses and times out is counted in that
// Metrics (zcal_http_*).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "zcal/agent/metrics/http_server.h"
#include "zcal/common/result.h"

namespace zcal::agent {

class Metrics;

struct MetricsServerOptions {
  HttpLimits limits;
  /// Paths served beside /metrics, e.g. "/" and "/api/v1/thresholds".
  std::vector<HttpRoute> routes;
  /// How the listen address was given, for error messages: the
  /// configuration key, or a command-line option ("--metrics-listen").
  std::string setting = "metrics.listen";
  /// What turns the listener off, as the error's advice.
  std::string disable_hint = "set metrics.listen: \"\" to disable metrics";
};

class MetricsServer {
 public:
  /// Listens on "IPV4:PORT" or "[IPV6]:PORT" (port 0 picks a free one).
  /// kInvalidArgument for an address that does not parse or options that
  /// do not fit (a route for /metrics, limits out of range); kBusy,
  /// kPermission or kIo when binding fails, with the errno text and what
  /// to do.
  static Result<std::unique_ptr<MetricsServer>> Start(
      const std::string& listen, std::shared_ptr<Metrics> metrics,
      MetricsServerOptions options = {});

  /// Stops (see Stop).
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// Closes the listener and every connection and joins the server's
  /// thread: returns within milliseconds (a running handler finishes
  /// first). Idempotent; the port is free again when it returns.
  void Stop();

  /// The port actually bound (differs from the configured one for 0).
  int port() const;
  /// "http://127.0.0.1:PORT/metrics" or "http://[::1]:PORT/metrics".
  std::string Url() const;

 private:
  explicit MetricsServer(std::unique_ptr<HttpServer> server);
  std::unique_ptr<HttpServer> server_;
};

}  // namespace zcal::agent

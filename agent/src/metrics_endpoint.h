// The service's metrics HTTP endpoint: the current MetricsServer, its
// replacement on a reload, and the one place that knows how long a server
// takes to stop.
//
// Destroying a MetricsServer stops civetweb, which waits for its worker
// threads: 30 ms when idle, about 2 s once it has served a scrape (measured
// by tests/agent/metrics_test.cc here). The event loop must not wait for
// that (heartbeats would pause), and neither should a stop. Until
// MetricsServer stops promptly (the metrics rewrite of issue 8, point 4):
// - a replaced server is destroyed on a thread of this object, which its
//   destructor (or the next replacement) joins;
// - at stop the last server is handed to the process exit, which ends its
//   threads with the process (LeaveToExit; LeakSanitizer sees it reachable).
// Both lines go once a server stops within milliseconds.
//
// Thread safety: none; the service's event loop owns it.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "zcal/agent/metrics.h"
#include "zcal/common/result.h"

namespace zcal::agent {

class MetricsEndpoint {
 public:
  explicit MetricsEndpoint(std::shared_ptr<Metrics> metrics);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  /// Binds `listen` ("" = no endpoint: returns nullptr). Errors of
  /// MetricsServer::Start. The running server is not touched.
  Result<std::unique_ptr<MetricsServer>> Bind(const std::string& listen) const;
  /// Serves from `next` (nullptr: no endpoint) and retires the running
  /// server off the calling thread. Logs the new URL.
  void Replace(std::unique_ptr<MetricsServer> next);
  /// At stop: the running server is left to the process exit (see above).
  void LeaveToExit();

  /// "serving metrics at URL", or that metrics are disabled.
  std::string Describe() const;
  /// The running server's port; 0 without one.
  int port() const;

 private:
  std::shared_ptr<Metrics> metrics_;
  std::unique_ptr<MetricsServer> server_;
  std::jthread retiring_;
};

}  // namespace zcal::agent

// The agent's pages beside /metrics on its HTTP listener: "/" is the live
// report (the page of `zcal report`, from the agent's current state and its
// published table) and "/api/v1/thresholds" the JSON that `zcal show --json`
// prints, read from the segment the agent publishes (docs/report.md).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "zcal/agent/metrics/http_server.h"
#include "zcal/agent/report/report.h"
#include "zcal/agent/domain/agent_state.h"
#include "zcal/agent/domain/app_traffic.h"
#include "zcal/common/clock.h"

namespace zcal::agent {

/// Thread safety: Update from any one thread (the service's loop); the
/// handlers of Routes() run on the HTTP server's thread, also while Update
/// runs. A handler renders from memory and reads the segment (no syscall
/// that blocks), so it never holds the server up for long.
class StatusPage : public std::enable_shared_from_this<StatusPage> {
 public:
  /// The routes take the time of their ages from `clock`'s Wall().
  explicit StatusPage(std::shared_ptr<const common::Clock> clock = common::SystemClock())
      : clock_(std::move(clock)) {}
  StatusPage(const StatusPage&) = delete;
  StatusPage& operator=(const StatusPage&) = delete;

  /// What the pages show from now on: the agent's state, whether it is
  /// stale, and the segment it publishes in ("/zcal").
  void Update(const AgentState& state, bool stale, const std::string& segment);

  /// What the applications' reports said at the agent's last read of them
  /// (agent/apps): the page shows it from now on, beside the state of the
  /// last Update. Until the first call the page says no application
  /// reports.
  void UpdateApps(const AppsSnapshot& apps);

  /// The routes "/" (text/html, with the page's Content-Security-Policy
  /// as a header too) and "/api/v1/thresholds" (application/json; 503 with
  /// {"error": ...} while the segment cannot be read). They keep this page
  /// alive as long as a server holds them; the page must be owned by a
  /// std::shared_ptr.
  std::vector<HttpRoute> Routes();

  /// The bodies of those routes; `now_ns` is CLOCK_REALTIME.
  HttpResponse Page(std::uint64_t now_ns) const;
  HttpResponse Thresholds(std::uint64_t now_ns) const;

 private:
  struct Shown {
    ReportModel model;
    std::string segment;
  };
  std::shared_ptr<const Shown> Current() const;

  std::shared_ptr<const common::Clock> clock_;
  mutable std::mutex mutex_;
  std::shared_ptr<const Shown> shown_;  // null until the first Update
  std::shared_ptr<const AppsSnapshot> apps_ = std::make_shared<const AppsSnapshot>();
};

}  // namespace zcal::agent

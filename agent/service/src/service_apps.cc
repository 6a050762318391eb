// The applications' report objects, read at each heartbeat: the metrics
// and the live page get the snapshot, the history keeps the window
// (service_impl.h), and the publisher learns from that window.
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "service_impl.h"

namespace zcal::agent {

void Service::Impl::ReadApps() {
  // Each read (a reload may turn reading off or move the segment):
  // processes leave their closed objects only to an agent that takes them.
  publisher_->SetTakesReports(config_.apps.enabled && may_remove_reports_);
  AppsRead read = apps_reader_.Read(clock_->Wall());
  for (const std::string& line : read.messages) spdlog::warn("{}", line);
  metrics_->SetApps(read.snapshot, apps_reader_.totals());
  status_->UpdateApps(read.snapshot);
  apps_history_.Add(std::move(read.snapshot));
  // What the agent learns (publisher.h): contradictions flag entries and
  // ask for a calibration; the mixes wait for the next round
  // (StartCalibration). Posted, so that a contradiction found at start
  // reaches the scheduler after the start itself.
  const AppReportsOutcome learned =
      publisher_->ApplyAppReports(apps_history_.Recent(), config_.apps, clock_->Wall());
  if (learned.recalibrate) {
    asio::post(io_, [this] { Handle(ContradictionEvent{}); });
  }
  if (hooks_.apps_read) hooks_.apps_read(apps_history_);
}

void Service::Impl::ReconfigureApps() {
  apps_reader_.SetSettings(config_.apps);
  if (apps_history_.window() != config_.apps.window) {
    apps_history_ = AppHistory(config_.apps.window);
  }
}

}  // namespace zcal::agent

// The service's private class, shared by service.cc (start, rounds,
// signals, stop) and service_reload.cc (a reload and what it swaps). Only
// those two files include it: nothing outside the service sees its members.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "served_sink.h"
#include "zcal/agent/apps/apps_reader.h"
#include "zcal/agent/domain/app_traffic.h"
#include "zcal/agent/metrics/asio.h"
#include "zcal/agent/metrics/metrics_server.h"
#include "zcal/agent/metrics/status_page.h"
#include "zcal/agent/service/publisher.h"
#include "zcal/agent/service/scheduler.h"
#include "zcal/agent/service/service.h"
#include "zcal/common/clock.h"

namespace zcal::agent {

namespace asio = boost::asio;
using ErrorCode = boost::system::error_code;

class Service::Impl {
 public:
  Impl(Config config, std::string config_path, ServiceHooks hooks)
      : config_(std::move(config)),
        config_path_(std::move(config_path)),
        hooks_(std::move(hooks)),
        signals_(io_),
        calibration_timer_(io_),
        heartbeat_timer_(io_),
        poll_timer_(io_),
        guard_timer_(io_),
        clock_(hooks_.clock ? hooks_.clock : common::SystemClock()),
        metrics_(hooks_.metrics ? hooks_.metrics
                                : std::make_shared<Metrics>(ZCAL_VERSION,
                                                            MetricsRole::kAgent, clock_)),
        status_(std::make_shared<StatusPage>(clock_)),
        sink_(metrics_),
        scheduler_(ScheduleOptions::From(config_), DefaultRandomSource(),
                   [this] { return sink_.TryBeginLocalProbe(); }),
        apps_reader_(config_.apps),
        apps_history_(config_.apps.window),
        runner_(hooks_.calibrate ? hooks_.calibrate : probes::RunCalibration,
                [this] { asio::post(io_, [this] { OnRoundDone(); }); }) {
    if (!hooks_.collect_host) hooks_.collect_host = CollectHostSnapshot;
  }

  int Run() {
    if (!Start()) return 1;
    io_.run();
    return 0;
  }
  void Stop() {
    asio::post(io_, [this] { RequestStop("stop requested"); });
  }
  void Reload() {
    asio::post(io_, [this] { DoReload(); });
  }
  void CalibrateNow() {
    asio::post(io_, [this] { Handle(CalibrateNowEvent{}); });
  }

 private:
  bool Start();
  bool Stopping() const {
    return scheduler_.phase() == Phase::kStopping ||
           scheduler_.phase() == Phase::kStopped;
  }
  void Handle(const SchedulerEvent& event) {
    Apply(scheduler_.On(event, clock_->Steady()));
  }
  void Apply(const Decision& d);
  void Log(const Decision& d) const;
  void ArmCalibrationTimer(const TimerRequest& timer);
  void StartCalibration(CalibrationTrigger trigger);
  void OnRoundDone();
  void ArmSignals();
  void OnSignal(const ErrorCode& ec, int signal);
  void ArmHeartbeat();
  void ArmFingerprintPoll();
  void PollHost();
  // Takes `snapshot` as the host's facts (publisher and metrics), with the
  // NICs that the kept peers are reached through described too.
  void AdoptHost(HostInfo snapshot);
  // Describes the kept peers' NICs anew after they may have changed (a
  // round, the saved state loaded); the metrics get them when they did.
  void DescribePeerNics();
  std::set<std::string> PeerNicNames() const;
  // Reads the report objects (service_apps.cc): at start and each heartbeat.
  void ReadApps();
  // Hands a reloaded `apps:` to the reader (and a new window to the history).
  void ReconfigureApps();
  void DoReload();
  void ApplyReload(Config next);
  void RejectReload(const std::string& why);
  Result<std::unique_ptr<MetricsServer>> BindMetrics(
      const std::string& listen) const;
  void ServeMetrics(std::unique_ptr<MetricsServer> server);
  void ShowStatus() {
    status_->Update(publisher_->state(), publisher_->stale(),
                    publisher_->segment_name());
  }
  void RequestStop(const std::string& why);
  void FinishStop();

  Config config_;
  std::string config_path_;
  ServiceHooks hooks_;
  asio::io_context io_;
  asio::signal_set signals_;
  asio::steady_timer calibration_timer_;
  asio::steady_timer heartbeat_timer_;
  asio::steady_timer poll_timer_;
  asio::steady_timer guard_timer_;
  // Timers run on asio's steady clock; what the service stamps or
  // compares with a time point reads this one.
  std::shared_ptr<const common::Clock> clock_;
  std::shared_ptr<Metrics> metrics_;
  std::unique_ptr<MetricsServer> metrics_server_;  // null: metrics.listen ""
  // "/" and "/api/v1/thresholds" on the metrics listener.
  std::shared_ptr<StatusPage> status_;
  std::unique_ptr<Publisher> publisher_;
  ServedSink sink_;  // the peer sink of `sink:`, if any
  Scheduler scheduler_;
  HostInfo host_;        // as last read
  HostInfo round_host_;  // as when the running round started
  // The last peer discovery, reused by rounds within peers.refresh.
  std::optional<Discovery> discovery_;
  std::chrono::steady_clock::time_point discovered_at_{};
  // The applications' report objects and the reads of the last
  // apps.window (what point 3's rules read: hooks_.apps_read gets it after
  // each read).
  AppsReader apps_reader_;
  AppHistory apps_history_;
  // CAP_FOWNER (or root's): the agent can remove the closed objects of
  // processes of other users, which then leave them for it. Read once:
  // a process's capabilities do not grow.
  bool may_remove_reports_ = MayRemoveAnyUsersObjects();
  // After io_: its destructor detaches the notification that posts to io_
  // and joins the worker before io_ goes.
  CalibrationRunner runner_;
};

}  // namespace zcal::agent

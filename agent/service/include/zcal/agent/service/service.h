// The long-running agent (`zcal agent`): schedules calibrations, publishes
// their results to the shared-memory segment and to Prometheus, persists
// them, and reacts to signals.
//
// The service only wires its parts on one Boost.Asio event loop: the
// Scheduler (scheduler.h) decides, the CalibrationRunner
// (calibration_runner.h) probes on a worker thread of its own and hands the
// outcome back to the loop, the Publisher (publisher.h) owns the segment,
// the state file and the published metrics, and DiffConfig (reload.h) says
// what a reload changes. Heartbeats, fingerprint polls and metric scrapes
// (on the HTTP server's threads) go on while a calibration probes.
//
// Signals: SIGHUP reloads the configuration file, SIGUSR1 calibrates now,
// SIGTERM and SIGINT stop (probing ends within about a second, the state
// is saved, the segment keeps its last heartbeat).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "zcal/agent/config/config.h"
#include "zcal/agent/domain/app_traffic.h"
#include "zcal/agent/metrics/metrics.h"
#include "zcal/agent/service/calibration_runner.h"
#include "zcal/agent/service/host_snapshot.h"
#include "zcal/common/clock.h"
#include "zcal/common/result.h"
#include "zcal/probes/calibration/calibration.h"

namespace zcal::agent {

/// The pieces a test may replace.
struct ServiceHooks {
  using CalibrateFn = agent::CalibrateFn;
  CalibrateFn calibrate;  ///< default: probes::RunCalibration
  std::function<HostInfo(const Config&)> collect_host;  ///< default: sysfs
  /// Directory of the single-instance lock files (default /dev/shm).
  std::string lock_dir = "/dev/shm";
  /// The metrics the service updates; default: its own. Tests pass one to
  /// read it without HTTP.
  std::shared_ptr<Metrics> metrics;
  /// The clocks of every stamp and interval (common::Clock); default: the
  /// system's. Tests pass a common::FakeClock to step the wall clock.
  std::shared_ptr<const common::Clock> clock;
  /// Called on the service's thread after each read of the applications'
  /// report objects (at start and each heartbeat) with the reads of the
  /// last apps.window; none by default.
  std::function<void(const AppHistory&)> apps_read;
};

class Service {
 public:
  /// `config_path` is the file SIGHUP re-reads; empty for the embedded
  /// default (a reload then keeps the configuration).
  Service(Config config, std::string config_path, ServiceHooks hooks = {});
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  /// Runs until stopped by SIGTERM/SIGINT or Stop(). Returns the exit
  /// status: 0 after a clean stop, 1 when the agent could not start (lock
  /// held, segment or metrics address unusable), with the reason logged.
  /// A stop whose calibration has not ended within kStopGuard (scheduler.h)
  /// still saves the state and returns; destroying the Service then joins
  /// the worker, whose probes return within their own wait slices.
  int Run();

  /// Thread-safe equivalents of the signals.
  void Stop();
  void Reload();
  void CalibrateNow();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zcal::agent

// Wiring only: events from signals, timers and the calibration runner go to
// the scheduler, and its decisions to timers, the runner and the publisher.
#include "zcal/agent/service/service.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include <spdlog/spdlog.h>

#include "zcal/agent/metrics/asio.h"
#include "served_sink.h"
#include "zcal/agent/metrics/metrics_server.h"
#include "zcal/agent/service/publisher.h"
#include "zcal/agent/config/reload.h"
#include "zcal/agent/service/scheduler.h"
#include "zcal/agent/metrics/status_page.h"
#include "zcal/common/clock.h"
#include "zcal/common/text.h"
#include "zcal/common/units.h"

namespace zcal::agent {
namespace {

namespace asio = boost::asio;
using std::chrono::steady_clock;
using ErrorCode = boost::system::error_code;

// Logs a multi-line error message line by line, so that each problem of a
// configuration gets its own log record.
void LogLines(spdlog::level::level_enum level, const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) spdlog::log(level, "{}", line);
}

double Seconds(milliseconds delay) {
  return std::chrono::duration<double>(delay).count();
}

}  // namespace

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
                                : std::make_shared<Metrics>(ZCAL_VERSION)),
        status_(std::make_shared<StatusPage>(clock_)),
        sink_(metrics_),
        scheduler_(ScheduleOptions::From(config_), DefaultRandomSource(),
                   [this] { return sink_.TryBeginLocalProbe(); }),
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
  void AdoptHost(HostSnapshot snapshot);
  // Describes the kept peers' NICs anew after they may have changed (a
  // round, the saved state loaded); the metrics get them when they did.
  void DescribePeerNics();
  std::set<std::string> PeerNicNames() const;
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
  HostSnapshot host_;        // as last read
  HostSnapshot round_host_;  // as when the running round started
  // The last peer discovery, reused by rounds within peers.refresh.
  std::optional<Discovery> discovery_;
  steady_clock::time_point discovered_at_{};
  // After io_: its destructor detaches the notification that posts to io_
  // and joins the worker before io_ goes.
  CalibrationRunner runner_;
};

bool Service::Impl::Start() {
  spdlog::set_level(spdlog::level::from_str(config_.log_level));
  spdlog::info("zcal agent {} starting (pid {}), configuration: {}",
               ZCAL_VERSION, getpid(), config_.source);
  // First: a SIGHUP or SIGTERM that arrives while the start reads the host
  // (slow on a loaded host) waits for the event loop instead of killing
  // the process with the default action.
  ArmSignals();
  // The listeners before the segment: creating the segment replaces the
  // one a previous agent left, so a start that fails on a taken port must
  // fail before it, leaving readers that table.
  auto server = BindMetrics(config_.metrics.listen);
  if (!server) {
    spdlog::error("{}", server.error().message);
    return false;
  }
  if (auto sink = sink_.Start(config_.sink, scheduler_.Probing()); !sink) {
    spdlog::error("{}", sink.error().message);
    return false;
  }
  auto publisher = Publisher::Open(config_, hooks_.lock_dir, metrics_, clock_);
  if (!publisher) {
    spdlog::error("{}", publisher.error().message);
    return false;
  }
  publisher_ = std::move(*publisher);
  AdoptHost(hooks_.collect_host(config_));
  publisher_->LoadSaved();
  DescribePeerNics();
  publisher_->Publish();
  ShowStatus();
  spdlog::info("publishing thresholds in shared-memory segment {} "
               "(/dev/shm{}); `zcal show --segment {}` prints them",
               config_.segment.name, config_.segment.name,
               config_.segment.name);
  ServeMetrics(std::move(*server));
  ArmHeartbeat();
  ArmFingerprintPoll();
  const AgentState& saved = publisher_->state();
  const bool host_changed =
      !saved.empty() && saved.fingerprint != host_.fingerprint;
  if (host_changed && !config_.schedule.at_startup) {
    spdlog::info("host facts changed since the saved calibration "
                 "(fingerprint {} -> {})",
                 common::Hex64(saved.fingerprint),
                 common::Hex64(host_.fingerprint));
  }
  asio::post(io_, [this, host_changed] { Handle(StartedEvent{host_changed}); });
  return true;
}

void Service::Impl::Log(const Decision& d) const {
  const std::string_view about = CalibrationTriggerName(d.about);
  switch (d.note) {
    case Note::kNone:
      break;
    case Note::kIgnoredWhileCalibrating:
      spdlog::info("a calibration is already running; request ignored");
      break;
    case Note::kRerunQueued:
      spdlog::info("a calibration is running; another follows it because "
                   "the host facts changed");
      break;
    case Note::kBudgetWait:
      spdlog::warn("probe budget: {:.1f} s of {:.1f} s used in the last "
                   "hour; the {} calibration waits {}",
                   d.budget_used_seconds, d.budget_limit_seconds, about,
                   common::FormatDuration(d.arm ? d.arm->delay : kMinDelay));
      break;
    case Note::kSinkBusy:
      spdlog::info("the sink is serving a peer's probe; the {} calibration "
                   "waits {}",
                   about,
                   common::FormatDuration(d.arm ? d.arm->delay : kMinDelay));
      break;
    case Note::kIgnoredWhileStopping:
      spdlog::info("stopping; the {} request is ignored", about);
      break;
    case Note::kAlreadyStopping:
      break;  // RequestStop says why
    case Note::kStaleTimer:
      spdlog::debug("a replaced calibration timer fired; ignored");
      break;
    case Note::kStopGuardExpired:
      spdlog::error("the calibration did not stop within {:.0f} s; stopping "
                    "without its results (the process exits once its probe "
                    "returns)",
                    Seconds(kStopGuard));
      break;
  }
}

void Service::Impl::Apply(const Decision& d) {
  Log(d);
  if (d.disarm) {
    calibration_timer_.cancel();
    metrics_->SetNextCalibration(0);
  }
  if (d.arm) ArmCalibrationTimer(*d.arm);
  if (d.cancel_calibration) runner_.RequestStop();
  if (d.stop_guard) {
    guard_timer_.expires_after(*d.stop_guard);
    guard_timer_.async_wait([this](const ErrorCode& ec) {
      if (!ec) Handle(StopGuardExpiredEvent{});
    });
  }
  if (d.start) StartCalibration(*d.start);
  if (d.finish_stop) FinishStop();
}

void Service::Impl::ArmCalibrationTimer(const TimerRequest& timer) {
  calibration_timer_.expires_after(timer.delay);
  calibration_timer_.async_wait([this, id = timer.id](const ErrorCode& ec) {
    if (!ec) Handle(TimerFiredEvent{id});
  });
  metrics_->SetNextCalibration(clock_->WallSeconds() +
                               Seconds(timer.delay));
  spdlog::debug("next calibration ({}, {}) in {}",
                CalibrationTriggerName(timer.trigger),
                TimerReasonName(timer.reason),
                common::FormatDuration(timer.delay));
}

void Service::Impl::StartCalibration(CalibrationTrigger trigger) {
  AdoptHost(hooks_.collect_host(config_));
  round_host_ = host_;
  metrics_->RecordTrigger(trigger);
  metrics_->SetCalibrationRunning(true);
  RoundPlan plan = PlanAgentRound(
      config_, [this] { return publisher_->NextPeerRound(); }, discovery_, discovered_at_);
  spdlog::info("calibration started ({}): {} path(s){}, budget {} s",
               CalibrationTriggerName(trigger), plan.jobs.size(),
               plan.peers ? " and " + std::to_string(config_.peers.per_calibration) + " peer(s)"
                          : std::string(),
               config_.budget.seconds_per_calibration);
  // The scheduler starts only from idle, which it enters when the previous
  // outcome was taken (OnRoundDone), so the runner is free here. Should
  // that ever break, the round counts as failed and the scheduler retries,
  // instead of waiting as "calibrating" for a round that never runs.
  if (!runner_.Start(std::move(plan))) {
    spdlog::error("calibration ({}) could not start: the previous round's outcome "
                  "was not taken; counted as failed and retried",
                  CalibrationTriggerName(trigger));
    metrics_->SetCalibrationRunning(false);
    metrics_->RecordCalibration(CalibrationResult::kFailed, 0, clock_->Wall());
    asio::post(io_, [this] {
      const auto now = clock_->Steady();
      Apply(scheduler_.On(CalibrationFinishedEvent{CalibrationResult::kFailed, 0}, now));
    });
  }
}

void Service::Impl::OnRoundDone() {
  std::optional<RoundOutcome> outcome = runner_.TakeOutcome();
  if (!outcome) return;
  sink_.EndLocalProbe();
  guard_timer_.cancel();
  if (outcome->discovery) {
    discovery_ = outcome->discovery;
    discovered_at_ = outcome->discovered_at;
  }
  metrics_->SetCalibrationRunning(false);
  const std::uint64_t now_ns = clock_->Wall();
  CalibrationResult result = CalibrationResult::kFailed;
  if (outcome->cancelled) {
    result = CalibrationResult::kCancelled;
  } else if (publisher_->Accept(*outcome, round_host_, now_ns)) {
    result = CalibrationResult::kSuccess;
    ShowStatus();
  }
  DescribePeerNics();
  metrics_->RecordCalibration(result, outcome->duration_seconds, now_ns);
  const auto now = clock_->Steady();
  const Decision d = scheduler_.On(
      CalibrationFinishedEvent{result, outcome->duration_seconds}, now);
  metrics_->SetBudgetUsed(scheduler_.BudgetUsedSeconds(now));
  switch (result) {
    case CalibrationResult::kSuccess:
      spdlog::info("calibration finished in {:.1f} s",
                   outcome->duration_seconds);
      break;
    case CalibrationResult::kCancelled:
      spdlog::info("calibration cancelled after {:.1f} s; its results are "
                   "discarded",
                   outcome->duration_seconds);
      break;
    case CalibrationResult::kFailed:
      spdlog::warn(
          "calibration failed; still serving what was published before{}",
          d.arm && d.arm->reason == TimerReason::kRetry
              ? "; retrying in " + common::FormatDuration(d.arm->delay)
              : std::string());
      break;
  }
  Apply(d);
}

void Service::Impl::ArmSignals() {
  for (const int signal : {SIGHUP, SIGUSR1, SIGTERM, SIGINT}) {
    signals_.add(signal);
  }
  signals_.async_wait(
      [this](const ErrorCode& ec, int signal) { OnSignal(ec, signal); });
}

void Service::Impl::OnSignal(const ErrorCode& ec, int signal) {
  if (ec) return;
  switch (signal) {
    case SIGHUP:
      spdlog::info("SIGHUP: reloading the configuration");
      DoReload();
      break;
    case SIGUSR1:
      spdlog::info("SIGUSR1: calibration requested");
      Handle(CalibrateNowEvent{});
      break;
    default:
      RequestStop(signal == SIGTERM ? "SIGTERM" : "SIGINT");
      break;
  }
  signals_.async_wait(
      [this](const ErrorCode& e, int s) { OnSignal(e, s); });
}

void Service::Impl::ArmHeartbeat() {
  heartbeat_timer_.expires_after(config_.segment.heartbeat);
  heartbeat_timer_.async_wait([this](const ErrorCode& ec) {
    if (ec) return;
    publisher_->Heartbeat();
    ArmHeartbeat();
  });
}

void Service::Impl::ArmFingerprintPoll() {
  poll_timer_.cancel();
  if (config_.schedule.fingerprint_poll.count() == 0) return;
  poll_timer_.expires_after(config_.schedule.fingerprint_poll);
  poll_timer_.async_wait([this](const ErrorCode& ec) {
    if (ec || Stopping()) return;
    PollHost();
    ArmFingerprintPoll();
  });
}

void Service::Impl::PollHost() {
  HostSnapshot now = hooks_.collect_host(config_);
  const bool changed = now.fingerprint != host_.fingerprint;
  if (changed) {
    spdlog::info("host facts changed (fingerprint {} -> {}); calibrating "
                 "early",
                 common::Hex64(host_.fingerprint),
                 common::Hex64(now.fingerprint));
    metrics_->RecordFingerprintChange();
  } else {
    spdlog::debug("host facts unchanged (fingerprint {})",
                  common::Hex64(now.fingerprint));
  }
  AdoptHost(std::move(now));
  if (changed) Handle(FingerprintChangedEvent{});
}

void Service::Impl::AdoptHost(HostSnapshot snapshot) {
  host_ = std::move(snapshot);
  DescribePeerInterfaces(host_, config_, PeerNicNames());
  publisher_->SetHost(host_);
  metrics_->SetHost(host_.info);
}

std::set<std::string> Service::Impl::PeerNicNames() const {
  std::set<std::string> names;
  for (const auto& [path, peer] : publisher_->state().peers) names.insert(peer.interface);
  return names;
}

void Service::Impl::DescribePeerNics() {
  if (DescribePeerInterfaces(host_, config_, PeerNicNames())) metrics_->SetHost(host_.info);
}

void Service::Impl::DoReload() {
  if (Stopping()) return;
  if (config_path_.empty()) {
    spdlog::info("running with the embedded default configuration; there is "
                 "no file to reload (start with --config FILE)");
    metrics_->RecordReload(true);
    return;
  }
  Result<Config> loaded = LoadConfigFile(config_path_);
  if (!loaded) {
    LogLines(spdlog::level::err, loaded.error().message);
    RejectReload("");
    return;
  }
  ApplyReload(std::move(*loaded));
}

void Service::Impl::RejectReload(const std::string& why) {
  if (!why.empty()) spdlog::error("{}", why);
  spdlog::warn("configuration reload rejected; the running configuration "
               "stays in effect");
  metrics_->RecordReload(false);
}

void Service::Impl::ApplyReload(Config next) {
  const ConfigChange change = DiffConfig(config_, next);
  // First what can fail, touching nothing that runs.
  std::optional<PreparedSegment> segment;
  if (change.segment) {
    Result<PreparedSegment> prepared = publisher_->PrepareSegment(next.segment);
    if (!prepared) return RejectReload(prepared.error().message);
    segment = std::move(*prepared);
  }
  std::optional<std::unique_ptr<MetricsServer>> server;
  if (change.metrics_listen) {
    auto bound = BindMetrics(next.metrics.listen);
    if (!bound) return RejectReload(bound.error().message);
    server = std::move(*bound);
  }
  // The sink last: replacing it on the same address means closing the old
  // one first, which only a reload that goes through may do.
  if (Result<bool> replaced = sink_.Replace(config_.sink, next.sink, scheduler_.Probing());
      !replaced) {
    return RejectReload(replaced.error().message);
  }
  // Then switch over.
  if (segment) publisher_->SwitchSegment(std::move(*segment));
  if (server) ServeMetrics(std::move(*server));
  // Peers found under other settings are not the peers of these.
  if (next.peers != config_.peers) discovery_.reset();
  config_ = std::move(next);
  if (change.log_level) {
    spdlog::set_level(spdlog::level::from_str(config_.log_level));
  }
  publisher_->Reconfigure(config_);
  ShowStatus();
  if (change.host_root || change.paths_or_methods) AdoptHost(hooks_.collect_host(config_));
  if (change.fingerprint_poll) ArmFingerprintPoll();
  metrics_->RecordReload(true);
  const std::string summary = change.Summary();
  spdlog::info("configuration reloaded from {}{}", config_path_,
               !summary.empty() ? "; changed: " + summary
               : change.Any()   ? std::string()
                                : "; nothing changed");
  if (change.Scheduling()) {
    Handle(ReloadedEvent{ScheduleOptions::From(config_)});
  }
}

Result<std::unique_ptr<MetricsServer>> Service::Impl::BindMetrics(
    const std::string& listen) const {
  if (listen.empty()) return std::unique_ptr<MetricsServer>();
  MetricsServerOptions options;
  options.routes = status_->Routes();
  return MetricsServer::Start(listen, metrics_, std::move(options));
}

void Service::Impl::ServeMetrics(std::unique_ptr<MetricsServer> server) {
  // The server being replaced stops within milliseconds (metrics_server.h).
  metrics_server_ = std::move(server);
  if (metrics_server_) {
    spdlog::info("serving metrics at {}", metrics_server_->Url());
  } else {
    spdlog::info("metrics disabled (metrics.listen is empty)");
  }
}

void Service::Impl::RequestStop(const std::string& why) {
  const Decision d = scheduler_.On(StopRequestedEvent{}, clock_->Steady());
  if (d.note == Note::kAlreadyStopping) {
    spdlog::info("{}: already stopping", why);
    return;
  }
  spdlog::info("{}: stopping", why);
  poll_timer_.cancel();
  Apply(d);
}

void Service::Impl::FinishStop() {
  publisher_->Stop();
  for (asio::steady_timer* timer :
       {&calibration_timer_, &heartbeat_timer_, &poll_timer_, &guard_timer_}) {
    timer->cancel();
  }
  signals_.cancel();
  metrics_server_.reset();
  sink_.Stop();
  spdlog::info("stopped; segment {} keeps its last table and heartbeat",
               publisher_->segment_name());
  io_.stop();
}

Service::Service(Config config, std::string config_path, ServiceHooks hooks)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(config_path),
                                   std::move(hooks))) {}

Service::~Service() = default;

int Service::Run() { return impl_->Run(); }
void Service::Stop() { impl_->Stop(); }
void Service::Reload() { impl_->Reload(); }
void Service::CalibrateNow() { impl_->CalibrateNow(); }

}  // namespace zcal::agent

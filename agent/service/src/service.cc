// Wiring only: events from signals, timers and the calibration runner go to
// the scheduler, and its decisions to timers, the runner and the publisher.
#include "zcal/agent/service/service.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <string>

#include <spdlog/spdlog.h>

#include "service_impl.h"
#include "zcal/common/text.h"
#include "zcal/common/units.h"

namespace zcal::agent {
namespace {

double Seconds(milliseconds delay) {
  return std::chrono::duration<double>(delay).count();
}

}  // namespace

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
  ReadApps();
  spdlog::info("publishing thresholds in shared-memory segment {} "
               "(/dev/shm{}); `zcal show --segment {}` prints them",
               config_.segment.name, config_.segment.name,
               config_.segment.name);
  ServeMetrics(std::move(*server));
  ArmHeartbeat();
  ArmFingerprintPoll();
  const AgentState& saved = publisher_->state();
  const bool host_changed =
      !saved.empty() && saved.fingerprint != host_.facts.fingerprint;
  if (host_changed && !config_.schedule.at_startup) {
    spdlog::info("host facts changed since the saved calibration "
                 "(fingerprint {} -> {})",
                 common::Hex64(saved.fingerprint),
                 common::Hex64(host_.facts.fingerprint));
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
      spdlog::info("a calibration is running; another follows it because {}",
                   d.about == CalibrationTrigger::kContradiction
                       ? "the applications' reports contradict a published entry"
                       : "the host facts changed");
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
  ApplyMixes(plan, config_, publisher_->AppMixes());
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
  const bool inconclusive =
      result == CalibrationResult::kSuccess && publisher_->DiscardInconclusive();
  const Decision d = scheduler_.On(
      CalibrationFinishedEvent{result, outcome->duration_seconds, inconclusive}, now);
  metrics_->SetBudgetUsed(scheduler_.BudgetUsedSeconds(now));
  switch (result) {
    case CalibrationResult::kSuccess:
      spdlog::info("calibration finished in {:.1f} s{}", outcome->duration_seconds,
                   inconclusive && d.arm && d.arm->reason == TimerReason::kRetry
                       ? "; every discard-path result is inconclusive (a noisy moment?): "
                         "retrying in " + common::FormatDuration(d.arm->delay)
                       : std::string());
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
    ReadApps();
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
  HostInfo now = hooks_.collect_host(config_);
  const bool changed = now.facts.fingerprint != host_.facts.fingerprint;
  if (changed) {
    spdlog::info("host facts changed (fingerprint {} -> {}); calibrating "
                 "early",
                 common::Hex64(host_.facts.fingerprint),
                 common::Hex64(now.facts.fingerprint));
    metrics_->RecordFingerprintChange();
  } else {
    spdlog::debug("host facts unchanged (fingerprint {})",
                  common::Hex64(now.facts.fingerprint));
  }
  AdoptHost(std::move(now));
  if (changed) Handle(FingerprintChangedEvent{});
}

void Service::Impl::AdoptHost(HostInfo snapshot) {
  host_ = std::move(snapshot);
  DescribePeerInterfaces(host_, config_, PeerNicNames());
  publisher_->SetHost(host_);
  metrics_->SetHost(host_);
}

std::set<std::string> Service::Impl::PeerNicNames() const {
  std::set<std::string> names;
  for (const auto& [path, peer] : publisher_->state().peers) names.insert(peer.interface);
  return names;
}

void Service::Impl::DescribePeerNics() {
  if (DescribePeerInterfaces(host_, config_, PeerNicNames())) metrics_->SetHost(host_);
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

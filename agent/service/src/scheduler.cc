#include "zcal/agent/service/scheduler.h"

#include <algorithm>
#include <memory>
#include <random>
#include <utility>

namespace zcal::agent {
namespace {

using std::chrono::ceil;
using std::chrono::hours;

template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

ScheduleOptions ScheduleOptions::From(const Config& config) {
  ScheduleOptions o;
  o.at_startup = config.schedule.at_startup;
  o.interval = config.schedule.interval;
  o.jitter = config.schedule.jitter;
  o.retry_after_failure = config.schedule.retry_after_failure;
  o.seconds_per_calibration = config.budget.seconds_per_calibration;
  o.seconds_per_hour = config.budget.seconds_per_hour;
  return o;
}

std::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kIdle:
      return "idle";
    case Phase::kCalibrating:
      return "calibrating";
    case Phase::kStopping:
      return "stopping";
    case Phase::kStopped:
      return "stopped";
  }
  return "?";
}

std::string_view TimerReasonName(TimerReason reason) {
  switch (reason) {
    case TimerReason::kSchedule:
      return "schedule";
    case TimerReason::kRetry:
      return "retry";
    case TimerReason::kBudget:
      return "budget";
    case TimerReason::kSinkBusy:
      return "sink_busy";
  }
  return "?";
}

RandomSource DefaultRandomSource() {
  auto engine = std::make_shared<std::mt19937_64>(std::random_device{}());
  return [engine](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(*engine);
  };
}

Scheduler::Scheduler(ScheduleOptions options, RandomSource random,
                     StartGate gate)
    : options_(options), random_(std::move(random)), gate_(std::move(gate)) {}

double Scheduler::BudgetUsedSeconds(SteadyTime now) const {
  double used = 0;
  for (const Spent& s : spent_) {
    if (s.end + hours(1) > now) used += s.seconds;
  }
  return used;
}

void Scheduler::Forget(SteadyTime now) {
  // An entry leaves the window exactly one hour after it ended, so that a
  // timer armed for that moment finds the budget freed.
  while (!spent_.empty() && spent_.front().end + hours(1) <= now) {
    spent_.pop_front();
  }
}

void Scheduler::Arm(milliseconds delay, CalibrationTrigger trigger,
                    TimerReason reason, Decision& d) {
  armed_ = TimerRequest{next_timer_id_++, std::max(delay, kMinDelay), trigger,
                        reason};
  d.arm = armed_;
}

void Scheduler::ArmRegular(Decision& d) {
  milliseconds delay = options_.interval;
  if (options_.jitter.count() > 0) {
    delay += milliseconds(
        random_(-options_.jitter.count(), options_.jitter.count()));
  }
  Arm(delay, CalibrationTrigger::kSchedule, TimerReason::kSchedule, d);
}

void Scheduler::TryStart(CalibrationTrigger trigger, SteadyTime now,
                         Decision& d) {
  Forget(now);
  const double used = BudgetUsedSeconds(now);
  const double need = options_.seconds_per_calibration;
  const double limit = options_.seconds_per_hour;
  if (used + need > limit) {
    // Wait until enough of the oldest calibrations leave the hour window.
    double freed = 0;
    SteadyTime when = now;
    for (const Spent& s : spent_) {
      freed += s.seconds;
      when = s.end + hours(1);
      if (used - freed + need <= limit) break;
    }
    Arm(ceil<milliseconds>(when - now), trigger, TimerReason::kBudget, d);
    d.note = Note::kBudgetWait;
    d.about = trigger;
    d.budget_used_seconds = used;
    d.budget_limit_seconds = limit;
    return;
  }
  // After the budget: a gate that says yes has marked the host probing.
  if (gate_ && !gate_()) {
    Arm(kSinkBusyRetry + milliseconds(random_(-kSinkBusyJitter.count(),
                                              kSinkBusyJitter.count())),
        trigger, TimerReason::kSinkBusy, d);
    d.note = Note::kSinkBusy;
    d.about = trigger;
    return;
  }
  if (armed_) {
    armed_.reset();
    d.disarm = true;
  }
  phase_ = Phase::kCalibrating;
  d.start = trigger;
}

void Scheduler::OnFinished(const CalibrationFinishedEvent& e, SteadyTime now,
                           Decision& d) {
  if (phase_ != Phase::kCalibrating && phase_ != Phase::kStopping) return;
  spent_.push_back(Spent{now, std::max(0.0, e.probe_seconds)});
  if (phase_ == Phase::kStopping) {
    phase_ = Phase::kStopped;
    d.finish_stop = true;
    return;
  }
  phase_ = Phase::kIdle;
  if (rerun_) {
    const CalibrationTrigger trigger = *std::exchange(rerun_, std::nullopt);
    TryStart(trigger, now, d);
    return;
  }
  if (e.result == CalibrationResult::kSuccess && !e.inconclusive) {
    ArmRegular(d);
  } else {
    Arm(options_.retry_after_failure, CalibrationTrigger::kRetry,
        TimerReason::kRetry, d);
  }
}

void Scheduler::OnReloaded(const ReloadedEvent& e, SteadyTime now,
                           Decision& d) {
  const ScheduleOptions old = std::exchange(options_, e.options);
  if (phase_ != Phase::kIdle || !armed_) return;
  switch (armed_->reason) {
    case TimerReason::kSchedule:
      if (old.interval != options_.interval || old.jitter != options_.jitter) {
        ArmRegular(d);
      }
      break;
    case TimerReason::kBudget:
      if (old.seconds_per_calibration != options_.seconds_per_calibration ||
          old.seconds_per_hour != options_.seconds_per_hour) {
        TryStart(armed_->trigger, now, d);
      }
      break;
    case TimerReason::kRetry:
      // retry_after_failure applies from the next failure.
      break;
    case TimerReason::kSinkBusy:
      break;  // the gate is asked again when the timer fires
  }
}

bool Scheduler::Stopping() const {
  return phase_ == Phase::kStopping || phase_ == Phase::kStopped;
}

void Scheduler::OnStarted(const StartedEvent& e, SteadyTime now, Decision& d) {
  if (phase_ != Phase::kIdle || armed_) return;
  if (options_.at_startup) {
    TryStart(CalibrationTrigger::kStartup, now, d);
  } else if (e.host_changed) {
    TryStart(CalibrationTrigger::kFingerprint, now, d);
  } else {
    ArmRegular(d);
  }
}

void Scheduler::OnTimerFired(const TimerFiredEvent& e, SteadyTime now, Decision& d) {
  if (Stopping()) {
    d.note = Note::kIgnoredWhileStopping;
  } else if (!armed_ || armed_->id != e.timer || phase_ != Phase::kIdle) {
    d.note = Note::kStaleTimer;
  } else {
    const CalibrationTrigger trigger = armed_->trigger;
    armed_.reset();
    TryStart(trigger, now, d);
  }
}

void Scheduler::OnCalibrateNow(SteadyTime now, Decision& d) {
  d.about = CalibrationTrigger::kSignal;
  if (Stopping()) {
    d.note = Note::kIgnoredWhileStopping;
  } else if (phase_ == Phase::kCalibrating) {
    d.note = Note::kIgnoredWhileCalibrating;
  } else {
    TryStart(CalibrationTrigger::kSignal, now, d);
  }
}

void Scheduler::OnFingerprintChanged(SteadyTime now, Decision& d) {
  OnRerunRequest(CalibrationTrigger::kFingerprint, now, d);
}

void Scheduler::OnRerunRequest(CalibrationTrigger trigger, SteadyTime now, Decision& d) {
  d.about = trigger;
  if (Stopping()) {
    d.note = Note::kIgnoredWhileStopping;
  } else if (phase_ == Phase::kCalibrating) {
    if (!rerun_ || *rerun_ != CalibrationTrigger::kFingerprint) rerun_ = trigger;
    d.note = Note::kRerunQueued;
  } else {
    TryStart(trigger, now, d);
  }
}

void Scheduler::OnStopRequested(Decision& d) {
  if (Stopping()) {
    d.note = Note::kAlreadyStopping;
    return;
  }
  d.disarm = armed_.has_value();
  armed_.reset();
  rerun_.reset();
  if (phase_ == Phase::kCalibrating) {
    phase_ = Phase::kStopping;
    d.cancel_calibration = true;
    d.stop_guard = kStopGuard;
  } else {
    phase_ = Phase::kStopped;
    d.finish_stop = true;
  }
}

void Scheduler::OnStopGuardExpired(Decision& d) {
  if (phase_ != Phase::kStopping) return;
  phase_ = Phase::kStopped;
  d.finish_stop = true;
  d.note = Note::kStopGuardExpired;
}

Decision Scheduler::On(const SchedulerEvent& event, SteadyTime now) {
  Decision d;
  std::visit(
      Overloaded{
          [&](const StartedEvent& e) { OnStarted(e, now, d); },
          [&](const TimerFiredEvent& e) { OnTimerFired(e, now, d); },
          [&](const CalibrateNowEvent&) { OnCalibrateNow(now, d); },
          [&](const FingerprintChangedEvent&) { OnFingerprintChanged(now, d); },
          [&](const CalibrationFinishedEvent& e) { OnFinished(e, now, d); },
          [&](const StopRequestedEvent&) { OnStopRequested(d); },
          [&](const StopGuardExpiredEvent&) { OnStopGuardExpired(d); },
          [&](const ReloadedEvent& e) {
            if (!Stopping()) OnReloaded(e, now, d);
          },
          [&](const ContradictionEvent&) {
            OnRerunRequest(CalibrationTrigger::kContradiction, now, d);
          },
      },
      event);
  return d;
}

}  // namespace zcal::agent

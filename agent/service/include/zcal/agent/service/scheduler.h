// When the agent calibrates: the service's state machine, as a pure
// function of the phase, the time, the probe-budget history, the schedule
// and one event at a time.
//
// The scheduler never reads a clock, sleeps, starts a thread or touches a
// timer: the caller passes the steady-clock time of each event and carries
// out the Decision it returns (start a calibration, arm or disarm the one
// calibration timer, cancel the running calibration, finish the stop).
// Randomness (the schedule's jitter) comes from an injected source. So
// every rule below is tested on a fake clock (tests/agent/scheduler_test.cc).
//
// Rules (docs/operations.md, "Lifecycle" and "Probe budget"):
// - A calibration starts only when its whole budget fits in the hourly
//   budget (the probe seconds of the calibrations that ended within the last
//   hour); otherwise the timer is armed for when enough of them leave the
//   hour window (at least 1 s away), with the same trigger.
// - After a success the next calibration is due after the interval plus a
//   uniform jitter in [-jitter, +jitter] (at least 1 s); after a failure
//   (or a cancellation that no stop asked for) after retry_after_failure,
//   and so after a success that left every discard-path result
//   inconclusive (a noisy moment, such as a host still booting): waiting
//   the interval would leave the host default unmeasured for hours.
// - While a calibration runs: a fingerprint change queues one more
//   calibration, which starts when the running one ends (instead of the
//   regular or retry timer); a calibrate-now request is ignored.
// - A field contradiction raised (Publisher::ApplyAppReports) starts a
//   calibration with trigger kContradiction, subject to the budget like any
//   start: at once when idle, after the running one when one runs (as a
//   fingerprint change does; one queued calibration serves both).
// - A stop cancels the running calibration and waits for it, at most
//   kStopGuard; when idle it finishes at once. Nothing starts afterwards.
//
// - A start that fits the budget asks the start gate (the sink: no session
//   of a peer open, and none granted from then until the calibration ends;
//   PeerSink::TryBeginLocalProbe). When the gate says no, the start is
//   retried after kSinkBusyRetry plus a uniform jitter in
//   [-kSinkBusyJitter, +kSinkBusyJitter], with the same trigger: two
//   throughput tests on one host spoil both. Whoever the gate marked
//   probing is unmarked by the caller when the calibration ends.
//
// Thread safety: none; one thread (the service's event loop) owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string_view>
#include <variant>

#include "zcal/agent/config/config.h"
#include "zcal/agent/domain/calibration_event.h"

namespace zcal::agent {

using SteadyTime = std::chrono::steady_clock::time_point;
using std::chrono::milliseconds;

/// The part of the configuration the scheduler reads.
struct ScheduleOptions {
  bool at_startup = true;
  milliseconds interval = std::chrono::hours(6);
  milliseconds jitter = std::chrono::minutes(10);  ///< +/-, >= 0
  milliseconds retry_after_failure = std::chrono::minutes(5);
  double seconds_per_calibration = 8;  ///< > 0
  double seconds_per_hour = 60;        ///< >= seconds_per_calibration

  static ScheduleOptions From(const Config& config);
  bool operator==(const ScheduleOptions&) const = default;
};

/// How long a stop waits for the cancelled calibration. Probes honour a
/// cancel within about a second (every blocking call waits at most a 200 ms
/// slice before it checks the flag; a connect gives up after 2 s); the guard
/// is generous so that a loaded host or a sanitizer build does not cut a
/// stop short, while a probe stuck in the kernel cannot keep the stop from
/// saving the state and leaving a last heartbeat.
inline constexpr milliseconds kStopGuard{5000};

/// How long a start waits while the host's sink serves a peer: a session
/// lasts at most sink.max_session_seconds (60 s by default), so a few
/// seconds keep the wait short without polling; the jitter keeps two
/// agents that serve each other from retrying in step.
inline constexpr milliseconds kSinkBusyRetry{5000};
inline constexpr milliseconds kSinkBusyJitter{2000};

/// Delays the scheduler never goes below, so that a clock or configuration
/// at a limit cannot make it spin.
inline constexpr milliseconds kMinDelay{1000};

enum class Phase : std::uint8_t {
  kIdle,         ///< no calibration runs; the timer may be armed
  kCalibrating,  ///< a calibration runs
  kStopping,     ///< a stop was requested while a calibration ran
  kStopped,      ///< the stop is finished (or due); nothing happens after
};
std::string_view PhaseName(Phase phase);

/// Why the calibration timer is armed.
enum class TimerReason : std::uint8_t {
  kSchedule,  ///< the regular interval (with jitter)
  kRetry,     ///< retry_after_failure after a failed calibration
  kBudget,    ///< a calibration waits for the hourly budget
  kSinkBusy,  ///< a calibration waits while the sink serves a peer
};
std::string_view TimerReasonName(TimerReason reason);

// Events. Each carries what the scheduler cannot know by itself.

/// The service is up (segment and metrics ready, saved state published).
/// `host_changed` is true when the saved state's fingerprint differs from
/// the host's (an early calibration is due even without at_startup).
struct StartedEvent {
  bool host_changed = false;
};
/// The calibration timer fired; `timer` is the id it was armed with.
struct TimerFiredEvent {
  std::uint64_t timer = 0;
};
/// SIGUSR1 or Service::CalibrateNow().
struct CalibrateNowEvent {};
/// The host-fact fingerprint differs from the last one read.
struct FingerprintChangedEvent {};
/// The running calibration ended; `probe_seconds` is its wall time, which
/// counts against the hourly budget whatever the result.
struct CalibrationFinishedEvent {
  CalibrationResult result = CalibrationResult::kSuccess;
  double probe_seconds = 0;
  /// A success whose discard-path results (stream class) are all
  /// inconclusive (Publisher::DiscardInconclusive): retried like a failure.
  bool inconclusive = false;
};
/// Publisher::ApplyAppReports raised a field contradiction (its outcome's
/// `recalibrate`); passed once per contradiction.
struct ContradictionEvent {};
/// SIGTERM, SIGINT or Service::Stop().
struct StopRequestedEvent {};
/// kStopGuard passed after a stop that cancelled a calibration.
struct StopGuardExpiredEvent {};
/// A reload was applied; `options` are the new ones.
struct ReloadedEvent {
  ScheduleOptions options;
};

using SchedulerEvent =
    std::variant<StartedEvent, TimerFiredEvent, CalibrateNowEvent,
                 FingerprintChangedEvent, CalibrationFinishedEvent,
                 StopRequestedEvent, StopGuardExpiredEvent, ReloadedEvent,
                 ContradictionEvent>;

/// Arm the (single) calibration timer, replacing any armed one; when it
/// fires, pass TimerFiredEvent{id}.
struct TimerRequest {
  std::uint64_t id = 0;
  milliseconds delay{0};
  CalibrationTrigger trigger = CalibrationTrigger::kSchedule;
  TimerReason reason = TimerReason::kSchedule;
};

/// What the caller may log about an event that changed nothing, or why a
/// decision was taken.
enum class Note : std::uint8_t {
  kNone,
  kIgnoredWhileCalibrating,  ///< a calibrate-now while one runs
  kRerunQueued,              ///< fingerprint change or contradiction while one runs
  kBudgetWait,               ///< the start waits; see Decision::budget_*
  kSinkBusy,                 ///< the start waits: the gate said no
  kIgnoredWhileStopping,     ///< any request after a stop began
  kAlreadyStopping,          ///< a second stop request
  kStaleTimer,               ///< a timer that was disarmed or replaced
  kStopGuardExpired,         ///< stop finishes without the calibration
};

/// What to do, in this order: disarm, arm, cancel the calibration and arm
/// the stop guard, start, finish the stop.
struct Decision {
  bool disarm = false;  ///< cancel the armed calibration timer
  std::optional<TimerRequest> arm;
  bool cancel_calibration = false;
  std::optional<milliseconds> stop_guard;  ///< arm the stop guard
  std::optional<CalibrationTrigger> start;  ///< start a calibration now
  bool finish_stop = false;  ///< save, last heartbeat, end the loop
  Note note = Note::kNone;
  /// The trigger a note is about (the request ignored, queued or waiting).
  CalibrationTrigger about = CalibrationTrigger::kSchedule;
  /// For kBudgetWait: probe seconds used within the last hour, and limit.
  double budget_used_seconds = 0;
  double budget_limit_seconds = 0;
};

/// Uniform integer in [lo, hi]; the default draws from a std::mt19937_64
/// seeded from std::random_device.
using RandomSource = std::function<std::int64_t(std::int64_t lo, std::int64_t hi)>;
RandomSource DefaultRandomSource();

/// Asked once per start that fits the budget, just before the start is
/// decided: true lets it start (and may mark the host probing), false makes
/// it wait (kSinkBusy). Empty = always true.
using StartGate = std::function<bool()>;

class Scheduler {
 public:
  explicit Scheduler(ScheduleOptions options,
                     RandomSource random = DefaultRandomSource(),
                     StartGate gate = {});

  /// Applies one event that happened at `now` (a steady-clock time, never
  /// earlier than the last one passed) and returns what to do.
  Decision On(const SchedulerEvent& event, SteadyTime now);

  Phase phase() const { return phase_; }
  /// True while a calibration runs (also while a stop waits for it).
  bool Probing() const {
    return phase_ == Phase::kCalibrating || phase_ == Phase::kStopping;
  }
  /// Probe seconds of calibrations that ended within the hour before `now`.
  double BudgetUsedSeconds(SteadyTime now) const;
  /// The armed timer, if any.
  const std::optional<TimerRequest>& armed() const { return armed_; }
  const ScheduleOptions& options() const { return options_; }

 private:
  struct Spent {
    SteadyTime end;
    double seconds;
  };

  void Forget(SteadyTime now);
  void TryStart(CalibrationTrigger trigger, SteadyTime now, Decision& d);
  void Arm(milliseconds delay, CalibrationTrigger trigger, TimerReason reason,
           Decision& d);
  void ArmRegular(Decision& d);
  /// A stop was requested (stopping, or stopped).
  bool Stopping() const;
  // One step per event: what it changes, noted in `d`.
  void OnStarted(const StartedEvent& e, SteadyTime now, Decision& d);
  void OnTimerFired(const TimerFiredEvent& e, SteadyTime now, Decision& d);
  void OnCalibrateNow(SteadyTime now, Decision& d);
  void OnFingerprintChanged(SteadyTime now, Decision& d);
  // A fingerprint change or a contradiction: start now, or after the
  // running calibration.
  void OnRerunRequest(CalibrationTrigger trigger, SteadyTime now, Decision& d);
  void OnStopRequested(Decision& d);
  void OnStopGuardExpired(Decision& d);
  void OnFinished(const CalibrationFinishedEvent& e, SteadyTime now,
                  Decision& d);
  void OnReloaded(const ReloadedEvent& e, SteadyTime now, Decision& d);

  ScheduleOptions options_;
  RandomSource random_;
  StartGate gate_;
  Phase phase_ = Phase::kIdle;
  // The calibration queued while one runs (fingerprint first: it also
  // recalibrates the contradicted scopes).
  std::optional<CalibrationTrigger> rerun_;
  std::optional<TimerRequest> armed_;
  std::uint64_t next_timer_id_ = 1;
  std::deque<Spent> spent_;  // oldest first
};

}  // namespace zcal::agent

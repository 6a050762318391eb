// The scheduler's rules on a fake clock: every time is a value the test
// passes in, so hours of schedule take no time and nothing sleeps.
#include "zcal/agent/service/scheduler.h"

#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace zcal::agent::scheduler_test {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using Trigger = CalibrationTrigger;

// An arbitrary origin: nothing may depend on the clock's epoch.
const SteadyTime kT0 = SteadyTime{} + hours(1000);

ScheduleOptions Options() {
  ScheduleOptions o;
  o.at_startup = true;
  o.interval = hours(6);
  o.jitter = milliseconds(0);
  o.retry_after_failure = minutes(5);
  o.seconds_per_calibration = 8;
  o.seconds_per_hour = 60;
  return o;
}

CalibrationFinishedEvent Finished(CalibrationResult result, double seconds) {
  return CalibrationFinishedEvent{result, seconds};
}

const CalibrationFinishedEvent kOk = Finished(CalibrationResult::kSuccess, 1);

// A scheduler driven through a calibration and back to idle.
class SchedulerTest : public ::testing::Test {
 protected:
  Decision Start(Scheduler& s, SteadyTime now, bool host_changed = false) {
    return s.On(StartedEvent{host_changed}, now);
  }
  // Runs one calibration from `now` for `probe_seconds`; returns the
  // decision at its end.
  Decision RunOnce(Scheduler& s, SteadyTime now, double probe_seconds,
                   CalibrationResult result = CalibrationResult::kSuccess) {
    const Decision started = s.On(CalibrateNowEvent{}, now);
    EXPECT_EQ(started.start, Trigger::kSignal);
    return s.On(Finished(result, probe_seconds),
                now + std::chrono::duration_cast<milliseconds>(
                          std::chrono::duration<double>(probe_seconds)));
  }
};

TEST_F(SchedulerTest, CalibratesAtStartupWhenConfigured) {
  Scheduler s(Options());
  const Decision d = Start(s, kT0);
  EXPECT_EQ(d.start, Trigger::kStartup);
  EXPECT_FALSE(d.arm);
  EXPECT_EQ(s.phase(), Phase::kCalibrating);
  EXPECT_TRUE(s.Probing());
}

TEST_F(SchedulerTest, WithoutAtStartupWaitsForTheIntervalUnlessTheHostChanged) {
  ScheduleOptions o = Options();
  o.at_startup = false;
  Scheduler same(o);
  const Decision d = Start(same, kT0);
  EXPECT_FALSE(d.start);
  ASSERT_TRUE(d.arm);
  EXPECT_EQ(d.arm->delay, hours(6));
  EXPECT_EQ(d.arm->trigger, Trigger::kSchedule);
  EXPECT_EQ(d.arm->reason, TimerReason::kSchedule);
  EXPECT_EQ(same.phase(), Phase::kIdle);

  Scheduler changed(o);
  EXPECT_EQ(Start(changed, kT0, /*host_changed=*/true).start,
            Trigger::kFingerprint);
}

TEST_F(SchedulerTest, TheRegularTimerStartsTheNextCalibration) {
  Scheduler s(Options());
  Start(s, kT0);
  const Decision done = s.On(kOk, kT0 + seconds(1));
  ASSERT_TRUE(done.arm);
  EXPECT_EQ(done.arm->delay, hours(6));
  EXPECT_EQ(s.phase(), Phase::kIdle);
  const Decision fired =
      s.On(TimerFiredEvent{done.arm->id}, kT0 + seconds(1) + hours(6));
  EXPECT_EQ(fired.start, Trigger::kSchedule);
  EXPECT_FALSE(s.armed());
}

TEST_F(SchedulerTest, AnExhaustedBudgetWaitsUntilTheOldestCalibrationLeavesTheHour) {
  ScheduleOptions o = Options();
  o.seconds_per_calibration = 4;
  o.seconds_per_hour = 10;
  Scheduler s(o);
  Start(s, kT0);
  s.On(Finished(CalibrationResult::kSuccess, 3), kT0 + seconds(3));
  // Failures count too: the probes ran.
  RunOnce(s, kT0 + minutes(10), 3, CalibrationResult::kFailed);
  const SteadyTime now = kT0 + minutes(20);
  EXPECT_DOUBLE_EQ(s.BudgetUsedSeconds(now), 6);

  // 6 s used + 4 s needed fit in 10 s exactly.
  const Decision fits = s.On(CalibrateNowEvent{}, now);
  EXPECT_EQ(fits.start, Trigger::kSignal);
  s.On(Finished(CalibrationResult::kSuccess, 2), now + seconds(2));

  // Now 8 s used: the next needs the first calibration (ended at T0+3 s)
  // to leave the window.
  const SteadyTime later = kT0 + minutes(30);
  const Decision waits = s.On(CalibrateNowEvent{}, later);
  EXPECT_FALSE(waits.start);
  EXPECT_EQ(waits.note, Note::kBudgetWait);
  EXPECT_EQ(waits.about, Trigger::kSignal);
  EXPECT_DOUBLE_EQ(waits.budget_used_seconds, 8);
  EXPECT_DOUBLE_EQ(waits.budget_limit_seconds, 10);
  ASSERT_TRUE(waits.arm);
  EXPECT_EQ(waits.arm->reason, TimerReason::kBudget);
  EXPECT_EQ(waits.arm->trigger, Trigger::kSignal);
  EXPECT_EQ(later + waits.arm->delay, kT0 + seconds(3) + hours(1));
  EXPECT_EQ(s.phase(), Phase::kIdle);

  // The timer fires at that moment: the budget is freed, it starts.
  const Decision fired =
      s.On(TimerFiredEvent{waits.arm->id}, later + waits.arm->delay);
  EXPECT_EQ(fired.start, Trigger::kSignal);
  EXPECT_DOUBLE_EQ(s.BudgetUsedSeconds(later + waits.arm->delay), 5);
}

TEST_F(SchedulerTest, ABudgetWaitFreesAsManyCalibrationsAsItNeeds) {
  ScheduleOptions o = Options();
  o.seconds_per_calibration = 5;
  o.seconds_per_hour = 10;
  Scheduler s(o);
  Start(s, kT0);
  s.On(Finished(CalibrationResult::kSuccess, 1), kT0 + seconds(1));
  RunOnce(s, kT0 + minutes(1), 1);
  RunOnce(s, kT0 + minutes(2), 4.5);
  // 6.5 s used + 5 needed: 1.5 s too many; the first calibration (1 s)
  // leaving is not enough, the second one leaving is.
  const Decision waits = s.On(CalibrateNowEvent{}, kT0 + minutes(4));
  ASSERT_TRUE(waits.arm);
  EXPECT_EQ(kT0 + minutes(4) + waits.arm->delay,
            kT0 + minutes(1) + seconds(1) + hours(1))
      << "when the second calibration (ended at T0+1min+1s) leaves";
}

TEST_F(SchedulerTest, ABudgetWaitIsNeverShorterThanTheMinimumDelay) {
  ScheduleOptions o = Options();
  o.seconds_per_calibration = 4;
  o.seconds_per_hour = 4;
  Scheduler s(o);
  Start(s, kT0);
  s.On(Finished(CalibrationResult::kSuccess, 4), kT0 + seconds(4));
  // 100 ms before the calibration leaves the window.
  const SteadyTime now = kT0 + seconds(4) + hours(1) - milliseconds(100);
  const Decision waits = s.On(CalibrateNowEvent{}, now);
  ASSERT_TRUE(waits.arm);
  EXPECT_EQ(waits.arm->delay, kMinDelay);
}

TEST_F(SchedulerTest, AFailedCalibrationIsRetriedAfterTheRetryDelay) {
  Scheduler s(Options());
  Start(s, kT0);
  const Decision failed =
      s.On(Finished(CalibrationResult::kFailed, 1), kT0 + seconds(1));
  EXPECT_FALSE(failed.start);
  ASSERT_TRUE(failed.arm);
  EXPECT_EQ(failed.arm->delay, minutes(5));
  EXPECT_EQ(failed.arm->trigger, Trigger::kRetry);
  EXPECT_EQ(failed.arm->reason, TimerReason::kRetry);
  const Decision retry =
      s.On(TimerFiredEvent{failed.arm->id}, kT0 + seconds(1) + minutes(5));
  EXPECT_EQ(retry.start, Trigger::kRetry);
  const Decision ok = s.On(kOk, kT0 + minutes(6));
  ASSERT_TRUE(ok.arm);
  EXPECT_EQ(ok.arm->reason, TimerReason::kSchedule)
      << "after a success the regular schedule resumes";
}

TEST_F(SchedulerTest, ASuccessWhoseDiscardResultsAreAllInconclusiveIsRetriedLikeAFailure) {
  Scheduler s(Options());
  Start(s, kT0);
  CalibrationFinishedEvent noisy = Finished(CalibrationResult::kSuccess, 1);
  noisy.inconclusive = true;
  const Decision d = s.On(noisy, kT0 + seconds(1));
  EXPECT_FALSE(d.start);
  ASSERT_TRUE(d.arm);
  EXPECT_EQ(d.arm->delay, minutes(5));
  EXPECT_EQ(d.arm->trigger, Trigger::kRetry);
  EXPECT_EQ(d.arm->reason, TimerReason::kRetry);
  const Decision retry = s.On(TimerFiredEvent{d.arm->id}, kT0 + seconds(1) + minutes(5));
  EXPECT_EQ(retry.start, Trigger::kRetry);
  const Decision ok = s.On(kOk, kT0 + minutes(6));
  ASSERT_TRUE(ok.arm);
  EXPECT_EQ(ok.arm->reason, TimerReason::kSchedule)
      << "a conclusive calibration resumes the regular schedule";
}

TEST_F(SchedulerTest, ACancellationNoStopAskedForIsRetriedLikeAFailure) {
  Scheduler s(Options());
  Start(s, kT0);
  const Decision d =
      s.On(Finished(CalibrationResult::kCancelled, 1), kT0 + seconds(1));
  ASSERT_TRUE(d.arm);
  EXPECT_EQ(d.arm->reason, TimerReason::kRetry);
  EXPECT_FALSE(d.finish_stop);
}

TEST_F(SchedulerTest, JitterIsDrawnWithinPlusMinusJitter) {
  ScheduleOptions o = Options();
  o.interval = hours(1);
  o.jitter = minutes(10);
  std::vector<std::pair<std::int64_t, std::int64_t>> asked;
  bool high = false;
  Scheduler s(o, [&](std::int64_t lo, std::int64_t hi) {
    asked.emplace_back(lo, hi);
    return high ? hi : lo;
  });
  Start(s, kT0);
  const Decision low_end = s.On(kOk, kT0 + seconds(1));
  ASSERT_TRUE(low_end.arm);
  EXPECT_EQ(low_end.arm->delay, minutes(50));
  high = true;
  s.On(TimerFiredEvent{low_end.arm->id}, kT0 + hours(1));
  const Decision high_end = s.On(kOk, kT0 + hours(1) + seconds(1));
  ASSERT_TRUE(high_end.arm);
  EXPECT_EQ(high_end.arm->delay, minutes(70));
  ASSERT_EQ(asked.size(), 2u);
  for (const auto& [lo, hi] : asked) {
    EXPECT_EQ(lo, -milliseconds(minutes(10)).count());
    EXPECT_EQ(hi, milliseconds(minutes(10)).count());
  }
}

TEST_F(SchedulerTest, JitterFromTheDefaultSourceSpreadsOverTheWholeRange) {
  ScheduleOptions o = Options();
  o.interval = hours(1);
  o.jitter = minutes(10);
  Scheduler s(o);
  Start(s, kT0);
  SteadyTime now = kT0;
  std::size_t shorter = 0;
  std::size_t longer = 0;
  for (int i = 0; i < 1000; ++i) {
    now += seconds(1);
    const Decision d = s.On(kOk, now);
    ASSERT_TRUE(d.arm);
    ASSERT_GE(d.arm->delay, minutes(50));
    ASSERT_LE(d.arm->delay, minutes(70));
    (d.arm->delay < hours(1) ? shorter : longer) += 1;
    now += d.arm->delay;
    ASSERT_EQ(s.On(TimerFiredEvent{d.arm->id}, now).start, Trigger::kSchedule);
  }
  // Uniform over +/-10 min: each half holds about 500 of 1000 draws; a
  // source stuck at one end would put all of them on one side.
  EXPECT_GT(shorter, 400u);
  EXPECT_GT(longer, 400u);
}

TEST_F(SchedulerTest, NoJitterDrawsNothingAndDelaysHaveAFloor) {
  ScheduleOptions o = Options();
  o.interval = milliseconds(1000);
  o.jitter = milliseconds(500);
  int draws = 0;
  Scheduler s(o, [&](std::int64_t lo, std::int64_t) {
    ++draws;
    return lo;
  });
  Start(s, kT0);
  const Decision d = s.On(kOk, kT0 + seconds(1));
  ASSERT_TRUE(d.arm);
  EXPECT_EQ(d.arm->delay, kMinDelay) << "1 s - 0.5 s is raised to the floor";
  EXPECT_EQ(draws, 1);

  o.jitter = milliseconds(0);
  Scheduler none(o, [&](std::int64_t, std::int64_t) -> std::int64_t {
    ADD_FAILURE() << "drew a random number without jitter";
    return 0;
  });
  Start(none, kT0);
  EXPECT_EQ(none.On(kOk, kT0 + seconds(1)).arm->delay, milliseconds(1000));
}

TEST_F(SchedulerTest, AFingerprintChangeWhileCalibratingQueuesOneMoreCalibration) {
  Scheduler s(Options());
  Start(s, kT0);
  const Decision first = s.On(FingerprintChangedEvent{}, kT0 + milliseconds(100));
  EXPECT_EQ(first.note, Note::kRerunQueued);
  EXPECT_FALSE(first.start);
  const Decision again = s.On(FingerprintChangedEvent{}, kT0 + milliseconds(200));
  EXPECT_EQ(again.note, Note::kRerunQueued);

  const Decision done = s.On(kOk, kT0 + seconds(1));
  EXPECT_EQ(done.start, Trigger::kFingerprint) << "the rerun follows at once";
  EXPECT_FALSE(done.arm) << "instead of the regular timer";
  EXPECT_EQ(s.phase(), Phase::kCalibrating);

  const Decision second = s.On(kOk, kT0 + seconds(2));
  EXPECT_FALSE(second.start) << "two changes while running: one rerun";
  ASSERT_TRUE(second.arm);
  EXPECT_EQ(second.arm->reason, TimerReason::kSchedule);
}

TEST_F(SchedulerTest, ARerunAlsoFollowsAFailedCalibration) {
  Scheduler s(Options());
  Start(s, kT0);
  s.On(FingerprintChangedEvent{}, kT0 + milliseconds(100));
  const Decision d =
      s.On(Finished(CalibrationResult::kFailed, 1), kT0 + seconds(1));
  EXPECT_EQ(d.start, Trigger::kFingerprint);
  EXPECT_FALSE(d.arm);
}

TEST_F(SchedulerTest, AQueuedRerunWaitsForTheBudgetLikeAnyStart) {
  ScheduleOptions o = Options();
  o.seconds_per_calibration = 4;
  o.seconds_per_hour = 4;
  Scheduler s(o);
  Start(s, kT0);
  s.On(FingerprintChangedEvent{}, kT0 + seconds(1));
  const Decision d = s.On(Finished(CalibrationResult::kSuccess, 4), kT0 + seconds(4));
  EXPECT_FALSE(d.start);
  EXPECT_EQ(d.note, Note::kBudgetWait);
  ASSERT_TRUE(d.arm);
  EXPECT_EQ(d.arm->trigger, Trigger::kFingerprint);
}

TEST_F(SchedulerTest, AFingerprintChangeWhileIdleStartsACalibration) {
  ScheduleOptions o = Options();
  o.at_startup = false;
  Scheduler s(o);
  const Decision armed = Start(s, kT0);
  ASSERT_TRUE(armed.arm);
  const Decision d = s.On(FingerprintChangedEvent{}, kT0 + seconds(30));
  EXPECT_EQ(d.start, Trigger::kFingerprint);
  EXPECT_TRUE(d.disarm) << "the regular timer is replaced by what follows";
  EXPECT_FALSE(s.armed());
}

TEST_F(SchedulerTest, AContradictionWhileIdleStartsACalibrationWithItsTrigger) {
  ScheduleOptions o = Options();
  o.at_startup = false;
  Scheduler s(o);
  ASSERT_TRUE(Start(s, kT0).arm);
  const Decision d = s.On(ContradictionEvent{}, kT0 + seconds(30));
  EXPECT_EQ(d.start, Trigger::kContradiction);
  EXPECT_TRUE(d.disarm) << "the regular timer is replaced by what follows";
  const Decision done = s.On(kOk, kT0 + seconds(31));
  ASSERT_TRUE(done.arm);
  EXPECT_EQ(done.arm->reason, TimerReason::kSchedule) << "then the schedule as usual";
}

TEST_F(SchedulerTest, AContradictionWaitsForTheBudgetLikeAnyStart) {
  ScheduleOptions o = Options();
  o.at_startup = false;
  o.seconds_per_calibration = 4;
  o.seconds_per_hour = 6;
  Scheduler s(o);
  Start(s, kT0);
  RunOnce(s, kT0 + seconds(10), 4);
  const Decision d = s.On(ContradictionEvent{}, kT0 + seconds(20));
  EXPECT_FALSE(d.start) << "4 s used + 4 s needed exceed 6 s";
  EXPECT_EQ(d.note, Note::kBudgetWait);
  EXPECT_EQ(d.about, Trigger::kContradiction);
  ASSERT_TRUE(d.arm);
  EXPECT_EQ(d.arm->trigger, Trigger::kContradiction);
  EXPECT_EQ(d.arm->reason, TimerReason::kBudget);
  const Decision fired = s.On(TimerFiredEvent{d.arm->id}, kT0 + seconds(20) + d.arm->delay);
  EXPECT_EQ(fired.start, Trigger::kContradiction) << "it starts once the hour frees the budget";
}

TEST_F(SchedulerTest, AContradictionWhileCalibratingQueuesOneMoreCalibration) {
  Scheduler s(Options());
  Start(s, kT0);
  const Decision queued = s.On(ContradictionEvent{}, kT0 + milliseconds(100));
  EXPECT_EQ(queued.note, Note::kRerunQueued);
  EXPECT_EQ(queued.about, Trigger::kContradiction);
  EXPECT_FALSE(queued.start);
  const Decision done = s.On(kOk, kT0 + seconds(1));
  EXPECT_EQ(done.start, Trigger::kContradiction);
  const Decision second = s.On(kOk, kT0 + seconds(2));
  EXPECT_FALSE(second.start) << "one contradiction: one calibration";
}

TEST_F(SchedulerTest, AQueuedFingerprintRerunServesALaterContradictionToo) {
  Scheduler s(Options());
  Start(s, kT0);
  s.On(FingerprintChangedEvent{}, kT0 + milliseconds(100));
  s.On(ContradictionEvent{}, kT0 + milliseconds(200));
  const Decision done = s.On(kOk, kT0 + seconds(1));
  EXPECT_EQ(done.start, Trigger::kFingerprint);
  EXPECT_FALSE(s.On(kOk, kT0 + seconds(2)).start) << "one rerun recalibrates every path";
}

TEST_F(SchedulerTest, AContradictionAfterAStopIsIgnored) {
  Scheduler s(Options());
  Start(s, kT0);
  s.On(StopRequestedEvent{}, kT0 + seconds(1));
  const Decision d = s.On(ContradictionEvent{}, kT0 + seconds(2));
  EXPECT_EQ(d.note, Note::kIgnoredWhileStopping);
  EXPECT_FALSE(d.start);
}

TEST_F(SchedulerTest, CalibrateNowWhileCalibratingIsIgnored) {
  Scheduler s(Options());
  Start(s, kT0);
  const Decision d = s.On(CalibrateNowEvent{}, kT0 + milliseconds(100));
  EXPECT_EQ(d.note, Note::kIgnoredWhileCalibrating);
  EXPECT_EQ(d.about, Trigger::kSignal);
  EXPECT_FALSE(d.start);
  const Decision done = s.On(kOk, kT0 + seconds(1));
  EXPECT_FALSE(done.start) << "nothing was queued";
  EXPECT_TRUE(done.arm);
}

TEST_F(SchedulerTest, ADisarmedOrReplacedTimerIsStale) {
  ScheduleOptions o = Options();
  o.at_startup = false;
  Scheduler s(o);
  const Decision armed = Start(s, kT0);
  ASSERT_TRUE(armed.arm);
  // Calibrate now replaces the regular timer; the old one may still fire
  // (its handler was already queued when it was cancelled).
  ASSERT_EQ(s.On(CalibrateNowEvent{}, kT0 + seconds(1)).start, Trigger::kSignal);
  EXPECT_EQ(s.On(TimerFiredEvent{armed.arm->id}, kT0 + seconds(2)).note,
            Note::kStaleTimer);
  const Decision done = s.On(kOk, kT0 + seconds(3));
  ASSERT_TRUE(done.arm);
  EXPECT_NE(done.arm->id, armed.arm->id);
  const Decision stale = s.On(TimerFiredEvent{armed.arm->id}, kT0 + hours(7));
  EXPECT_EQ(stale.note, Note::kStaleTimer);
  EXPECT_FALSE(stale.start);
}

TEST_F(SchedulerTest, StopWhileCalibratingCancelsAndWaitsForTheCalibration) {
  Scheduler s(Options());
  Start(s, kT0);
  s.On(FingerprintChangedEvent{}, kT0 + milliseconds(100));
  const Decision stop = s.On(StopRequestedEvent{}, kT0 + milliseconds(200));
  EXPECT_TRUE(stop.cancel_calibration);
  EXPECT_EQ(stop.stop_guard, kStopGuard);
  EXPECT_FALSE(stop.finish_stop) << "it waits for the calibration's end";
  EXPECT_EQ(s.phase(), Phase::kStopping);
  EXPECT_TRUE(s.Probing());

  EXPECT_EQ(s.On(StopRequestedEvent{}, kT0 + milliseconds(300)).note,
            Note::kAlreadyStopping);
  EXPECT_EQ(s.On(CalibrateNowEvent{}, kT0 + milliseconds(400)).note,
            Note::kIgnoredWhileStopping);
  EXPECT_EQ(s.On(FingerprintChangedEvent{}, kT0 + milliseconds(500)).note,
            Note::kIgnoredWhileStopping);

  const Decision done =
      s.On(Finished(CalibrationResult::kCancelled, 0.6), kT0 + milliseconds(600));
  EXPECT_TRUE(done.finish_stop);
  EXPECT_FALSE(done.start) << "the queued rerun is dropped by the stop";
  EXPECT_FALSE(done.arm);
  EXPECT_EQ(s.phase(), Phase::kStopped);
  EXPECT_FALSE(s.On(StopGuardExpiredEvent{}, kT0 + seconds(6)).finish_stop)
      << "the stop is finished once";
}

TEST_F(SchedulerTest, AStopWhoseCalibrationDoesNotEndFinishesAtTheGuard) {
  Scheduler s(Options());
  Start(s, kT0);
  s.On(StopRequestedEvent{}, kT0 + seconds(1));
  const Decision guard = s.On(StopGuardExpiredEvent{}, kT0 + seconds(1) + kStopGuard);
  EXPECT_TRUE(guard.finish_stop);
  EXPECT_EQ(guard.note, Note::kStopGuardExpired);
  EXPECT_EQ(s.phase(), Phase::kStopped);
  const Decision late =
      s.On(Finished(CalibrationResult::kCancelled, 9), kT0 + seconds(10));
  EXPECT_FALSE(late.finish_stop);
  EXPECT_FALSE(late.start);
  EXPECT_FALSE(late.arm);
}

TEST_F(SchedulerTest, StopWhileIdleFinishesAtOnceAndDisarmsTheTimer) {
  Scheduler s(Options());
  Start(s, kT0);
  const Decision done = s.On(kOk, kT0 + seconds(1));
  ASSERT_TRUE(done.arm);
  const Decision stop = s.On(StopRequestedEvent{}, kT0 + seconds(2));
  EXPECT_TRUE(stop.finish_stop);
  EXPECT_TRUE(stop.disarm);
  EXPECT_FALSE(stop.cancel_calibration);
  EXPECT_FALSE(stop.stop_guard);
  EXPECT_EQ(s.phase(), Phase::kStopped);
  EXPECT_EQ(s.On(TimerFiredEvent{done.arm->id}, kT0 + hours(7)).note,
            Note::kIgnoredWhileStopping);
  EXPECT_FALSE(s.On(ReloadedEvent{Options()}, kT0 + hours(8)).arm);
}

TEST_F(SchedulerTest, AReloadReschedulesTheRegularTimerWhenTheScheduleChanges) {
  Scheduler s(Options());
  Start(s, kT0);
  ASSERT_TRUE(s.On(kOk, kT0 + seconds(1)).arm);
  EXPECT_FALSE(s.On(ReloadedEvent{Options()}, kT0 + seconds(2)).arm)
      << "an unchanged schedule keeps the timer";
  ScheduleOptions o = Options();
  o.interval = hours(2);
  const Decision d = s.On(ReloadedEvent{o}, kT0 + seconds(3));
  ASSERT_TRUE(d.arm);
  EXPECT_EQ(d.arm->delay, hours(2));
  EXPECT_EQ(s.options().interval, hours(2));
}

TEST_F(SchedulerTest, AReloadKeepsARetryTimerAndAppliesAtTheNextEnd) {
  Scheduler s(Options());
  Start(s, kT0);
  ASSERT_TRUE(s.On(Finished(CalibrationResult::kFailed, 1), kT0 + seconds(1)).arm);
  ScheduleOptions o = Options();
  o.interval = hours(2);
  o.retry_after_failure = minutes(1);
  const Decision d = s.On(ReloadedEvent{o}, kT0 + seconds(2));
  EXPECT_FALSE(d.arm);
  ASSERT_TRUE(s.armed());
  EXPECT_EQ(s.armed()->reason, TimerReason::kRetry);
}

TEST_F(SchedulerTest, AReloadThatRaisesTheBudgetStartsAWaitingCalibration) {
  ScheduleOptions o = Options();
  o.seconds_per_calibration = 4;
  o.seconds_per_hour = 4;
  Scheduler s(o);
  Start(s, kT0);
  s.On(Finished(CalibrationResult::kSuccess, 4), kT0 + seconds(4));
  const Decision waits = s.On(CalibrateNowEvent{}, kT0 + seconds(5));
  ASSERT_EQ(waits.note, Note::kBudgetWait);
  o.seconds_per_hour = 60;
  const Decision d = s.On(ReloadedEvent{o}, kT0 + seconds(6));
  EXPECT_EQ(d.start, Trigger::kSignal) << "the waiting request, now it fits";
  EXPECT_TRUE(d.disarm);
}

TEST_F(SchedulerTest, AReloadWhileCalibratingAppliesAtTheEnd) {
  Scheduler s(Options());
  Start(s, kT0);
  ScheduleOptions o = Options();
  o.interval = hours(1);
  EXPECT_FALSE(s.On(ReloadedEvent{o}, kT0 + seconds(1)).arm);
  const Decision done = s.On(kOk, kT0 + seconds(2));
  ASSERT_TRUE(done.arm);
  EXPECT_EQ(done.arm->delay, hours(1));
}

TEST(ScheduleOptions, TakesTheScheduleAndTheBudgetOfTheConfiguration) {
  Config c;
  c.schedule.at_startup = false;
  c.schedule.interval = hours(2);
  c.schedule.jitter = minutes(3);
  c.schedule.retry_after_failure = minutes(4);
  c.budget.seconds_per_calibration = 5;
  c.budget.seconds_per_hour = 50;
  const ScheduleOptions o = ScheduleOptions::From(c);
  EXPECT_FALSE(o.at_startup);
  EXPECT_EQ(o.interval, hours(2));
  EXPECT_EQ(o.jitter, minutes(3));
  EXPECT_EQ(o.retry_after_failure, minutes(4));
  EXPECT_DOUBLE_EQ(o.seconds_per_calibration, 5);
  EXPECT_DOUBLE_EQ(o.seconds_per_hour, 50);
}

}  // namespace
}  // namespace zcal::agent::scheduler_test

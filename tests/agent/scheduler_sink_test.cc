// The scheduler's sink rule on a fake clock: a start that fits the budget
// asks the gate (the sink), and waits a few seconds with jitter while it
// says no.
#include <vector>

#include <gtest/gtest.h>

#include "zcal/agent/service/scheduler.h"

namespace zcal::agent::scheduler_sink_test {
namespace {

using std::chrono::hours;
using std::chrono::seconds;
using Trigger = CalibrationTrigger;

const SteadyTime kT0 = SteadyTime{} + hours(1000);

ScheduleOptions Options() {
  ScheduleOptions o;
  o.interval = hours(6);
  o.jitter = milliseconds(0);
  o.seconds_per_calibration = 8;
  o.seconds_per_hour = 60;
  return o;
}

// A gate whose answers the test sets, counting how often it is asked.
struct FakeGate {
  bool open = true;
  int asked = 0;
  StartGate Gate() {
    return [this] {
      ++asked;
      return open;
    };
  }
};

// Returns a fixed offset and records the ranges it was asked for.
struct FakeRandom {
  std::int64_t value = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  RandomSource Source() {
    return [this](std::int64_t lo, std::int64_t hi) {
      ranges.emplace_back(lo, hi);
      return value;
    };
  }
};

TEST(SchedulerSink, AStartWaitsWhileTheSinkServesAPeerAndThenRetries) {
  FakeGate gate;
  gate.open = false;
  FakeRandom random;
  random.value = 1500;
  Scheduler s(Options(), random.Source(), gate.Gate());

  const Decision waiting = s.On(StartedEvent{}, kT0);
  EXPECT_FALSE(waiting.start);
  EXPECT_EQ(waiting.note, Note::kSinkBusy);
  EXPECT_EQ(waiting.about, Trigger::kStartup);
  ASSERT_TRUE(waiting.arm);
  EXPECT_EQ(waiting.arm->reason, TimerReason::kSinkBusy);
  EXPECT_EQ(waiting.arm->trigger, Trigger::kStartup);
  EXPECT_EQ(waiting.arm->delay, kSinkBusyRetry + milliseconds(1500));
  EXPECT_EQ(random.ranges.back(),
            std::make_pair(-kSinkBusyJitter.count(), kSinkBusyJitter.count()));
  EXPECT_EQ(s.phase(), Phase::kIdle);
  EXPECT_FALSE(s.Probing());
  EXPECT_EQ(gate.asked, 1);

  // Still serving at the retry: another wait, the same trigger.
  const SteadyTime retry = kT0 + waiting.arm->delay;
  const Decision again = s.On(TimerFiredEvent{waiting.arm->id}, retry);
  EXPECT_FALSE(again.start);
  ASSERT_TRUE(again.arm);
  EXPECT_EQ(again.arm->trigger, Trigger::kStartup);
  EXPECT_EQ(gate.asked, 2);

  // The session ended: the next retry starts the calibration.
  gate.open = true;
  const Decision started = s.On(TimerFiredEvent{again.arm->id}, retry + again.arm->delay);
  EXPECT_EQ(started.start, Trigger::kStartup);
  EXPECT_EQ(s.phase(), Phase::kCalibrating);
  EXPECT_FALSE(s.armed());
  EXPECT_EQ(gate.asked, 3);
}

TEST(SchedulerSink, TheRetryDelayStaysWithinTheJitterAndAboveTheFloor) {
  for (const std::int64_t offset : {-kSinkBusyJitter.count(), std::int64_t{0},
                                    kSinkBusyJitter.count()}) {
    FakeGate gate;
    gate.open = false;
    FakeRandom random;
    random.value = offset;
    Scheduler s(Options(), random.Source(), gate.Gate());
    const Decision d = s.On(CalibrateNowEvent{}, kT0);
    ASSERT_TRUE(d.arm);
    EXPECT_EQ(d.arm->delay, kSinkBusyRetry + milliseconds(offset));
    EXPECT_GE(d.arm->delay, kMinDelay);
    EXPECT_EQ(d.arm->trigger, Trigger::kSignal);
  }
}

TEST(SchedulerSink, TheGateIsAskedOnlyWhenTheBudgetFits) {
  // A gate that said yes has marked the host probing; asking it for a
  // start that then waits for the budget would block the sink for nothing.
  FakeGate gate;
  ScheduleOptions o = Options();
  o.seconds_per_calibration = 8;
  o.seconds_per_hour = 10;
  Scheduler s(o, DefaultRandomSource(), gate.Gate());
  ASSERT_EQ(s.On(CalibrateNowEvent{}, kT0).start, Trigger::kSignal);
  EXPECT_EQ(gate.asked, 1);
  s.On(CalibrationFinishedEvent{CalibrationResult::kSuccess, 8}, kT0 + seconds(8));
  const Decision d = s.On(CalibrateNowEvent{}, kT0 + seconds(9));
  EXPECT_EQ(d.note, Note::kBudgetWait);
  EXPECT_EQ(gate.asked, 1);
}

TEST(SchedulerSink, ACalibrateNowWhileWaitingAsksTheGateAgain) {
  FakeGate gate;
  gate.open = false;
  Scheduler s(Options(), DefaultRandomSource(), gate.Gate());
  const Decision first = s.On(StartedEvent{}, kT0);
  ASSERT_TRUE(first.arm);
  gate.open = true;
  const Decision now = s.On(CalibrateNowEvent{}, kT0 + seconds(1));
  EXPECT_EQ(now.start, Trigger::kSignal);
  EXPECT_TRUE(now.disarm);
  // The busy timer it replaced is stale when it fires.
  s.On(CalibrationFinishedEvent{CalibrationResult::kSuccess, 1}, kT0 + seconds(2));
  EXPECT_EQ(s.On(TimerFiredEvent{first.arm->id}, kT0 + seconds(7)).note, Note::kStaleTimer);
}

TEST(SchedulerSink, ARunningCalibrationDoesNotAskTheGateForTheNextEvents) {
  FakeGate gate;
  Scheduler s(Options(), DefaultRandomSource(), gate.Gate());
  ASSERT_EQ(s.On(StartedEvent{}, kT0).start, Trigger::kStartup);
  EXPECT_EQ(s.On(CalibrateNowEvent{}, kT0 + seconds(1)).note, Note::kIgnoredWhileCalibrating);
  EXPECT_EQ(gate.asked, 1);
}

TEST(SchedulerSink, AReloadLeavesAWaitingStartToItsTimer) {
  FakeGate gate;
  gate.open = false;
  Scheduler s(Options(), DefaultRandomSource(), gate.Gate());
  const Decision waiting = s.On(StartedEvent{}, kT0);
  ScheduleOptions changed = Options();
  changed.interval = hours(1);
  changed.seconds_per_hour = 120;
  const Decision reloaded = s.On(ReloadedEvent{changed}, kT0 + seconds(1));
  EXPECT_FALSE(reloaded.arm);
  EXPECT_FALSE(reloaded.start);
  EXPECT_EQ(s.armed()->id, waiting.arm->id);
  EXPECT_EQ(TimerReasonName(TimerReason::kSinkBusy), "sink_busy");
}

}  // namespace
}  // namespace zcal::agent::scheduler_sink_test

// The calibration runner with fake calibrations: rounds, cancellation, the
// hand-back of the outcome, and a destruction that never leaves a worker
// behind. Also runs under ThreadSanitizer (suite tsan).
#include "zcal/agent/service/calibration_runner.h"

#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include <gtest/gtest.h>

namespace zcal::agent::calibration_runner_test {
namespace {

using std::chrono::milliseconds;

// Counts events and lets a thread wait for a count. Every wait in this file
// is on a condition; the bound only turns a hang into a failure.
class Events {
 public:
  void Add() {
    const std::lock_guard lock(mutex_);
    ++count_;
    changed_.notify_all();
  }
  bool WaitFor(int count, milliseconds bound = milliseconds(30'000)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, bound, [&] { return count_ >= count; });
  }
  int count() {
    const std::lock_guard lock(mutex_);
    return count_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int count_ = 0;
};

probes::CalibrationReport Report(const std::string& path) {
  probes::CalibrationReport report;
  report.analysis.paths[path].path = path;
  return report;
}

RoundPlan Jobs(std::initializer_list<const char*> names) {
  RoundPlan plan;
  for (const char* name : names) {
    PathJob job;
    job.path = PathId::Configured(name);
    job.options.path_name = name;
    plan.jobs.push_back(job);
  }
  return plan;
}

// A calibration that runs until it is cancelled, like a probe does.
Result<probes::CalibrationReport> UntilCancelled(
    const probes::CalibrationOptions& options, Events& entered) {
  entered.Add();
  while (!options.cancel->load()) std::this_thread::yield();
  probes::CalibrationReport report = Report(options.path_name);
  report.cancelled = true;
  return report;
}

TEST(CalibrationRunner, RunsEveryJobInOrderAndNotifiesOnce) {
  std::mutex mutex;
  std::vector<std::string> seen;
  Events notified;
  CalibrationRunner runner(
      [&](const probes::CalibrationOptions& options, const auto&) {
        EXPECT_NE(options.cancel, nullptr);
        const std::lock_guard lock(mutex);
        seen.push_back(options.path_name);
        return Result<probes::CalibrationReport>(Report(options.path_name));
      },
      [&] { notified.Add(); });
  ASSERT_TRUE(runner.Start(Jobs({"a", "b", "c"})));
  ASSERT_TRUE(notified.WaitFor(1));
  const std::optional<RoundOutcome> outcome = runner.TakeOutcome();
  ASSERT_TRUE(outcome);
  EXPECT_FALSE(outcome->cancelled);
  ASSERT_EQ(outcome->reports.size(), 3u);
  EXPECT_EQ(ToString(outcome->reports[0].path), "a");
  EXPECT_EQ(ToString(outcome->reports[2].path), "c");
  EXPECT_TRUE(outcome->reports[1].report);
  EXPECT_GE(outcome->duration_seconds, 0);
  EXPECT_FALSE(runner.TakeOutcome()) << "an outcome is taken once";
  EXPECT_EQ(notified.count(), 1);
  const std::lock_guard lock(mutex);
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(CalibrationRunner, TheOutcomeIsThereOnlyOnceTheRoundEnded) {
  Events entered;
  Events notified;
  CalibrationRunner runner(
      [&](const probes::CalibrationOptions& options, const auto&) {
        return UntilCancelled(options, entered);
      },
      [&] { notified.Add(); });
  EXPECT_FALSE(runner.TakeOutcome()) << "nothing before a round starts";
  ASSERT_TRUE(runner.Start(Jobs({"a"})));
  EXPECT_FALSE(runner.Start(Jobs({"b"}))) << "one round at a time";
  ASSERT_TRUE(entered.WaitFor(1));
  EXPECT_FALSE(runner.TakeOutcome()) << "nothing before the round ends";
  runner.RequestStop();
  ASSERT_TRUE(notified.WaitFor(1));
  EXPECT_TRUE(runner.TakeOutcome());
  EXPECT_TRUE(runner.Start(Jobs({"c"}))) << "free again once the outcome is taken";
}

TEST(CalibrationRunner, AStopEndsTheRunningJobAndSkipsTheRest) {
  Events entered;
  Events notified;
  CalibrationRunner runner(
      [&](const probes::CalibrationOptions& options, const auto&) {
        EXPECT_EQ(options.path_name, "first") << "no job runs after a stop";
        return UntilCancelled(options, entered);
      },
      [&] { notified.Add(); });
  ASSERT_TRUE(runner.Start(Jobs({"first", "second"})));
  ASSERT_TRUE(entered.WaitFor(1));
  runner.RequestStop();
  // The bound is the behaviour here (a stop ends the round): generous so
  // that a sanitizer build on a loaded host does not fail it; the fake
  // calibration sees the flag within microseconds.
  ASSERT_TRUE(notified.WaitFor(1, milliseconds(10'000)));
  const std::optional<RoundOutcome> outcome = runner.TakeOutcome();
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->cancelled);
  ASSERT_EQ(outcome->reports.size(), 1u);
  EXPECT_EQ(ToString(outcome->reports[0].path), "first");
}

TEST(CalibrationRunner, ACalibrationThatReportsACancellationEndsTheRound) {
  Events notified;
  CalibrationRunner runner(
      [&](const probes::CalibrationOptions& options, const auto&) {
        probes::CalibrationReport report = Report(options.path_name);
        report.cancelled = true;
        return Result<probes::CalibrationReport>(report);
      },
      [&] { notified.Add(); });
  ASSERT_TRUE(runner.Start(Jobs({"a", "b"})));
  ASSERT_TRUE(notified.WaitFor(1));
  const std::optional<RoundOutcome> outcome = runner.TakeOutcome();
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->cancelled);
  EXPECT_EQ(outcome->reports.size(), 1u);
}

TEST(CalibrationRunner, AThrowingCalibrationBecomesAFailedReport) {
  Events notified;
  CalibrationRunner runner(
      [&](const probes::CalibrationOptions& options,
          const auto&) -> Result<probes::CalibrationReport> {
        if (options.path_name == "bad") throw std::runtime_error("boom");
        return Report(options.path_name);
      },
      [&] { notified.Add(); });
  ASSERT_TRUE(runner.Start(Jobs({"bad", "good"})));
  ASSERT_TRUE(notified.WaitFor(1));
  const std::optional<RoundOutcome> outcome = runner.TakeOutcome();
  ASSERT_TRUE(outcome);
  ASSERT_EQ(outcome->reports.size(), 2u);
  ASSERT_FALSE(outcome->reports[0].report);
  EXPECT_EQ(outcome->reports[0].report.error().code, Errc::kFailed);
  EXPECT_EQ(outcome->reports[0].report.error().message,
            "calibration of path bad threw: boom");
  EXPECT_TRUE(outcome->reports[1].report) << "the other paths go on";
}

TEST(CalibrationRunner, StartsOneRoundAtATime) {
  Events entered;
  Events notified;
  CalibrationRunner runner(
      [&](const probes::CalibrationOptions& options, const auto&) {
        return UntilCancelled(options, entered);
      },
      [&] { notified.Add(); });
  ASSERT_TRUE(runner.Start(Jobs({"a"})));
  EXPECT_FALSE(runner.Start(Jobs({"b"}))) << "while it runs";
  ASSERT_TRUE(entered.WaitFor(1));
  runner.RequestStop();
  ASSERT_TRUE(notified.WaitFor(1));
  EXPECT_FALSE(runner.Start(Jobs({"b"}))) << "while its outcome waits";
  ASSERT_TRUE(runner.TakeOutcome());
  ASSERT_TRUE(runner.Start(Jobs({"c"})));
  ASSERT_TRUE(entered.WaitFor(2));
  runner.RequestStop();
  ASSERT_TRUE(notified.WaitFor(2));
  const std::optional<RoundOutcome> second = runner.TakeOutcome();
  ASSERT_TRUE(second);
  EXPECT_EQ(ToString(second->reports.at(0).path), "c");
}

TEST(CalibrationRunner, DestructionStopsAndJoinsTheWorkerWithoutNotifying) {
  Events entered;
  std::atomic<int> notified{0};
  std::atomic<bool> returned{false};
  {
    CalibrationRunner runner(
        [&](const probes::CalibrationOptions& options, const auto&) {
          auto report = UntilCancelled(options, entered);
          returned = true;
          return report;
        },
        [&] { ++notified; });
    ASSERT_TRUE(runner.Start(Jobs({"a"})));
    ASSERT_TRUE(entered.WaitFor(1));
  }
  EXPECT_TRUE(returned) << "the worker was joined, not left running";
  EXPECT_EQ(notified, 0) << "no notification once the owner goes away";
}

TEST(CalibrationRunner, WhatAPathLeavesOfItsBudgetGoesToThePathsAfterIt) {
  std::mutex mutex;
  std::vector<double> budgets;
  Events notified;
  CalibrationRunner runner(
      [&](const probes::CalibrationOptions& options, const auto&) {
        const std::lock_guard lock(mutex);
        budgets.push_back(options.budget_seconds);
        return Result<probes::CalibrationReport>(Report(options.path_name));
      },
      [&] { notified.Add(); });
  RoundPlan plan = Jobs({"a", "b", "c"});
  for (PathJob& job : plan.jobs) job.options.budget_seconds = 2;
  ASSERT_TRUE(runner.Start(std::move(plan)));
  ASSERT_TRUE(notified.WaitFor(1));
  ASSERT_TRUE(runner.TakeOutcome().has_value());
  const std::lock_guard lock(mutex);
  ASSERT_EQ(budgets.size(), 3u);
  EXPECT_DOUBLE_EQ(budgets[0], 2) << "the first path gets its share";
  // Each path returns at once and leaves (nearly) all of its budget: b gets
  // half of what a left on top of its own 2 s, c, the last, what is left of
  // the round's 6 s.
  EXPECT_GT(budgets[1], 2);
  EXPECT_LE(budgets[1], 3);
  EXPECT_GT(budgets[2], budgets[1]);
  EXPECT_LE(budgets[2], 6) << "never more than the round's budget";
}

TEST(PlanRound, OneJobPerPathSharingTheBudget) {
  Config config;
  config.paths = {PathConfig{"a", probes::TargetKind::kLoopback},
                  PathConfig{"b", probes::TargetKind::kLoopback}};
  config.methods = {calibrator::Method::kCopy, calibrator::Method::kMsgZerocopy};
  config.min_size_bytes = 4096;
  config.max_size_bytes = 65536;
  config.budget.seconds_per_calibration = 6;
  config.budget.bytes_per_second = 1'000'000;
  config.host_root = "/tmp/root";
  const std::vector<PathJob> jobs = PlanRound(config).jobs;
  ASSERT_EQ(jobs.size(), 2u);
  for (const PathJob& job : jobs) {
    EXPECT_EQ(job.options.target, probes::Target::Loopback());
    EXPECT_EQ(job.options.methods, config.methods);
    EXPECT_EQ(job.options.min_size, 4096u);
    EXPECT_EQ(job.options.max_size, 65536u);
    EXPECT_DOUBLE_EQ(job.options.budget_seconds, 3);
    EXPECT_EQ(job.options.max_bytes_per_second, 1'000'000u);
    EXPECT_EQ(job.options.root, "/tmp/root");
    EXPECT_EQ(job.options.cancel, nullptr) << "the runner sets it";
    EXPECT_FALSE(job.options.read_host) << "the service reads host facts once per round";
  }
  EXPECT_EQ(jobs[0].options.path_name, "a");
  EXPECT_EQ(jobs[1].options.path_name, "b");
}

TEST(PlanRound, TheDiscardPathAndPeersAtTheConfiguredClassesLoopbackAtStream) {
  Config config;  // loopback and discard
  config.depths = {1, 16, calibrator::kStreamDepth};
  config.peers.static_peers = {*common::ParseHostPort("198.18.9.1:7070")};
  const RoundPlan plan = PlanRound(config, "host-a", 0);
  ASSERT_EQ(plan.jobs.size(), 2u);
  EXPECT_EQ(plan.jobs[0].options.target.kind, probes::TargetKind::kLoopback);
  EXPECT_EQ(plan.jobs[0].options.depths, std::vector<std::uint32_t>{calibrator::kStreamDepth});
  EXPECT_EQ(plan.jobs[1].options.target.kind, probes::TargetKind::kDiscard);
  EXPECT_EQ(plan.jobs[1].options.depths, config.depths);
  ASSERT_TRUE(plan.peers);
  EXPECT_EQ(plan.peers->base.depths, config.depths);
}

ScopeMixes Mixes() {
  ScopeMixes mixes;
  mixes[AppScope::kHostDefault] = TrafficMix{3600, 5000, {{6144, 3.0}, {98304, 1.0}}, {}};
  mixes[AppScope::kPeer] = TrafficMix{3600, 2000, {{1536, 1.0}}, {}};
  return mixes;
}

TEST(PlanRound, DecidesAsConfiguredOrUniformUntilGivenTheApplicationsMix) {
  Config config;  // loopback and discard
  config.peers.static_peers = {*common::ParseHostPort("198.18.9.1:7070")};
  const RoundPlan plan = PlanRound(config, "host-a", 0);
  for (const PathJob& job : plan.jobs) {
    EXPECT_EQ(job.decided_for.source, MixSource::kUniform);
    EXPECT_TRUE(job.options.decision.traffic.empty());
  }
  EXPECT_EQ(plan.peers_decided_for.source, MixSource::kUniform);
  config.decision.traffic = {{65536, 1.0}};
  const RoundPlan configured = PlanRound(config, "host-a", 0);
  EXPECT_EQ(configured.jobs[1].decided_for.source, MixSource::kConfigured);
  EXPECT_EQ(configured.peers_decided_for.source, MixSource::kConfigured);
}

TEST(ApplyMixes, EachPathDecidesForTheMixOfTheScopeItIsPublishedAs) {
  Config config;  // loopback and discard
  config.peers.static_peers = {*common::ParseHostPort("198.18.9.1:7070")};
  RoundPlan plan = PlanRound(config, "host-a", 0);
  const ScopeMixes mixes = Mixes();
  ApplyMixes(plan, config, mixes);
  ASSERT_EQ(plan.jobs.size(), 2u);
  EXPECT_EQ(plan.jobs[0].options.target.kind, probes::TargetKind::kLoopback);
  EXPECT_TRUE(plan.jobs[0].options.decision.traffic.empty()) << "loopback is never: no mix";
  EXPECT_EQ(plan.jobs[0].decided_for.source, MixSource::kUniform);
  EXPECT_EQ(plan.jobs[1].options.decision.traffic, mixes.at(AppScope::kHostDefault).bins)
      << "the discard path stands for the host default";
  EXPECT_EQ(plan.jobs[1].decided_for.source, MixSource::kApplications);
  EXPECT_EQ(plan.jobs[1].decided_for.mix.sends, 5000u);
  ASSERT_TRUE(plan.peers);
  EXPECT_EQ(plan.peers->base.decision.traffic, mixes.at(AppScope::kPeer).bins);
  EXPECT_EQ(plan.peers_decided_for.source, MixSource::kApplications);
  EXPECT_EQ(plan.jobs[1].options.decision.margin, config.decision.margin)
      << "only the traffic changes";

  config.decision.traffic = {{65536, 1.0}};
  RoundPlan configured = PlanRound(config, "host-a", 0);
  ApplyMixes(configured, config, mixes);
  EXPECT_EQ(configured.jobs[1].options.decision.traffic, config.decision.traffic)
      << "the configuration's traffic wins";
  EXPECT_EQ(configured.jobs[1].decided_for.source, MixSource::kConfigured);
}

TEST(CalibrationRunner, EachReportSaysWhichMixItsPathWasDecidedFor) {
  Config config;  // loopback and discard
  RoundPlan plan = PlanRound(config);
  ApplyMixes(plan, config, Mixes());
  std::mutex mutex;
  std::vector<std::vector<calibrator::TrafficBin>> traffic;
  Events notified;
  CalibrationRunner runner(
      [&](const probes::CalibrationOptions& options, const auto&) {
        const std::lock_guard lock(mutex);
        traffic.push_back(options.decision.traffic);
        return Result<probes::CalibrationReport>(Report(options.path_name));
      },
      [&] { notified.Add(); });
  ASSERT_TRUE(runner.Start(plan));
  ASSERT_TRUE(notified.WaitFor(1));
  const std::optional<RoundOutcome> outcome = runner.TakeOutcome();
  ASSERT_TRUE(outcome);
  ASSERT_EQ(outcome->reports.size(), 2u);
  EXPECT_EQ(outcome->reports[0].decided_for.source, MixSource::kUniform);
  EXPECT_EQ(outcome->reports[1].decided_for, plan.jobs[1].decided_for);
  const std::lock_guard lock(mutex);
  ASSERT_EQ(traffic.size(), 2u);
  EXPECT_TRUE(traffic[0].empty());
  EXPECT_EQ(traffic[1], Mixes().at(AppScope::kHostDefault).bins)
      << "the calibration decides with the mix";
}

}  // namespace
}  // namespace zcal::agent::calibration_runner_test

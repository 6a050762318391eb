#include "zcal/probes/calibration/calibration.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

#include "zcal/calibrator/planner.h"
#include "zcal/probes/send/capabilities.h"
#include "zcal/probes/sink/sink.h"
#include "zcal/testing/test_data.h"

namespace zcal::probes::calibration_test {
namespace {

using namespace std::chrono_literals;
using calibrator::Method;
using calibrator::Reason;
using calibrator::Verdict;

std::string FakeRoot() {
  return (zcal::testing::TestData() / "sysfs" / "pci-host").string();
}

TEST(Calibration, LoopbackYieldsKernelCopiedForEveryZerocopyMethod) {
  CalibrationOptions options;
  options.min_size = 4096;
  options.max_size = 65536;
  options.budget_seconds = 4;
  std::vector<CalibrationProgress> progress;
  auto report = RunCalibration(options, [&](const CalibrationProgress& p) {
    progress.push_back(p);
  });
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_FALSE(report->cancelled);
  EXPECT_EQ(report->host.interface.name, "lo");
  // The host's load over the probes, this calibration's own share in it.
  ASSERT_TRUE(report->load.has_value());
  EXPECT_GT(report->load->own_share, 0.0);
  EXPECT_LE(report->load->busy_share, 1.0);
  EXPECT_LE(report->load->steal_share, report->load->busy_share);
  EXPECT_GE(report->load->runnable_reads, report->probes_run);
  EXPECT_GE(report->load->runnable_max, 1u);
  ASSERT_EQ(report->analysis.paths.size(), 1u);
  const auto& methods = report->analysis.paths.at("loopback").methods;
  ASSERT_EQ(methods.size(), 3u);
  for (const auto& [method, result] : methods) {
    EXPECT_EQ(result.verdict, Verdict::kNever) << calibrator::MethodName(method);
    if (result.reason == Reason::kUnsupported) {
      EXPECT_FALSE(result.detail.empty());
    } else {
      EXPECT_EQ(result.reason, Reason::kKernelCopied) << result.detail;
    }
  }
  bool saw_copy = false, saw_uring_send = false;
  for (const calibrator::Sample& s : report->samples) {
    saw_copy |= s.method == Method::kCopy && s.ok();
    saw_uring_send |= s.method == Method::kUringSend && s.ok();
    EXPECT_EQ(s.path, "loopback");
  }
  EXPECT_TRUE(saw_copy);
  EXPECT_TRUE(saw_uring_send || !CheckSupport(Method::kUringSend).supported);
  ASSERT_EQ(progress.size(), report->samples.size());
  for (std::size_t i = 0; i < progress.size(); ++i) {
    EXPECT_EQ(progress[i].done, i);
    EXPECT_GT(progress[i].total, progress[i].done);
    EXPECT_EQ(progress[i].method, report->samples[i].method);
    EXPECT_EQ(progress[i].size_bytes, report->samples[i].size_bytes);
  }
}

TEST(Calibration, StopsSoonAfterCancelAndKeepsWhatWasMeasured) {
  std::atomic<bool> cancel{false};
  CalibrationOptions options;
  options.methods = {Method::kCopy};  // baselines alone: a long sweep
  options.budget_seconds = 60;
  options.cancel = &cancel;
  std::chrono::steady_clock::time_point cancelled_at;
  // Cancel from the progress callback once a few probes ran: an event, not
  // a sleep.
  auto report = RunCalibration(options, [&](const CalibrationProgress& p) {
    if (p.done == 4 && !cancel.load()) {
      cancelled_at = std::chrono::steady_clock::now();
      cancel.store(true);
    }
  });
  const auto latency = std::chrono::steady_clock::now() - cancelled_at;
  ASSERT_TRUE(report) << report.error().message;
  // Stopped by the cancel, not by the 60 s budget: marked cancelled, and
  // no probe started after it (a sweep that ignored the flag would go on).
  // The latency is printed, not asserted: a loaded machine stretches it.
  EXPECT_TRUE(report->cancelled);
  std::printf("cancel latency: %.0f ms\n",
              std::chrono::duration<double, std::milli>(latency).count());
  EXPECT_EQ(report->samples.size(), 4u);
  for (const calibrator::Sample& s : report->samples) EXPECT_TRUE(s.ok()) << s.error;
  EXPECT_EQ(report->probes_run, report->samples.size());
}

TEST(Calibration, EndsWhenTheBudgetIsSpent) {
  CalibrationOptions options;
  options.methods = {Method::kCopy};
  options.budget_seconds = 1;
  auto report = RunCalibration(options);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_FALSE(report->cancelled);
  EXPECT_GE(report->samples.size(), 5u);
  // It ended on the budget, not on a finished plan: the planner still had
  // probes to run.
  calibrator::PlannerOptions full;
  full.methods = {Method::kCopy};
  calibrator::SweepPlanner planner(full);
  EXPECT_LT(report->samples.size(), planner.EstimatedTotal());
  // The probes' own send windows fit the budget (each sample's wall time is
  // measured by the probe; setup and drain are outside the budget share).
  std::uint64_t sending_ns = 0;
  for (const calibrator::Sample& s : report->samples) sending_ns += s.wall_ns;
  EXPECT_LE(sending_ns, 1'000'000'000u);
}

TEST(Calibration, KeepsEachProbeUnderTheByteRate) {
  CalibrationOptions options;
  options.methods = {Method::kCopy};
  options.min_size = options.max_size = 65536;
  options.budget_seconds = 1;
  options.max_bytes_per_second = 10'000'000;
  auto report = RunCalibration(options);
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_FALSE(report->samples.empty());
  std::uint64_t bytes = 0;
  for (const calibrator::Sample& s : report->samples) {
    ASSERT_TRUE(s.ok()) << s.error;
    EXPECT_LE(s.bytes, 10'000'000u * 250 / 1000 + 65536) << "probes last at most 250 ms";
    bytes += s.bytes;
  }
  EXPECT_LE(bytes, static_cast<std::uint64_t>(10'000'000 * report->duration_seconds) + 65536);
}

TEST(Calibration, ReportsUnsupportedMethodsAsVerdictsWithTheReason) {
  CalibrationOptions options;
  options.methods = {Method::kCopy, Method::kMsgZerocopy, Method::kUringSend,
                     Method::kUringSendZc};
  options.min_size = options.max_size = 16384;
  options.budget_seconds = 2;
  options.root = FakeRoot();  // kernel.io_uring_disabled = 2
  auto report = RunCalibration(options);
  ASSERT_TRUE(report) << report.error().message;
  const auto& result = report->analysis.paths.at("loopback").methods.at(Method::kUringSendZc);
  EXPECT_EQ(result.verdict, Verdict::kNever);
  EXPECT_EQ(result.reason, Reason::kUnsupported);
  EXPECT_NE(result.detail.find("kernel.io_uring_disabled = 2"), std::string::npos)
      << result.detail;
  EXPECT_EQ(report->host.host.kernel_release, "6.1.0-27-amd64");
  EXPECT_EQ(report->analysis.paths.at("loopback").methods.at(Method::kMsgZerocopy).reason,
            Reason::kKernelCopied);
}

TEST(Calibration, FailsWhenEveryZerocopyMethodIsUnsupported) {
  CalibrationOptions options;
  options.methods = {Method::kCopy, Method::kUringSend, Method::kUringSendZc};
  options.budget_seconds = 2;
  options.root = FakeRoot();  // kernel.io_uring_disabled = 2
  auto report = RunCalibration(options);
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, Errc::kUnsupported);
  EXPECT_NE(report.error().message.find("uring_send_zc: io_uring is disabled"),
            std::string::npos)
      << report.error().message;
}

TEST(Calibration, FailsWhenThePeersSinkIsNotThereAndSaysWhy) {
  common::HostPort closed;
  {
    auto sink = Sink::Start({});
    ASSERT_TRUE(sink) << sink.error().message;
    closed = (*sink)->endpoint();
  }
  CalibrationOptions options;
  options.target = Target::Peer(closed);
  options.methods = {Method::kCopy, Method::kMsgZerocopy};
  options.budget_seconds = 2;
  auto report = RunCalibration(options);
  ASSERT_FALSE(report);
  // The session's own code (unreachable): the agent counts peers by it.
  EXPECT_EQ(report.error().code, Errc::kFailed);
  EXPECT_EQ(report.error().peer, PeerFailure::kUnreachable);
  EXPECT_NE(report.error().message.find("no probe could run on path " + common::ToString(closed)),
            std::string::npos)
      << report.error().message;
  // A peer path is one session: the sink's absence is said once, for the path.
  EXPECT_NE(report.error().message.find("connect " + common::ToString(closed)), std::string::npos)
      << report.error().message;
  EXPECT_NE(report.error().message.find("ECONNREFUSED"), std::string::npos);
}

TEST(Calibration, RejectsBadOptionsNamingTheField) {
  CalibrationOptions options;
  options.min_size = 8192;
  options.max_size = 4096;
  auto report = RunCalibration(options);
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, Errc::kInvalidArgument);
  EXPECT_EQ(report.error().peer, std::nullopt) << "not a peer's failure";
  EXPECT_NE(report.error().message.find("max_size"), std::string::npos);

  options = {};
  options.budget_seconds = 0;
  const Result<void> bad_budget = ValidateCalibrationOptions(options);
  ASSERT_FALSE(bad_budget);
  EXPECT_EQ(bad_budget.error().code, Errc::kInvalidArgument);
  EXPECT_NE(bad_budget.error().message.find("budget"), std::string::npos);
  EXPECT_TRUE(ValidateCalibrationOptions({}));
}

// Sizing the discard refinement must leave bad sizes to the validation's
// sentence: a planner built from them would stop a build with asserts on
// its own assertion instead of the message.
TEST(Calibration, BadDiscardSizesAreReportedNotSized) {
  CalibrationOptions options;
  options.target.kind = TargetKind::kDiscard;
  options.min_size = 8192;
  options.max_size = 4096;
  const Result<void> valid = ValidateCalibrationOptions(options);
  ASSERT_FALSE(valid);
  EXPECT_NE(valid.error().message.find("max_size (4096) must be at least min_size"),
            std::string::npos);
  EXPECT_EQ(PlannerOptionsFor(options).refine_probes, calibrator::PlannerOptions{}.refine_probes);
  auto report = RunCalibration(options);
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, Errc::kInvalidArgument);
}

// Discard probes last 10 ms each, so the budget says how many fit: the
// refinement may use what the coarse grid leaves (the planner still stops
// at its resolution first). Other paths stretch their probes instead.
TEST(Calibration, TheDiscardBudgetSetsHowFarTheRefinementMayGo) {
  const calibrator::PlannerOptions defaults;
  CalibrationOptions options;
  options.target.kind = TargetKind::kDiscard;
  options.max_size = 65507;
  options.budget_seconds = 5;
  const calibrator::PlannerOptions five = PlannerOptionsFor(options);
  // Three sizes per octave, once each: 19 sizes from 1 KiB to 65507 bytes,
  // every gap within the 0.4 octave from which the local fit decides
  // where the curves are rejected.
  const std::vector<std::uint64_t> grid = calibrator::CoarseGrid(five);
  ASSERT_EQ(grid.size(), 19u);
  EXPECT_EQ(five.repeats, 1u);
  for (std::size_t i = 1; i < grid.size(); ++i) {
    EXPECT_LE(std::log2(static_cast<double>(grid[i]) / static_cast<double>(grid[i - 1])), 0.4)
        << grid[i - 1] << " to " << grid[i];
  }
  // 5 s * 0.85 / 11.5 ms = 369 probes; the coarse grid (19 sizes, 5
  // methods, 1 repeat) takes 95; each zerocopy method may use the 274 left
  // (the budget's end stops the calibration when they together would not
  // fit).
  EXPECT_EQ(five.refine_probes, 274u);
  EXPECT_EQ(five.max_repeats, 16u) << "a flat crossover may repeat its sizes more";

  options.budget_seconds = 1;
  EXPECT_EQ(PlannerOptionsFor(options).refine_probes, defaults.refine_probes)
      << "never below the planner's own";
  options.budget_seconds = 5;
  options.methods = {calibrator::Method::kCopy, calibrator::Method::kMsgZerocopy};
  EXPECT_EQ(PlannerOptionsFor(options).refine_probes, 369u - 38u)
      << "19 sizes, 2 methods, 1 repeat";

  CalibrationOptions loopback;
  loopback.budget_seconds = 30;
  EXPECT_EQ(PlannerOptionsFor(loopback).refine_probes, defaults.refine_probes);
  EXPECT_EQ(PlannerOptionsFor(loopback).max_repeats, defaults.max_repeats);
}

}  // namespace
}  // namespace zcal::probes::calibration_test

// The service with a fake calibration and fake host facts: the lifecycle
// rules, without probing.
#include "zcal/agent/service.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "test_util.h"
#include "zcal/agent/state.h"
#include "zcal/zcal.hpp"

namespace zcal::agent {
namespace {

using calibrator::Method;
using calibrator::MethodResult;
using calibrator::Reason;
using calibrator::Verdict;
using std::chrono::milliseconds;
using testing::TempDir;
using testing::WaitFor;

std::string UniqueSegment() {
  static std::atomic<int> counter{0};
  return "/zcal-service-test-" + std::to_string(getpid()) + "-" +
         std::to_string(counter++);
}

MethodResult Never(Method method) {
  MethodResult r;
  r.method = method;
  r.verdict = Verdict::kNever;
  r.reason = Reason::kKernelCopied;
  r.confidence = 1.0;
  return r;
}

probes::CalibrationReport Report(std::initializer_list<Method> methods) {
  probes::CalibrationReport report;
  calibrator::PathResult& path = report.analysis.paths["loopback"];
  path.path = "loopback";
  for (const Method m : methods) path.methods[m] = Never(m);
  report.duration_seconds = 0.01;
  report.probes_run = 1;
  return report;
}

// Runs a Service on its own thread; stops it on destruction.
class RunningService {
 public:
  RunningService(Config config, ServiceHooks hooks)
      : service_(std::move(config), "", std::move(hooks)),
        thread_([this] { status_ = service_.Run(); }) {}
  ~RunningService() {
    service_.Stop();
    thread_.join();
  }
  Service& service() { return service_; }
  /// Stops and returns the exit status.
  int StopAndWait() {
    service_.Stop();
    thread_.join();
    thread_ = std::thread([] {});
    return status_;
  }

 private:
  Service service_;
  int status_ = -1;
  std::thread thread_;
};

class ServiceTest : public ::testing::Test {
 protected:
  ServiceTest() {
    config_.segment.name = UniqueSegment();
    config_.segment.heartbeat = milliseconds(100);
    config_.metrics.listen.clear();
    config_.state_path = (dir_.path() / "state.json").string();
    config_.schedule.jitter = milliseconds(0);
    config_.schedule.fingerprint_poll = milliseconds(0);
    config_.budget.seconds_per_calibration = 1;
    config_.budget.seconds_per_hour = 3600;
    hooks_.lock_dir = dir_.path().string();
    hooks_.metrics = metrics_;
    hooks_.collect_host = [this](const Config&) {
      HostSnapshot snapshot;
      snapshot.fingerprint = fingerprint_;
      snapshot.info.fingerprint = fingerprint_;
      return snapshot;
    };
  }
  ~ServiceTest() override { shm_unlink(config_.segment.name.c_str()); }

  int calls() const { return calls_; }

  TempDir dir_;
  Config config_;
  ServiceHooks hooks_;
  std::shared_ptr<Metrics> metrics_ = std::make_shared<Metrics>("test");
  std::atomic<std::uint64_t> fingerprint_{1};
  std::atomic<int> calls_{0};
};

bool Contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

TEST_F(ServiceTest, PublishesSavedStateAsStaleBeforeTheFirstProbe) {
  AgentState saved;
  saved.saved_at_ns = 1;
  saved.fingerprint = 7;
  saved.paths["loopback"][Method::kMsgZerocopy] =
      MethodState{Never(Method::kMsgZerocopy), 5, std::nullopt};
  ASSERT_TRUE(SaveState(saved, config_.state_path));

  std::mutex mutex;
  std::optional<zcal_info> seen;
  hooks_.calibrate = [&](const probes::CalibrationOptions&,
                         const auto&) -> Result<probes::CalibrationReport> {
    auto segment = client::Segment::Open(config_.segment.name.c_str());
    if (segment) {
      auto info = segment->Info();
      std::lock_guard lock(mutex);
      if (info) seen = *info;
    }
    ++calls_;
    return Report({Method::kMsgZerocopy});
  };
  RunningService running(config_, hooks_);
  ASSERT_TRUE(WaitFor([&] { return calls() == 1; }, milliseconds(10'000)));
  {
    std::lock_guard lock(mutex);
    ASSERT_TRUE(seen) << "the segment did not exist when the probe ran";
    EXPECT_TRUE(seen->flags & ZCAL_FLAG_STALE);
    EXPECT_EQ(seen->count, 2u) << "loopback and host default";
    EXPECT_EQ(seen->agent_pid, static_cast<std::uint32_t>(getpid()));
  }
  ASSERT_TRUE(WaitFor(
      [&] { return Contains(metrics_->Text(), "zcal_published_stale 0"); },
      milliseconds(10'000)));
  auto segment = client::Segment::Open(config_.segment.name.c_str());
  ASSERT_TRUE(segment) << segment.detail();
  auto info = segment->Info();
  ASSERT_TRUE(info);
  EXPECT_FALSE(info->flags & ZCAL_FLAG_STALE);
}

TEST_F(ServiceTest, HeartbeatsContinueWhileProbing) {
  std::atomic<std::uint64_t> before{0};
  std::atomic<std::uint64_t> during{0};
  hooks_.calibrate = [&](const probes::CalibrationOptions&,
                         const auto&) -> Result<probes::CalibrationReport> {
    const auto heartbeat = [&]() -> std::uint64_t {
      auto segment = client::Segment::Open(config_.segment.name.c_str());
      if (!segment) return 0;
      auto info = segment->Info();
      return info ? info->heartbeat_ns : 0;
    };
    before = heartbeat();
    // Six heartbeat periods of probing.
    std::this_thread::sleep_for(milliseconds(600));
    during = heartbeat();
    ++calls_;
    return Report({Method::kMsgZerocopy});
  };
  RunningService running(config_, hooks_);
  ASSERT_TRUE(WaitFor([&] { return calls() == 1; }, milliseconds(10'000)));
  EXPECT_NE(before.load(), 0u);
  EXPECT_GT(during.load(), before.load())
      << "the event loop kept the heartbeat going during the probe";
}

TEST_F(ServiceTest, StopCancelsARunningCalibrationAndSavesTheState) {
  AgentState saved;
  saved.saved_at_ns = 1;
  saved.paths["loopback"][Method::kMsgZerocopy] =
      MethodState{Never(Method::kMsgZerocopy), 5, std::nullopt};
  ASSERT_TRUE(SaveState(saved, config_.state_path));
  hooks_.calibrate = [&](const probes::CalibrationOptions& options,
                         const auto&) -> Result<probes::CalibrationReport> {
    ++calls_;
    // Like the probes: return within about a second of the cancel flag.
    while (!options.cancel->load()) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    probes::CalibrationReport report = Report({});
    report.cancelled = true;
    return report;
  };
  RunningService running(config_, hooks_);
  ASSERT_TRUE(WaitFor([&] { return calls() == 1; }, milliseconds(10'000)));
  const std::uint64_t before = static_cast<std::uint64_t>(
      std::chrono::system_clock::now().time_since_epoch().count());
  EXPECT_EQ(running.StopAndWait(), 0);
  const std::string text = metrics_->Text();
  EXPECT_TRUE(Contains(text, "zcal_calibrations_total{result=\"cancelled\"} 1"))
      << text;
  const Result<AgentState> state = LoadState(config_.state_path);
  ASSERT_TRUE(state) << state.error().message;
  EXPECT_GE(state->saved_at_ns, before);
  EXPECT_EQ(state->paths.at("loopback").size(), 1u);
  auto segment = client::Segment::Open(config_.segment.name.c_str());
  ASSERT_TRUE(segment);
  auto info = segment->Info();
  ASSERT_TRUE(info);
  EXPECT_GE(info->heartbeat_ns, before) << "a last heartbeat at stop";
}

TEST_F(ServiceTest, KeepsServingAfterAFailedCalibrationAndRetries) {
  config_.schedule.retry_after_failure = milliseconds(1000);
  hooks_.calibrate = [&](const probes::CalibrationOptions&,
                         const auto&) -> Result<probes::CalibrationReport> {
    if (calls_++ == 0) {
      return Fail(Errc::kUnsupported, "no probe could run: test");
    }
    return Report({Method::kMsgZerocopy, Method::kUringSendZc});
  };
  RunningService running(config_, hooks_);
  ASSERT_TRUE(WaitFor([&] { return calls() == 2; }, milliseconds(10'000)));
  ASSERT_TRUE(WaitFor(
      [&] {
        return Contains(metrics_->Text(),
                        "zcal_calibrations_total{result=\"success\"} 1");
      },
      milliseconds(10'000)));
  const std::string text = metrics_->Text();
  EXPECT_TRUE(Contains(text, "zcal_calibrations_total{result=\"failed\"} 1"));
  EXPECT_TRUE(Contains(text, "zcal_calibration_triggers_total{trigger=\"retry\"} 1"));
  auto segment = client::Segment::Open(config_.segment.name.c_str());
  ASSERT_TRUE(segment);
  EXPECT_EQ(segment->Info()->count, 4u);
}

TEST_F(ServiceTest, RecalibratesWhenTheFingerprintChanges) {
  config_.schedule.fingerprint_poll = milliseconds(200);
  hooks_.calibrate = [&](const probes::CalibrationOptions&,
                         const auto&) -> Result<probes::CalibrationReport> {
    ++calls_;
    return Report({Method::kMsgZerocopy});
  };
  RunningService running(config_, hooks_);
  ASSERT_TRUE(WaitFor([&] { return calls() == 1; }, milliseconds(10'000)));
  // Several polls with the same facts: no calibration.
  std::this_thread::sleep_for(milliseconds(700));
  EXPECT_EQ(calls(), 1);
  fingerprint_ = 2;
  ASSERT_TRUE(WaitFor([&] { return calls() == 2; }, milliseconds(10'000)));
  const std::string text = metrics_->Text();
  EXPECT_TRUE(Contains(text, "zcal_fingerprint_changes_total 1"));
  EXPECT_TRUE(
      Contains(text, "zcal_calibration_triggers_total{trigger=\"fingerprint\"} 1"));
}

TEST_F(ServiceTest, OnDemandCalibrationRespectsTheHourlyBudget) {
  config_.budget.seconds_per_calibration = 0.5;
  config_.budget.seconds_per_hour = 0.5;
  hooks_.calibrate = [&](const probes::CalibrationOptions& options,
                         const auto&) -> Result<probes::CalibrationReport> {
    ++calls_;
    EXPECT_DOUBLE_EQ(options.budget_seconds, 0.5);
    std::this_thread::sleep_for(milliseconds(100));
    return Report({Method::kMsgZerocopy});
  };
  RunningService running(config_, hooks_);
  ASSERT_TRUE(WaitFor(
      [&] {
        return Contains(metrics_->Text(),
                        "zcal_calibrations_total{result=\"success\"} 1");
      },
      milliseconds(10'000)));
  running.service().CalibrateNow();
  // Deferred: the 0.1 s used plus the 0.5 s needed exceed the hour's 0.5 s.
  std::this_thread::sleep_for(milliseconds(800));
  EXPECT_EQ(calls(), 1);
  EXPECT_FALSE(Contains(metrics_->Text(),
                        "zcal_next_calibration_timestamp_seconds 0\n"))
      << "the deferred calibration is scheduled";
}

TEST_F(ServiceTest, ASecondServiceOnTheSameSegmentDoesNotStart) {
  hooks_.calibrate = [&](const probes::CalibrationOptions&,
                         const auto&) -> Result<probes::CalibrationReport> {
    ++calls_;
    return Report({Method::kMsgZerocopy});
  };
  RunningService first(config_, hooks_);
  ASSERT_TRUE(WaitFor([&] { return calls() == 1; }, milliseconds(10'000)));
  Config second_config = config_;
  second_config.state_path = (dir_.path() / "other.json").string();
  Service second(second_config, "", hooks_);
  EXPECT_EQ(second.Run(), 1);
  EXPECT_EQ(calls(), 1);
}

}  // namespace
}  // namespace zcal::agent

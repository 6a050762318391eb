// The service with a fake calibration and fake host facts: the lifecycle
// rules, without probing. The rules themselves are tested on a fake clock in
// scheduler_test.cc; this file proves the wiring. Every wait is on a
// condition (a log line, a metric, a call count, the segment's heartbeat);
// the bounds only turn a hang into a failure.
#include "zcal/agent/service/service.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "test_util.h"
#include "zcal/agent/service/instance_lock.h"
#include "zcal/agent/state/state.h"
#include "zcal/zcal.hpp"
#include "zcal/testing/test_data.h"
#include "zcal/testing/path_ids.h"

namespace zcal::agent::service_test {
namespace {

using zcal::testing::ConfiguredPath;
using zcal::testing::PeerPath;

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

// The log lines of the default logger, for tests that wait for one.
class LogLines : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::size_t Count(const std::string& fragment) {
    const std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const std::string& line : lines_) {
      if (line.find(fragment) != std::string::npos) ++n;
    }
    return n;
  }
  std::string All() {
    const std::lock_guard lock(mutex_);
    std::string all;
    for (const std::string& line : lines_) all += line + "\n";
    return all;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    lines_.emplace_back(msg.payload.data(), msg.payload.size());
  }
  void flush_() override {}

 private:
  std::vector<std::string> lines_;
};

// Runs a Service on its own thread; stops it on destruction.
class RunningService {
 public:
  RunningService(Config config, ServiceHooks hooks,
                 std::string config_path = "")
      : service_(std::move(config), std::move(config_path), std::move(hooks)),
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
    // One path: the fake calibration counts one call per path.
    config_.paths = {PathConfig{}};
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
    // A private directory: the host's /dev/shm is not the tests'.
    config_.apps.directory = (dir_.path() / "apps").string();
    std::filesystem::create_directory(config_.apps.directory);
    hooks_.collect_host = [this](const Config&) {
      ++host_reads_;
      HostInfo snapshot;
      snapshot.facts.fingerprint = fingerprint_;
      return snapshot;
    };
  }
  void SetUp() override {
    // No service thread runs yet: the logger's sinks may change.
    spdlog::default_logger()->sinks().push_back(log_);
  }
  void TearDown() override {
    auto& sinks = spdlog::default_logger()->sinks();
    std::erase(sinks, log_);
  }
  // After the test body's services stopped: a running agent heals (re-creates)
  // a segment removed under it.
  ~ServiceTest() override {
    shm_unlink(config_.segment.name.c_str());
    for (const std::string& name : other_segments_) shm_unlink(name.c_str());
  }

  /// A second segment name, removed with the fixture's.
  std::string OtherSegment() { return other_segments_.emplace_back(UniqueSegment()); }

  int calls() const { return calls_; }
  bool WaitForLog(const std::string& fragment, std::size_t count = 1) {
    return WaitFor([&] { return log_->Count(fragment) >= count; },
                   milliseconds(10'000));
  }

  TempDir dir_;
  Config config_;
  ServiceHooks hooks_;
  std::shared_ptr<Metrics> metrics_ = std::make_shared<Metrics>("test");
  std::atomic<std::uint64_t> fingerprint_{1};
  std::atomic<int> calls_{0};
  std::atomic<int> host_reads_{0};
  std::shared_ptr<LogLines> log_ = std::make_shared<LogLines>();
  std::vector<std::string> other_segments_;
};

// The value of an unlabelled series in the text format; NaN when absent.
double MetricValue(const std::string& text, const std::string& name) {
  const std::size_t at = text.find("\n" + name + " ");
  if (at == std::string::npos) return std::nan("");
  return std::stod(text.substr(at + name.size() + 2));
}

bool Contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

TEST_F(ServiceTest, PublishesSavedStateAsStaleBeforeTheFirstProbe) {
  AgentState saved;
  saved.saved_at_ns = 1;
  saved.fingerprint = 7;
  saved.paths[ConfiguredPath("loopback")][Method::kMsgZerocopy] =
      MethodState{Never(Method::kMsgZerocopy), 5, std::nullopt, std::nullopt};
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
    EXPECT_EQ(seen->count, 1u) << "loopback only: never a host default from it";
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

MethodResult Threshold(Method method, std::uint64_t bytes) {
  MethodResult r;
  r.method = method;
  r.verdict = Verdict::kThreshold;
  r.threshold_bytes = bytes;
  r.confidence = 0.9;
  return r;
}

// What the probes report for the discard path calibrated at classes 1, 4
// and stream: msg_zerocopy decided at each, uring_send_zc at stream only
// (its class 4 not probed: its neighbours answer).
probes::CalibrationReport DiscardClassesReport(const probes::CalibrationOptions& o) {
  probes::CalibrationReport report;
  const std::map<std::uint32_t, std::uint64_t> msg = {{1, 65536}, {4, 49152}, {0, 24576}};
  for (const std::uint32_t depth : o.depths) {
    probes::ClassAnalysis c;
    c.depth = depth;
    calibrator::PathResult& path = c.analysis.paths["discard"];
    path.path = "discard";
    path.methods[Method::kMsgZerocopy] = Threshold(Method::kMsgZerocopy, msg.at(depth));
    if (depth == calibrator::kStreamDepth) {
      path.methods[Method::kUringSendZc] = Threshold(Method::kUringSendZc, 16384);
      report.analysis = c.analysis;
    } else if (depth == 4) {
      c.not_probed[Method::kUringSendZc] = "depths 1 and stream agree";
    } else {
      path.methods[Method::kUringSendZc] = Threshold(Method::kUringSendZc, 32768);
    }
    report.classes.push_back(std::move(c));
  }
  report.duration_seconds = 0.01;
  report.probes_run = 1;
  return report;
}

TEST_F(ServiceTest, PublishesTheDepthClassesOfTheDiscardPathForLibzcalAndTheMetrics) {
  config_.paths = {PathConfig{"discard", probes::TargetKind::kDiscard}};
  config_.depths = {1, 4, calibrator::kStreamDepth};
  hooks_.collect_host = [](const Config&) {
    HostInfo snapshot;
    snapshot.facts.fingerprint = 1;
    probes::InterfaceFacts nic;
    nic.name = "eth3";
    nic.driver = "virtio_net";  // in no IOMMU group: the discard estimate stands
    snapshot.host_default_nic.facts = nic;
    return snapshot;
  };
  std::mutex mutex;
  std::vector<std::uint32_t> asked;
  hooks_.calibrate = [&](const probes::CalibrationOptions& o,
                         const auto&) -> Result<probes::CalibrationReport> {
    {
      std::lock_guard lock(mutex);
      asked = o.depths;
    }
    ++calls_;
    return DiscardClassesReport(o);
  };
  RunningService running(config_, hooks_);
  ASSERT_TRUE(WaitForLog("discard/uring_send_zc@1: threshold 32KiB, published"))
      << log_->All();
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(asked, config_.depths);
  }

  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(config_.segment.name.c_str(), &h), 0) << zcal_error_detail();
  zcal_key key;
  ASSERT_EQ(zcal_key_from_string("198.18.0.9", nullptr, &key), 0);
  const auto lookup = [&](std::uint8_t method, std::uint32_t depth) {
    zcal_result r{};
    EXPECT_EQ(zcal_lookup_depth(h, &key, method, depth, &r), 0) << zcal_error_detail();
    return std::tuple(r.threshold_bytes, r.depth_class, r.depth_fallback, r.estimated);
  };
  // The host default, estimated from the discard path, per class.
  EXPECT_EQ(lookup(ZCAL_METHOD_MSG_ZEROCOPY, 1), std::tuple(65536u, ZCAL_DEPTH_1, 0, 1));
  EXPECT_EQ(lookup(ZCAL_METHOD_MSG_ZEROCOPY, 6), std::tuple(49152u, ZCAL_DEPTH_4, 0, 1));
  EXPECT_EQ(lookup(ZCAL_METHOD_MSG_ZEROCOPY, 64), std::tuple(24576u, ZCAL_DEPTH_STREAM, 0, 1));
  EXPECT_EQ(lookup(ZCAL_METHOD_URING_SEND_ZC, 1), std::tuple(32768u, ZCAL_DEPTH_1, 0, 1));
  // Class 4 of uring_send_zc was not probed: the stream entry answers.
  EXPECT_EQ(lookup(ZCAL_METHOD_URING_SEND_ZC, 4), std::tuple(16384u, ZCAL_DEPTH_STREAM, 1, 1));
  zcal_info info;
  ASSERT_EQ(zcal_read_info(h, &info), 0);
  std::size_t discard_entries = 0;
  for (std::uint32_t i = 0; i < info.count; ++i) {
    zcal_shm_entry e;
    ASSERT_EQ(zcal_read_entry(h, i, &e), 0);
    if (e.scope == ZCAL_SCOPE_DISCARD) ++discard_entries;
  }
  EXPECT_EQ(discard_entries, 5u) << "msg_zerocopy at 1, 4, stream; uring_send_zc at 1, stream";
  zcal_close(h);

  const std::string text = metrics_->Text();
  for (const char* series :
       {"zcal_threshold_bytes{path=\"discard\",method=\"msg_zerocopy\",depth=\"4\"} 49152",
        "zcal_threshold_bytes{path=\"discard\",method=\"uring_send_zc\",depth=\"1\"} 32768",
        "zcal_measured_threshold_bytes{path=\"discard\",method=\"msg_zerocopy\",depth=\"1\"} "
        "65536",
        "zcal_host_default_threshold_bytes{method=\"msg_zerocopy\",depth=\"1\",estimated=\"1\"} "
        "65536"}) {
    EXPECT_TRUE(Contains(text, series)) << series << "\n" << text;
  }
  EXPECT_FALSE(Contains(text, "method=\"uring_send_zc\",depth=\"4\"")) << text;
}

TEST_F(ServiceTest, AClassNoLongerProbedLeavesTheStateSayingWhyOnce) {
  config_.paths = {PathConfig{"discard", probes::TargetKind::kDiscard}};
  config_.depths = {4, calibrator::kStreamDepth};
  config_.schedule.interval = milliseconds(1000);
  AgentState saved;
  saved.saved_at_ns = 1;
  saved.fingerprint = 1;
  saved.paths[ConfiguredPath("discard")][Method::kUringSendZc] =
      MethodState{Threshold(Method::kUringSendZc, 16384), 5, std::nullopt, std::nullopt};
  saved.paths[ConfiguredPath("discard")][{Method::kUringSendZc, DepthClass::k4}] =
      MethodState{Threshold(Method::kUringSendZc, 65536), 5, std::nullopt, std::nullopt};
  ASSERT_TRUE(SaveState(saved, config_.state_path));
  hooks_.calibrate = [&](const probes::CalibrationOptions& o,
                         const auto&) -> Result<probes::CalibrationReport> {
    ++calls_;
    return DiscardClassesReport(o);
  };
  RunningService running(config_, hooks_);
  const std::string dropped =
      "discard/uring_send_zc@4: not probed this round (depths 1 and stream agree); dropped";
  ASSERT_TRUE(WaitForLog(dropped)) << log_->All();
  ASSERT_TRUE(WaitFor([&] { return calls() >= 2; }, milliseconds(10'000)));
  ASSERT_TRUE(WaitForLog("discard/msg_zerocopy@4: threshold 48KiB, confirmed"));
  EXPECT_EQ(log_->Count(dropped), 1u) << "said once\n" << log_->All();
  const Result<AgentState> state = LoadState(config_.state_path);
  ASSERT_TRUE(state) << state.error().message;
  EXPECT_FALSE(
      state->paths.at(ConfiguredPath("discard")).contains({Method::kUringSendZc, DepthClass::k4}));
  EXPECT_TRUE(state->paths.at(ConfiguredPath("discard")).contains(Method::kUringSendZc));
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
    // Probe until the event loop has beaten again (every 100 ms); a loop
    // that waited for the probe would never get there.
    WaitFor([&] { return heartbeat() > before; }, milliseconds(10'000));
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

// A report object of this process: one slot of one scope (host default)
// and two methods, `sends` zerocopy answers of msg_zerocopy at stream.
void WriteReport(const std::string& path, const char* name, std::uint64_t sends) {
  zcal_report_header h{};
  h.magic = ZCAL_REPORT_MAGIC;
  h.abi_major = ZCAL_REPORT_ABI_MAJOR;
  h.header_size = ZCAL_REPORT_HEADER_SIZE_V1;
  h.slot_header_size = ZCAL_REPORT_SLOT_HEADER_SIZE_V1;
  h.cell_size = ZCAL_REPORT_CELL_SIZE_V1;
  h.scopes = 1;
  h.methods = 2;
  h.slot_size = h.slot_header_size + 2 * h.cell_size;
  h.size_buckets = ZCAL_REPORT_SIZE_BUCKETS;
  h.depth_classes = ZCAL_DEPTH_CLASSES;
  h.slots = 1;
  h.slots_used = 1;
  h.owner_pid = static_cast<std::uint32_t>(getpid());
  h.total_size = h.header_size + h.slot_size;
  h.generation = 1;
  std::snprintf(h.name, sizeof h.name, "%s", name);
  std::vector<unsigned char> bytes(h.total_size);
  std::memcpy(bytes.data(), &h, sizeof h);
  zcal_report_cell cell{};
  cell.answers[3][1][ZCAL_REPORT_BY_THRESHOLD] = sends;
  cell.bytes[1] = sends * 65536;
  cell.sizes[16] = sends;
  std::memcpy(bytes.data() + h.header_size + h.slot_header_size + h.cell_size, &cell, sizeof cell);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

TEST_F(ServiceTest, ReadsTheApplicationsReportsAtEachHeartbeatForTheMetricsAndTheHook) {
  WriteReport(config_.apps.directory + "/zcal-report-1", "svc-app", 5);
  std::atomic<int> reads{0};
  std::atomic<std::size_t> kept{0};
  std::atomic<std::uint64_t> window_sends{0};
  hooks_.apps_read = [&](const AppHistory& history) {
    ++reads;
    kept = history.size();
    std::uint64_t sends = 0;
    const AppsWindow recent = history.Recent();
    if (const auto it = recent.apps.find("svc-app"); it != recent.apps.end()) {
      for (const auto& [key, counters] : it->second) sends += counters.Sends();
    }
    window_sends = sends;
  };
  RunningService running(config_, hooks_);
  const std::string series =
      "zcal_app_sends_total{app=\"svc-app\",decision=\"zerocopy\",depth=\"stream\","
      "method=\"msg_zerocopy\"} ";
  ASSERT_TRUE(WaitFor([&] { return Contains(metrics_->Text(), series + "5\n"); },
                      milliseconds(10'000)))
      << metrics_->Text();
  ASSERT_TRUE(WaitFor([&] { return reads >= 3; }, milliseconds(10'000)));
  EXPECT_GE(kept.load(), 2u);
  // More sent: the next heartbeat's read has it, and the window counts the
  // difference from the first read.
  WriteReport(config_.apps.directory + "/zcal-report-1", "svc-app", 12);
  ASSERT_TRUE(WaitFor([&] { return Contains(metrics_->Text(), series + "12\n"); },
                      milliseconds(10'000)))
      << metrics_->Text();
  EXPECT_TRUE(WaitFor([&] { return window_sends == 7; }, milliseconds(10'000)))
      << window_sends.load();
}

TEST_F(ServiceTest, StopCancelsARunningCalibrationAndSavesTheState) {
  AgentState saved;
  saved.saved_at_ns = 1;
  saved.paths[ConfiguredPath("loopback")][Method::kMsgZerocopy] =
      MethodState{Never(Method::kMsgZerocopy), 5, std::nullopt, std::nullopt};
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
  EXPECT_EQ(state->paths.at(ConfiguredPath("loopback")).size(), 1u);
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
  EXPECT_EQ(segment->Info()->count, 2u);
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
  // Polls with the same facts: no calibration. A poll that found a change
  // would have started one before the loop reads the facts again, so once
  // three more reads happened, the first two polls are known to have
  // decided.
  const int reads = host_reads_;
  ASSERT_TRUE(WaitFor([&] { return host_reads_ >= reads + 3; },
                      milliseconds(10'000)));
  EXPECT_FALSE(Contains(metrics_->Text(), "trigger=\"fingerprint\"} 1"));
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
    // Spends budget (not a synchronization: any duration above 0 would do).
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
  const double now = static_cast<double>(std::time(nullptr));
  running.service().CalibrateNow();
  // Deferred: the 0.1 s used plus the 0.5 s needed exceed the hour's 0.5 s.
  ASSERT_TRUE(WaitForLog("the signal calibration waits")) << log_->All();
  EXPECT_EQ(calls(), 1);
  // Due when the first calibration leaves the hour window, not after the
  // 6 h interval.
  const double next = MetricValue(metrics_->Text(),
                                  "zcal_next_calibration_timestamp_seconds");
  EXPECT_GT(next, now + 3500);
  EXPECT_LT(next, now + 3700);
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

TEST_F(ServiceTest, AFingerprintChangeWhileCalibratingIsFollowedByAnotherCalibration) {
  config_.schedule.fingerprint_poll = milliseconds(200);
  hooks_.calibrate = [&](const probes::CalibrationOptions&,
                         const auto&) -> Result<probes::CalibrationReport> {
    if (calls_++ == 0) {
      // The host changes while this calibration probes.
      fingerprint_ = 2;
      WaitForLog("another follows it because the host facts changed");
    }
    return Report({Method::kMsgZerocopy});
  };
  RunningService running(config_, hooks_);
  ASSERT_TRUE(WaitFor([&] { return calls() == 2; }, milliseconds(10'000)))
      << log_->All();
  ASSERT_TRUE(WaitFor(
      [&] {
        return Contains(metrics_->Text(),
                        "zcal_calibrations_total{result=\"success\"} 2");
      },
      milliseconds(10'000)));
  EXPECT_TRUE(Contains(metrics_->Text(),
                       "zcal_calibration_triggers_total{trigger=\"fingerprint\"} 1"));
}

TEST_F(ServiceTest, CalibrateNowWhileCalibratingIsIgnored) {
  RunningService* running = nullptr;
  std::atomic<bool> ready{false};
  hooks_.calibrate = [&](const probes::CalibrationOptions&,
                         const auto&) -> Result<probes::CalibrationReport> {
    if (calls_++ == 0) {
      WaitFor([&] { return ready.load(); }, milliseconds(10'000));
      running->service().CalibrateNow();
      WaitForLog("a calibration is already running; request ignored");
    }
    return Report({Method::kMsgZerocopy});
  };
  RunningService service(config_, hooks_);
  running = &service;
  ready = true;
  ASSERT_TRUE(WaitFor(
      [&] {
        return Contains(metrics_->Text(),
                        "zcal_calibrations_total{result=\"success\"} 1");
      },
      milliseconds(10'000)));
  EXPECT_EQ(log_->Count("request ignored"), 1u) << log_->All();
  // The request was dropped, not queued: the next is the regular one, 6 h on.
  const double next = MetricValue(metrics_->Text(),
                                  "zcal_next_calibration_timestamp_seconds");
  EXPECT_GT(next, static_cast<double>(std::time(nullptr)) + 5 * 3600);
  EXPECT_EQ(calls(), 1);
}

TEST_F(ServiceTest, AStopWhoseProbeIgnoresTheCancelStillEndsAtTheGuard) {
  AgentState saved;
  saved.saved_at_ns = 1;
  saved.paths[ConfiguredPath("loopback")][Method::kMsgZerocopy] =
      MethodState{Never(Method::kMsgZerocopy), 5, std::nullopt, std::nullopt};
  ASSERT_TRUE(SaveState(saved, config_.state_path));
  std::atomic<bool> release{false};
  std::atomic<bool> returned{false};
  hooks_.calibrate = [&](const probes::CalibrationOptions&,
                         const auto&) -> Result<probes::CalibrationReport> {
    ++calls_;
    // A probe stuck in the kernel: deaf to the cancel flag.
    while (!release) std::this_thread::yield();
    returned = true;
    return Report({Method::kMsgZerocopy});
  };
  {
    RunningService running(config_, hooks_);
    ASSERT_TRUE(WaitFor([&] { return calls() == 1; }, milliseconds(10'000)));
    const std::uint64_t before = static_cast<std::uint64_t>(
        std::chrono::system_clock::now().time_since_epoch().count());
    // Run returns after kStopGuard (5 s) with the probe still stuck.
    EXPECT_EQ(running.StopAndWait(), 0);
    EXPECT_FALSE(returned);
    EXPECT_EQ(log_->Count("the calibration did not stop within 5 s"), 1u)
        << log_->All();
    const Result<AgentState> state = LoadState(config_.state_path);
    ASSERT_TRUE(state);
    EXPECT_GE(state->saved_at_ns, before) << "the state was saved anyway";
    release = true;
  }
  EXPECT_TRUE(returned) << "the service's end joined the worker";
}

TEST_F(ServiceTest, AReloadToASegmentAnotherAgentHoldsIsRejected) {
  hooks_.calibrate = [&](const probes::CalibrationOptions&,
                         const auto&) -> Result<probes::CalibrationReport> {
    ++calls_;
    return Report({Method::kMsgZerocopy});
  };
  const std::string other = OtherSegment();
  auto holder = InstanceLock::Acquire(other, dir_.path().string());
  ASSERT_TRUE(holder);
  const std::filesystem::path file = dir_.path() / "agent.yaml";
  const auto write_config = [&](const std::string& segment) {
    std::ofstream(file) << "paths: [{name: loopback, type: loopback}]\n"
                        << "segment:\n  name: " << segment
                        << "\n  heartbeat: 100ms\nmetrics:\n  listen: \"\"\n"
                        << "state:\n  path: " << config_.state_path << "\n"
                        << "schedule:\n  jitter: 0\n  fingerprint_poll: 0\n";
  };
  write_config(config_.segment.name);
  Result<Config> loaded = LoadConfigFile(file.string());
  ASSERT_TRUE(loaded) << loaded.error().message;
  RunningService running(*loaded, hooks_, file.string());
  ASSERT_TRUE(WaitFor([&] { return calls() == 1; }, milliseconds(10'000)));

  write_config(other);
  running.service().Reload();
  ASSERT_TRUE(WaitForLog("configuration reload rejected")) << log_->All();
  EXPECT_EQ(log_->Count("already publishes segment " + other), 1u) << log_->All();
  EXPECT_TRUE(Contains(metrics_->Text(), "zcal_config_reloads_total{result=\"failure\"} 1"));
  auto segment = client::Segment::Open(config_.segment.name.c_str());
  ASSERT_TRUE(segment) << "still publishing where it did";
  const std::uint64_t beat = segment->Info()->heartbeat_ns;
  EXPECT_TRUE(WaitFor([&] { return segment->Info()->heartbeat_ns > beat; },
                      milliseconds(10'000)));

  holder->reset();
  running.service().Reload();
  ASSERT_TRUE(WaitForLog("configuration reloaded from")) << log_->All();
  EXPECT_EQ(log_->Count("changed: segment"), 1u) << log_->All();
  EXPECT_FALSE(client::Segment::Open(config_.segment.name.c_str()))
      << "the old segment is removed";
  auto moved = client::Segment::Open(other.c_str());
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->Info()->count, 1u);
}

// A reload that moves the host root reads the host anew the way every other
// read does: the NICs kept peers are reached through stay described, so
// the fleet's per-interface classes do not lose them until the next round.
TEST_F(ServiceTest, AReloadOfTheHostRootKeepsThePeersNicsDescribed) {
  const PathId peer = PeerPath("198.18.0.9:7070");
  AgentState saved;
  saved.saved_at_ns = 1;
  saved.fingerprint = fingerprint_;  // unchanged host: no calibration at start
  saved.last_success_ns = 1;
  saved.paths[peer][Method::kMsgZerocopy] =
      MethodState{Never(Method::kMsgZerocopy), 5, std::nullopt, std::nullopt};
  saved.peers[peer] = PeerRecord{"eth1", 1, 1, PeerOutcome::kSuccess};
  ASSERT_TRUE(SaveState(saved, config_.state_path));
  namespace fs = std::filesystem;
  const fs::path data = zcal::testing::TestData() / "sysfs" / "pci-host";
  const fs::path copy = dir_.path() / "host";
  fs::copy(data, copy, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const fs::path file = dir_.path() / "agent.yaml";
  const auto write_config = [&](const fs::path& root) {
    std::ofstream(file) << "paths: [{name: loopback, type: loopback}]\n"
                        << "segment:\n  name: " << config_.segment.name
                        << "\n  heartbeat: 100ms\nmetrics:\n  listen: \"\"\n"
                        << "state:\n  path: " << config_.state_path << "\n"
                        << "host:\n  root: " << root.string() << "\n"
                        << "peers:\n  static: [198.18.0.9:7070]\n"
                        << "schedule:\n  at_startup: false\n  jitter: 0\n"
                        << "  fingerprint_poll: 0\n";
  };
  write_config(data);
  Result<Config> loaded = LoadConfigFile(file.string());
  ASSERT_TRUE(loaded) << loaded.error().message;
  RunningService running(*loaded, hooks_, file.string());
  const auto described = [&] {
    return Contains(metrics_->Text(), "path=\"interface/eth1\"");
  };
  ASSERT_TRUE(WaitFor(described, milliseconds(10'000))) << metrics_->Text();

  write_config(copy);
  running.service().Reload();
  ASSERT_TRUE(WaitForLog("configuration reloaded from")) << log_->All();
  EXPECT_EQ(log_->Count("changed: host root"), 1u) << log_->All();
  EXPECT_TRUE(described()) << metrics_->Text();
  running.service().Reload();  // the same file again
  ASSERT_TRUE(WaitForLog("nothing changed")) << log_->All();
  EXPECT_EQ(calls(), 0);
}

}  // namespace
}  // namespace zcal::agent::service_test

#include "zcal/agent/metrics.h"

#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include <gtest/gtest.h>

#include "test_util.h"

namespace zcal::agent {
namespace {

using calibrator::Method;
using calibrator::MethodResult;
using calibrator::Reason;
using calibrator::Sample;
using calibrator::Verdict;
using testing::HttpGet;
using testing::RunCommand;
using testing::TempDir;
using testing::WriteFile;

bool Contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

MethodState Published(Method method, Verdict verdict,
                      std::optional<std::uint64_t> threshold,
                      Reason reason = Reason::kNone) {
  MethodState s;
  s.published.method = method;
  s.published.verdict = verdict;
  s.published.threshold_bytes = threshold;
  s.published.reason = reason;
  s.published.confidence = 0.5;
  s.measured_at_ns = 2'000'000'000;
  return s;
}

Sample MakeSample(Method method, std::uint64_t size, std::uint64_t copied,
                  std::uint64_t completions) {
  Sample s;
  s.path = "loopback";
  s.method = method;
  s.size_bytes = size;
  s.bytes = 1'000'000'000;
  s.wall_ns = 1'000'000'000;
  s.cpu_ns = 500'000'000;
  s.zc_copied = copied;
  s.zc_completions = completions;
  return s;
}

std::shared_ptr<Metrics> Populated() {
  auto metrics = std::make_shared<Metrics>("9.9.9");
  std::map<std::string, std::map<Method, MethodState>> paths;
  paths["loopback"][Method::kMsgZerocopy] =
      Published(Method::kMsgZerocopy, Verdict::kNever, std::nullopt,
                Reason::kKernelCopied);
  paths["loopback"][Method::kUringSendZc] =
      Published(Method::kUringSendZc, Verdict::kThreshold, 16384);
  paths["loopback"][Method::kUringSendZcFixed] = Published(
      Method::kUringSendZcFixed, Verdict::kInconclusive, std::nullopt,
      Reason::kNoisy);
  metrics->SetPublished(paths, true);
  std::vector<Sample> samples = {
      MakeSample(Method::kCopy, 4096, 0, 0),
      MakeSample(Method::kMsgZerocopy, 4096, 3, 4),
      MakeSample(Method::kMsgZerocopy, 65536, 1, 4),
  };
  Sample failed = MakeSample(Method::kUringSendZcFixed, 4096, 0, 0);
  failed.status = calibrator::SampleStatus::kUnsupported;
  samples.push_back(failed);
  calibrator::PathResult fresh;
  fresh.path = "loopback";
  MethodResult measured;
  measured.verdict = Verdict::kThreshold;
  measured.threshold_bytes = 32768;
  fresh.methods[Method::kUringSendZc] = measured;
  metrics->SetLastCalibration("loopback", samples, fresh);
  metrics->RecordProbeFailures("loopback", samples);
  metrics->RecordCalibration(CalibrationResult::kSuccess, 3.0, 5'000'000'000);
  metrics->RecordCalibration(CalibrationResult::kFailed, 0.2, 6'000'000'000);
  metrics->RecordTrigger(CalibrationTrigger::kSignal);
  metrics->RecordReload(true);
  metrics->RecordReload(false);
  metrics->RecordReload(false);
  metrics->RecordPublish(7'000'000'000, 6);
  HostInfo host;
  host.kernel_release = "6.18.0";
  host.cpu_model = "Test \"CPU\"";
  host.fingerprint = 0xabc;
  host.interfaces.push_back(InterfaceInfo{"loopback", "lo", "", "", "",
                                          "65536", "", ""});
  metrics->SetHost(host);
  return metrics;
}

TEST(Metrics, PublishesThresholdsWithInfinityForNever) {
  const std::string text = Populated()->Text();
  EXPECT_TRUE(Contains(
      text, "zcal_threshold_bytes{path=\"loopback\",method=\"uring_send_zc\"} 16384"))
      << text;
  EXPECT_TRUE(Contains(
      text, "zcal_threshold_bytes{path=\"loopback\",method=\"msg_zerocopy\"} +Inf"))
      << text;
  EXPECT_FALSE(Contains(text, "zcal_threshold_bytes{path=\"loopback\",method="
                              "\"uring_send_zc_fixed\"}"))
      << "an inconclusive result has no threshold\n"
      << text;
  EXPECT_TRUE(Contains(text,
                       "zcal_verdict{path=\"loopback\",method=\"msg_zerocopy\","
                       "verdict=\"never\"} 1"));
  EXPECT_TRUE(Contains(text,
                       "zcal_verdict{path=\"loopback\",method=\"msg_zerocopy\","
                       "verdict=\"threshold\"} 0"));
  EXPECT_TRUE(Contains(text,
                       "zcal_verdict_reason_info{path=\"loopback\",method="
                       "\"msg_zerocopy\",reason=\"kernel_copied\"} 1"));
  EXPECT_TRUE(Contains(text, "zcal_published_stale 1"));
  EXPECT_TRUE(Contains(text,
                       "zcal_measured_threshold_bytes{path=\"loopback\","
                       "method=\"uring_send_zc\"} 32768"));
}

TEST(Metrics, ReportsPerSizeFiguresInBaseUnits) {
  const std::string text = Populated()->Text();
  EXPECT_TRUE(Contains(text,
                       "zcal_throughput_bytes_per_second{path=\"loopback\","
                       "method=\"copy\",size_bytes=\"4096\"} 1000000000"))
      << text;
  EXPECT_TRUE(Contains(text,
                       "zcal_cpu_seconds_per_byte{path=\"loopback\",method="
                       "\"copy\",size_bytes=\"4096\"} 5e-10"))
      << text;
  EXPECT_TRUE(Contains(text,
                       "zcal_copied_ratio{path=\"loopback\",method="
                       "\"msg_zerocopy\"} 0.5"))
      << text;
}

TEST(Metrics, CountsCalibrationsReloadsAndProbeFailures) {
  const std::string text = Populated()->Text();
  EXPECT_TRUE(Contains(text, "zcal_calibrations_total{result=\"success\"} 1"));
  EXPECT_TRUE(Contains(text, "zcal_calibrations_total{result=\"failed\"} 1"));
  EXPECT_TRUE(Contains(text, "zcal_calibrations_total{result=\"cancelled\"} 0"));
  EXPECT_TRUE(Contains(text, "zcal_config_reloads_total{result=\"success\"} 1"));
  EXPECT_TRUE(Contains(text, "zcal_config_reloads_total{result=\"failure\"} 2"));
  EXPECT_TRUE(Contains(text,
                       "zcal_probe_failures_total{path=\"loopback\",method="
                       "\"uring_send_zc_fixed\",reason=\"unsupported\"} 1"));
  EXPECT_TRUE(
      Contains(text, "zcal_calibration_triggers_total{trigger=\"signal\"} 1"));
  EXPECT_TRUE(Contains(text, "zcal_calibration_duration_seconds_count 2"));
  EXPECT_TRUE(Contains(
      text, "zcal_calibration_duration_seconds_bucket{le=\"0.5\"} 1"));
  EXPECT_TRUE(
      Contains(text, "zcal_calibration_duration_seconds_bucket{le=\"4\"} 2"));
  EXPECT_TRUE(Contains(
      text, "zcal_calibration_duration_seconds_bucket{le=\"+Inf\"} 2"));
  EXPECT_TRUE(Contains(text, "zcal_last_success_timestamp_seconds 5"));
  EXPECT_TRUE(Contains(text, "zcal_segment_entries 6"));
}

TEST(Metrics, DescribesHostAndBuild) {
  const std::string text = Populated()->Text();
  EXPECT_TRUE(Contains(text, "zcal_build_info{version=\"9.9.9\""));
  EXPECT_TRUE(Contains(text, "kernel_release=\"6.18.0\""));
  EXPECT_TRUE(Contains(text, "cpu_model=\"Test \\\"CPU\\\"\"")) << text;
  EXPECT_TRUE(Contains(text, "fingerprint=\"0000000000000abc\""));
  EXPECT_TRUE(Contains(text, "zcal_interface_info{path=\"loopback\","
                             "interface=\"lo\""));
  EXPECT_TRUE(Contains(text, "mtu_bytes=\"65536\""));
}

TEST(Metrics, DropsSeriesOfMethodsNoLongerMeasured) {
  const std::shared_ptr<Metrics> metrics = Populated();
  metrics->SetLastCalibration("loopback",
                              std::vector<Sample>{MakeSample(Method::kCopy, 8192, 0, 0)},
                              calibrator::PathResult{});
  metrics->SetPublished({}, false);
  const std::string text = metrics->Text();
  EXPECT_FALSE(Contains(text, "size_bytes=\"4096\""));
  EXPECT_TRUE(Contains(text, "size_bytes=\"8192\""));
  EXPECT_FALSE(Contains(text, "zcal_threshold_bytes{"));
  EXPECT_FALSE(Contains(text, "zcal_copied_ratio{"));
  EXPECT_TRUE(Contains(text, "zcal_published_stale 0"));
}

TEST(Metrics, PassesPromtoolLint) {
  if (access("/usr/bin/promtool", X_OK) != 0) {
    GTEST_SKIP() << "promtool (Debian package prometheus) is not installed";
  }
  TempDir dir;
  const std::filesystem::path file = dir.path() / "metrics.txt";
  WriteFile(file, Populated()->Text());
  const testing::CommandResult result =
      RunCommand({"/bin/sh", "-c", "/usr/bin/promtool check metrics < " +
                                       file.string()});
  EXPECT_EQ(result.status, 0) << result.out << result.err;
  EXPECT_EQ(result.out + result.err, "");
}

TEST(MetricsServer, ServesTheTextFormatOnAnEphemeralPort) {
  const std::shared_ptr<Metrics> metrics = Populated();
  auto server = MetricsServer::Start("127.0.0.1:0", metrics);
  ASSERT_TRUE(server) << server.error().message;
  EXPECT_GT((*server)->port(), 0);
  EXPECT_EQ((*server)->Url(),
            "http://127.0.0.1:" + std::to_string((*server)->port()) +
                "/metrics");
  const auto response = HttpGet((*server)->port(), "/metrics");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(Contains(response->body, "zcal_threshold_bytes{"));
}

TEST(MetricsServer, ReportsABusyPortClearly) {
  const std::shared_ptr<Metrics> metrics = Populated();
  auto first = MetricsServer::Start("127.0.0.1:0", metrics);
  ASSERT_TRUE(first) << first.error().message;
  const std::string busy = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = MetricsServer::Start(busy, metrics);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, Errc::kBusy);
  EXPECT_TRUE(Contains(second.error().message, busy));
  EXPECT_TRUE(Contains(second.error().message, "Address already in use"));
  EXPECT_TRUE(Contains(second.error().message, "metrics.listen"));
}

TEST(MetricsServer, RejectsANonLocalAddress) {
  auto server = MetricsServer::Start("192.0.2.1:9464",
                                     std::make_shared<Metrics>("0"));
  ASSERT_FALSE(server);
  EXPECT_TRUE(Contains(server.error().message, "192.0.2.1:9464"));
  EXPECT_TRUE(Contains(server.error().message, "Cannot assign"));
}

}  // namespace
}  // namespace zcal::agent

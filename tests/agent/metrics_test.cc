#include "zcal/agent/metrics/metrics.h"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>

#include "test_util.h"
#include "zcal/common/fake_clock.h"
#include "zcal/zcal.h"
#include "zcal/testing/path_ids.h"

namespace zcal::agent::metrics_test {
namespace {

using zcal::testing::ConfiguredPath;

using calibrator::Method;
using calibrator::MethodResult;
using calibrator::Reason;
using calibrator::Sample;
using calibrator::Verdict;
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

// The published table's entries of `paths`, as BuildEntries makes them.
std::vector<PublishedEntry> TableOf(const std::map<PathId, MethodStates>& paths) {
  std::vector<PublishedEntry> table;
  for (const auto& [path, methods] : paths) {
    PublishedEntry where;
    where.path = path;
    for (const auto& [key, s] : methods) table.push_back(EntryOf(key, s, where));
  }
  return table;
}

std::shared_ptr<Metrics> Populated() {
  auto metrics = std::make_shared<Metrics>("9.9.9");
  std::map<PathId, MethodStates> paths;
  paths[ConfiguredPath("loopback")][Method::kMsgZerocopy] =
      Published(Method::kMsgZerocopy, Verdict::kNever, std::nullopt,
                Reason::kKernelCopied);
  paths[ConfiguredPath("loopback")][Method::kUringSendZc] =
      Published(Method::kUringSendZc, Verdict::kThreshold, 16384);
  probes::HostLoad load;
  load.busy_share = 0.25;
  load.steal_share = 0.125;
  load.own_share = 0.0625;
  load.runnable_mean = 2.5;
  load.runnable_max = 4;
  paths[ConfiguredPath("loopback")][Method::kUringSendZc].load = load;
  paths[ConfiguredPath("loopback")][Method::kUringSendZcFixed] = Published(
      Method::kUringSendZcFixed, Verdict::kInconclusive, std::nullopt,
      Reason::kNoisy);
  metrics->SetPublished(TableOf(paths), true);
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
  metrics->SetLastCalibration(ConfiguredPath("loopback"), samples,
                              {{zcal::agent::DepthClass::kStream, fresh}});
  metrics->RecordProbeFailures(ConfiguredPath("loopback"), samples);
  metrics->RecordCalibration(CalibrationResult::kSuccess, 3.0, 5'000'000'000);
  metrics->RecordCalibration(CalibrationResult::kFailed, 0.2, 6'000'000'000);
  metrics->RecordTrigger(CalibrationTrigger::kSignal);
  metrics->RecordReload(true);
  metrics->RecordReload(false);
  metrics->RecordReload(false);
  metrics->RecordPublish(7'000'000'000, 6);
  HostInfo host;
  host.facts.kernel_release = "6.18.0";
  host.facts.cpu_model = "Test \"CPU\"";
  host.facts.fingerprint = 0xabc;
  probes::InterfaceFacts lo;
  lo.name = "lo";
  lo.mtu = 65536;
  host.interfaces.push_back(PathEgress("loopback", lo));
  metrics->SetHost(host);
  metrics->SetPaths({{ConfiguredPath("loopback"), probes::TargetKind::kLoopback},
                     {ConfiguredPath("discard"), probes::TargetKind::kDiscard}});
  HostDefaultChoice host_default;
  host_default.source = HostDefaultSource::kEstimated;
  host_default.interface = "eth0";
  PublishedEntry estimate;
  estimate.scope = ScopeKind::kHostDefault;
  estimate.method = Method::kMsgZerocopy;
  estimate.verdict = Verdict::kThreshold;
  estimate.threshold_bytes = 24576;
  estimate.estimated = true;
  PublishedEntry other_scope = estimate;  // not the host default's: left out
  other_scope.scope = ScopeKind::kDiscard;
  other_scope.threshold_bytes = 8192;
  const std::vector<PublishedEntry> table = {other_scope, estimate};
  metrics->SetHostDefault(host_default, table);
  return metrics;
}

TEST(Metrics, PublishesThresholdsWithInfinityForNever) {
  const std::string text = Populated()->Text();
  EXPECT_TRUE(Contains(
      text, "zcal_threshold_bytes{path=\"loopback\",method=\"uring_send_zc\",depth=\"stream\"} 16384"))
      << text;
  EXPECT_TRUE(Contains(
      text, "zcal_threshold_bytes{path=\"loopback\",method=\"msg_zerocopy\",depth=\"stream\"} +Inf"))
      << text;
  EXPECT_FALSE(Contains(text, "zcal_threshold_bytes{path=\"loopback\",method="
                              "\"uring_send_zc_fixed\"}"))
      << "an inconclusive result has no threshold\n"
      << text;
  EXPECT_TRUE(Contains(text,
                       "zcal_verdict{path=\"loopback\",method=\"msg_zerocopy\","
                       "depth=\"stream\",verdict=\"never\"} 1"));
  EXPECT_TRUE(Contains(text,
                       "zcal_verdict{path=\"loopback\",method=\"msg_zerocopy\","
                       "depth=\"stream\",verdict=\"threshold\"} 0"));
  EXPECT_TRUE(Contains(text,
                       "zcal_verdict_reason_info{path=\"loopback\",method="
                       "\"msg_zerocopy\",depth=\"stream\",reason=\"kernel_copied\"} 1"));
  EXPECT_TRUE(Contains(text, "zcal_published_stale 1"));
  EXPECT_TRUE(Contains(text,
                       "zcal_measured_threshold_bytes{path=\"loopback\","
                       "method=\"uring_send_zc\",depth=\"stream\"} 32768"));
}

TEST(Metrics, LabelsThresholdsWithTheDepthClassTheyWereMeasuredAt) {
  auto metrics = std::make_shared<Metrics>("9.9.9");
  std::map<PathId, MethodStates> paths;
  paths[ConfiguredPath("discard")][{Method::kMsgZerocopy, zcal::agent::DepthClass::k4}] =
      Published(Method::kMsgZerocopy, Verdict::kThreshold, 49152);
  metrics->SetPublished(TableOf(paths), false);
  HostDefaultChoice host_default;
  host_default.source = HostDefaultSource::kEstimated;
  PublishedEntry stream;
  stream.scope = ScopeKind::kHostDefault;
  stream.method = Method::kMsgZerocopy;
  stream.verdict = Verdict::kThreshold;
  stream.threshold_bytes = 24576;
  PublishedEntry one = stream;
  one.depth = zcal::agent::DepthClass::k1;
  one.threshold_bytes = 65536;
  const std::vector<PublishedEntry> table = {stream, one};
  metrics->SetHostDefault(host_default, table);
  const std::string text = metrics->Text();
  EXPECT_TRUE(Contains(
      text, "zcal_threshold_bytes{path=\"discard\",method=\"msg_zerocopy\",depth=\"4\"} 49152"))
      << text;
  EXPECT_TRUE(Contains(text, "zcal_host_default_threshold_bytes{method=\"msg_zerocopy\","
                             "depth=\"1\",estimated=\"0\"} 65536"))
      << text;
  EXPECT_TRUE(Contains(text, "zcal_host_default_threshold_bytes{method=\"msg_zerocopy\","
                             "depth=\"stream\",estimated=\"0\"} 24576"))
      << text;
}

TEST(Metrics, PublishesTheLoadEachResultWasMeasuredUnder) {
  const std::string text = Populated()->Text();
  for (const char* series :
       {"zcal_calibration_host_busy_ratio{path=\"loopback\",method=\"uring_send_zc\",depth=\"stream\"} 0.25",
        "zcal_calibration_host_steal_ratio{path=\"loopback\",method=\"uring_send_zc\",depth=\"stream\"} 0.125",
        "zcal_calibration_own_cpu_ratio{path=\"loopback\",method=\"uring_send_zc\",depth=\"stream\"} 0.0625",
        "zcal_calibration_runnable_tasks{path=\"loopback\",method=\"uring_send_zc\",depth=\"stream\"} 2.5"}) {
    EXPECT_TRUE(Contains(text, series)) << series << "\n" << text;
  }
  // A result whose load was not measured has no series, not a 0.
  EXPECT_FALSE(Contains(text, "zcal_calibration_host_busy_ratio{path=\"loopback\","
                              "method=\"msg_zerocopy\"}"))
      << text;
}

TEST(Metrics, ReportsPerSizeFiguresInBaseUnits) {
  const std::string text = Populated()->Text();
  EXPECT_TRUE(Contains(text,
                       "zcal_throughput_bytes_per_second{path=\"loopback\","
                       "method=\"copy\",depth=\"stream\",size_bytes=\"4096\"} 1000000000"))
      << text;
  EXPECT_TRUE(Contains(text,
                       "zcal_cpu_seconds_per_byte{path=\"loopback\",method="
                       "\"copy\",depth=\"stream\",size_bytes=\"4096\"} 5e-10"))
      << text;
  EXPECT_TRUE(Contains(text,
                       "zcal_copied_ratio{path=\"loopback\",method="
                       "\"msg_zerocopy\",depth=\"stream\"} 0.5"))
      << text;
}

TEST(Metrics, CountsCalibrationsReloadsAndProbeFailures) {
  const std::string text = Populated()->Text();
  EXPECT_TRUE(Contains(text, "zcal_calibrations_total{result=\"success\"} 1"));
  EXPECT_TRUE(Contains(text, "zcal_calibrations_total{result=\"failed\"} 1"));
  EXPECT_TRUE(Contains(text, "zcal_calibrations_total{result=\"cancelled\"} 0"));
  EXPECT_TRUE(Contains(text, "zcal_config_reloads_total{result=\"success\"} 1"));
  EXPECT_TRUE(Contains(text, "zcal_config_reloads_total{result=\"failure\"} 2"));
  // Live series carry their labels in name order (prometheus-cpp's Labels).
  EXPECT_TRUE(Contains(text,
                       "zcal_probe_failures_total{method=\"uring_send_zc_fixed\","
                       "path=\"loopback\",reason=\"unsupported\"} 1"))
      << text;
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

TEST(Metrics, TheStartTimeIsTheServicesClocks) {
  auto clock = std::make_shared<common::FakeClock>(1'234'000'000'000'000'000ULL);
  const Metrics metrics("9.9.9", MetricsRole::kAgent, clock);
  EXPECT_TRUE(Contains(metrics.Text(), "\nzcal_agent_start_time_seconds 1234000000\n"))
      << metrics.Text();
}

TEST(Metrics, DescribesHostAndBuild) {
  const std::string text = Populated()->Text();
  EXPECT_TRUE(
      Contains(text, "zcal_build_info{abi_major=\"" + std::to_string(ZCAL_ABI_MAJOR) +
                           "\",version=\"9.9.9\"} 1"))
      << text;
  EXPECT_TRUE(Contains(text, "kernel_release=\"6.18.0\""));
  EXPECT_TRUE(Contains(text, "cpu_model=\"Test \\\"CPU\\\"\"")) << text;
  EXPECT_TRUE(Contains(text, "fingerprint=\"0000000000000abc\""));
  EXPECT_TRUE(Contains(text, "zcal_interface_info{path=\"loopback\","
                             "interface=\"lo\""));
  EXPECT_TRUE(Contains(text, "mtu_bytes=\"65536\""));
}

// Every line of the exposition that starts a series: no two alike, or a
// scrape is invalid.
std::vector<std::string> SeriesLines(const std::string& text) {
  std::vector<std::string> series;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    series.push_back(line.substr(0, line.rfind(' ')));
  }
  return series;
}

TEST(Metrics, EachDepthClassOfAResultIsASeriesOfItsOwn) {
  auto metrics = std::make_shared<Metrics>("9.9.9");
  std::map<PathId, MethodStates> paths;
  paths[ConfiguredPath("discard")][Method::kMsgZerocopy] =
      Published(Method::kMsgZerocopy, Verdict::kThreshold, 24576);
  paths[ConfiguredPath("discard")][{Method::kMsgZerocopy, DepthClass::k1}] =
      Published(Method::kMsgZerocopy, Verdict::kThreshold, 65536);
  paths[ConfiguredPath("discard")][{Method::kMsgZerocopy, DepthClass::k1}].pending =
      Published(Method::kMsgZerocopy, Verdict::kNever, std::nullopt, Reason::kSlower).published;
  probes::HostLoad load;
  load.busy_share = 0.5;
  for (auto& [key, s] : paths[ConfiguredPath("discard")]) s.load = load;
  metrics->SetPublished(TableOf(paths), false);
  Sample stream = MakeSample(Method::kMsgZerocopy, 4096, 0, 4);
  Sample one = MakeSample(Method::kMsgZerocopy, 4096, 1, 4);
  one.depth = 1;
  one.bytes = 500'000'000;
  Sample odd = MakeSample(Method::kMsgZerocopy, 4096, 0, 4);
  odd.depth = 2;  // no class the agent publishes: left out
  std::map<DepthClass, calibrator::PathResult> fresh;
  fresh[DepthClass::kStream].methods[Method::kMsgZerocopy] =
      Published(Method::kMsgZerocopy, Verdict::kThreshold, 24576).published;
  fresh[DepthClass::k1].methods[Method::kMsgZerocopy] =
      Published(Method::kMsgZerocopy, Verdict::kThreshold, 98304).published;
  metrics->SetLastCalibration(
      ConfiguredPath("discard"),
      std::vector<Sample>{MakeSample(Method::kCopy, 4096, 0, 0), stream, one, odd}, fresh);
  const std::string text = metrics->Text();
  const std::string at = "path=\"discard\",method=\"msg_zerocopy\",depth=";
  for (const std::string& series :
       {"zcal_threshold_bytes{" + at + "\"stream\"} 24576",
        "zcal_threshold_bytes{" + at + "\"1\"} 65536",
        "zcal_verdict{" + at + "\"1\",verdict=\"threshold\"} 1",
        "zcal_verdict_reason_info{" + at + "\"1\",reason=\"none\"} 1",
        "zcal_hysteresis_pending{" + at + "\"1\"} 1",
        "zcal_hysteresis_pending{" + at + "\"stream\"} 0",
        "zcal_calibration_host_busy_ratio{" + at + "\"1\"} 0.5",
        "zcal_result_measured_timestamp_seconds{" + at + "\"1\"} 2",
        "zcal_measured_threshold_bytes{" + at + "\"1\"} 98304",
        "zcal_measured_threshold_bytes{" + at + "\"stream\"} 24576",
        "zcal_throughput_bytes_per_second{" + at + "\"1\",size_bytes=\"4096\"} 500000000",
        "zcal_throughput_bytes_per_second{" + at + "\"stream\",size_bytes=\"4096\"} 1000000000",
        std::string("zcal_throughput_bytes_per_second{path=\"discard\",method=\"copy\","
                    "depth=\"stream\",size_bytes=\"4096\"} 1000000000"),
        "zcal_copied_ratio{" + at + "\"1\"} 0.25",
        "zcal_copied_ratio{" + at + "\"stream\"} 0"}) {
    EXPECT_TRUE(Contains(text, series)) << series << "\n" << text;
  }
  EXPECT_FALSE(Contains(text, "depth=\"2\"")) << text;
  std::vector<std::string> series = SeriesLines(text);
  std::sort(series.begin(), series.end());
  EXPECT_EQ(std::adjacent_find(series.begin(), series.end()), series.end())
      << "a series twice: " << *std::adjacent_find(series.begin(), series.end());
}

TEST(Metrics, DropsSeriesOfMethodsNoLongerMeasured) {
  const std::shared_ptr<Metrics> metrics = Populated();
  metrics->SetLastCalibration(ConfiguredPath("loopback"),
                              std::vector<Sample>{MakeSample(Method::kCopy, 8192, 0, 0)}, {});
  metrics->SetPublished({}, false);
  const std::string text = metrics->Text();
  EXPECT_FALSE(Contains(text, "size_bytes=\"4096\""));
  EXPECT_TRUE(Contains(text, "size_bytes=\"8192\""));
  EXPECT_FALSE(Contains(text, "zcal_threshold_bytes{"));
  EXPECT_FALSE(Contains(text, "zcal_copied_ratio{"));
  EXPECT_TRUE(Contains(text, "zcal_published_stale 0"));
}

TEST(Metrics, StartsEveryFixedSeriesAtZero) {
  const std::string text = Metrics("1").Text();
  for (const char* series :
       {"zcal_calibrations_total{result=\"cancelled\"} 0",
        "zcal_calibration_triggers_total{trigger=\"retry\"} 0",
        "zcal_calibration_duration_seconds_count 0",
        "zcal_state_errors_total{operation=\"save\"} 0", "zcal_state_unsaved 0",
        "zcal_config_reloads_total{result=\"failure\"} 0",
        "zcal_http_connections_dropped_total{reason=\"request_timeout\"} 0",
        "zcal_http_connections_dropped_total{reason=\"client_limit\"} 0",
        "zcal_http_responses_total{code=\"200\"} 0",
        "zcal_http_open_connections 0", "zcal_segment_publishes_total 0"}) {
    EXPECT_TRUE(Contains(text, series)) << series << "\n" << text;
  }
  EXPECT_FALSE(Contains(text, "zcal_probe_failures_total{")) << text;
}

TEST(Metrics, CountsSegmentRepairsByCauseFromZero) {
  Metrics metrics("1");
  for (const SegmentDamage cause : kSegmentDamages) {
    const std::string series = "zcal_segment_repairs_total{cause=\"" +
                               std::string(SegmentDamageName(cause)) + "\"} 0";
    EXPECT_TRUE(Contains(metrics.Text(), series)) << series;
  }
  metrics.RecordSegmentRepair(SegmentDamage::kTruncated);
  metrics.RecordSegmentRepair(SegmentDamage::kTruncated);
  metrics.RecordSegmentRepair(SegmentDamage::kHeader);
  metrics.RecordSegmentRepair(SegmentDamage::kNone);
  const std::string text = metrics.Text();
  EXPECT_TRUE(Contains(text, "zcal_segment_repairs_total{cause=\"truncated\"} 2")) << text;
  EXPECT_TRUE(Contains(text, "zcal_segment_repairs_total{cause=\"header\"} 1")) << text;
  EXPECT_TRUE(Contains(text, "zcal_segment_repairs_total{cause=\"removed\"} 0")) << text;
  EXPECT_FALSE(Contains(text, "cause=\"\"")) << "kNone has no series: " << text;
}

TEST(Metrics, CountsExportWritesAndErrorsByFormatFromZero) {
  Metrics metrics("1");
  for (const ExportFormat format : kExportFormats) {
    const std::string label = "{format=\"" + std::string(ExportFormatName(format)) + "\"} 0";
    EXPECT_TRUE(Contains(metrics.Text(), "zcal_export_writes_total" + label)) << label;
    EXPECT_TRUE(Contains(metrics.Text(), "zcal_export_errors_total" + label)) << label;
  }
  metrics.RecordExportWrite(ExportFormat::kLibfabric);
  metrics.RecordExportWrite(ExportFormat::kLibfabric);
  metrics.RecordExportError(ExportFormat::kSpdkRpc);
  const std::string text = metrics.Text();
  EXPECT_TRUE(Contains(text, "zcal_export_writes_total{format=\"libfabric\"} 2")) << text;
  EXPECT_TRUE(Contains(text, "zcal_export_errors_total{format=\"spdk-rpc\"} 1")) << text;
  EXPECT_TRUE(Contains(text, "zcal_export_errors_total{format=\"libfabric\"} 0")) << text;
}

TEST(Metrics, CountsHttpDropsResponsesAndOpenConnections) {
  Metrics metrics("1");
  metrics.RecordHttpDrop(HttpDrop::kClientLimit);
  metrics.RecordHttpDrop(HttpDrop::kClientLimit);
  metrics.RecordHttpDrop(HttpDrop::kWriteTimeout);
  metrics.RecordHttpResponse(200);
  metrics.RecordHttpResponse(404);
  metrics.AddHttpOpenConnections(3);
  metrics.AddHttpOpenConnections(-1);
  const std::string text = metrics.Text();
  EXPECT_TRUE(Contains(
      text, "zcal_http_connections_dropped_total{reason=\"client_limit\"} 2"));
  EXPECT_TRUE(Contains(
      text, "zcal_http_connections_dropped_total{reason=\"write_timeout\"} 1"));
  EXPECT_TRUE(Contains(text, "zcal_http_responses_total{code=\"404\"} 1"));
  EXPECT_TRUE(Contains(text, "zcal_http_responses_total{code=\"200\"} 1"));
  EXPECT_TRUE(Contains(text, "zcal_http_open_connections 2")) << text;
}

TEST(Metrics, RetainPathsDropsEverySeriesOfARemovedPath) {
  const std::shared_ptr<Metrics> metrics = Populated();
  std::vector<Sample> peer_samples = {MakeSample(Method::kCopy, 4096, 0, 0)};
  peer_samples[0].path = "peer";
  Sample failed = MakeSample(Method::kMsgZerocopy, 4096, 0, 0);
  failed.status = calibrator::SampleStatus::kFailed;
  peer_samples.push_back(failed);
  metrics->SetLastCalibration(ConfiguredPath("peer"), peer_samples, {});
  metrics->RecordProbeFailures(ConfiguredPath("peer"), peer_samples);
  ASSERT_TRUE(Contains(metrics->Text(), "path=\"peer\""));

  const std::vector<PathId> keep = {ConfiguredPath("peer")};
  metrics->RetainPaths(keep);
  const std::string text = metrics->Text();
  EXPECT_FALSE(Contains(text, "path=\"loopback\"")) << text;
  EXPECT_TRUE(Contains(text,
                       "zcal_probe_failures_total{method=\"msg_zerocopy\","
                       "path=\"peer\",reason=\"failed\"} 1"))
      << text;
  EXPECT_TRUE(Contains(text, "zcal_throughput_bytes_per_second{path=\"peer\""));

  // A removed path counts from 0 again when it comes back.
  metrics->RecordProbeFailures(ConfiguredPath("loopback"), peer_samples);
  EXPECT_TRUE(Contains(metrics->Text(),
                       "zcal_probe_failures_total{method=\"msg_zerocopy\","
                       "path=\"loopback\",reason=\"failed\"} 1"))
      << metrics->Text();
}

TEST(Metrics, SaysWhatEachPathIsAndWhereTheHostDefaultComesFrom) {
  const std::string text = Populated()->Text();
  EXPECT_TRUE(Contains(text, "zcal_path_info{path=\"discard\",type=\"discard\"} 1"))
      << text;
  EXPECT_TRUE(Contains(text,
                       "zcal_host_default_info{source=\"estimated\",reason=\"\","
                       "interface=\"eth0\"} 1"));
  EXPECT_TRUE(Contains(text,
                       "zcal_host_default_threshold_bytes{method=\"msg_zerocopy\","
                       "depth=\"stream\",estimated=\"1\"} 24576"));
  // An entry of the table under another scope is not the host default's.
  EXPECT_FALSE(Contains(text, "estimated=\"1\"} 8192")) << text;

  auto metrics = std::make_shared<Metrics>("9.9.9");
  HostDefaultChoice none;
  none.source = HostDefaultSource::kIommuTranslates;
  metrics->SetHostDefault(none);
  const std::string absent = metrics->Text();
  EXPECT_TRUE(Contains(absent, "zcal_host_default_info{source=\"none\","
                               "reason=\"iommu_translates\",interface=\"\"} 1"))
      << absent;
  EXPECT_FALSE(Contains(absent, "zcal_host_default_threshold_bytes{"));
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

}  // namespace
}  // namespace zcal::agent::metrics_test

// The publisher against a real segment, state file and metrics: what a
// reader, the file and a scrape see after each step, and every failure a
// user can hit (a held lock, a state file that cannot be read or written).
#include "zcal/agent/service/publisher.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include <gtest/gtest.h>

#include "test_util.h"
#include "zcal/zcal.hpp"
#include "zcal/testing/path_ids.h"

namespace zcal::agent::publisher_test {
namespace {

using zcal::testing::ConfiguredPath;
using zcal::testing::PeerPath;

using calibrator::Method;
using calibrator::MethodResult;
using calibrator::Reason;
using calibrator::Verdict;
using testing::TempDir;
using testing::WriteFile;

std::string UniqueSegment() {
  static std::atomic<int> counter{0};
  return "/zcal-publisher-test-" + std::to_string(getpid()) + "-" +
         std::to_string(counter++);
}

bool Contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

MethodResult Never(Method method) {
  MethodResult r;
  r.method = method;
  r.verdict = Verdict::kNever;
  r.reason = Reason::kKernelCopied;
  r.confidence = 1.0;
  return r;
}

PathReport Report(const std::string& path, std::initializer_list<Method> methods) {
  probes::CalibrationReport report;
  calibrator::PathResult& result = report.analysis.paths[path];
  result.path = path;
  for (const Method m : methods) result.methods[m] = Never(m);
  return PathReport{ConfiguredPath(path), report, {}};
}

RoundOutcome Outcome(std::vector<PathReport> reports) {
  RoundOutcome outcome;
  outcome.reports = std::move(reports);
  outcome.duration_seconds = 0.1;
  return outcome;
}

HostInfo Host(std::uint64_t fingerprint) {
  HostInfo host;
  host.facts.fingerprint = fingerprint;
  return host;
}

std::optional<zcal_info> ReadInfo(const std::string& segment) {
  auto opened = client::Segment::Open(segment.c_str());
  if (!opened) return std::nullopt;
  auto info = opened->Info();
  if (!info) return std::nullopt;
  return *info;
}

class PublisherTest : public ::testing::Test {
 protected:
  PublisherTest() {
    config_.paths = {PathConfig{}};  // loopback only
    config_.segment.name = segments_[0];
    config_.state_path = (dir_.path() / "state.json").string();
  }
  ~PublisherTest() override {
    for (const std::string& s : segments_) shm_unlink(s.c_str());
  }

  std::unique_ptr<Publisher> Open() {
    auto publisher = Publisher::Open(config_, dir_.path().string(), metrics_);
    EXPECT_TRUE(publisher) << publisher.error().message;
    return publisher ? std::move(*publisher) : nullptr;
  }

  void SaveOneResult(std::uint64_t fingerprint = 7) {
    AgentState saved;
    saved.saved_at_ns = 1;
    saved.fingerprint = fingerprint;
    saved.paths[ConfiguredPath("loopback")][Method::kMsgZerocopy] =
        MethodState{Never(Method::kMsgZerocopy), 5, std::nullopt, std::nullopt};
    ASSERT_TRUE(SaveState(saved, config_.state_path));
  }

  TempDir dir_;
  const std::string segments_[2] = {UniqueSegment(), UniqueSegment()};
  Config config_;
  std::shared_ptr<Metrics> metrics_ = std::make_shared<Metrics>("test");
};

TEST_F(PublisherTest, OpenTakesTheSegmentsLockSoASecondOpenIsRefused) {
  auto first = Open();
  ASSERT_TRUE(first);
  const auto second = Publisher::Open(config_, dir_.path().string(), metrics_);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, Errc::kBusy);
  EXPECT_TRUE(Contains(second.error().message, "already publishes segment " +
                                                   config_.segment.name))
      << second.error().message;
}

TEST_F(PublisherTest, OpenNamesTheSegmentWhenItCannotBeCreated) {
  config_.segment.mode = 0666;
  const auto publisher = Publisher::Open(config_, dir_.path().string(), metrics_);
  ASSERT_FALSE(publisher);
  EXPECT_TRUE(publisher.error().message.starts_with("segment " +
                                                     config_.segment.name + ": "))
      << publisher.error().message;
}

TEST_F(PublisherTest, RepublishesTheSavedStateAsStale) {
  SaveOneResult();
  auto publisher = Open();
  publisher->LoadSaved();
  EXPECT_TRUE(publisher->stale());
  publisher->Publish();
  const auto info = ReadInfo(config_.segment.name);
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->flags & ZCAL_FLAG_STALE);
  EXPECT_EQ(info->count, 1u) << "loopback only: never a host default from it";
  EXPECT_EQ(info->host_default_source, static_cast<std::uint32_t>(ZCAL_HOST_DEFAULT_NONE_NO_PATH));
  EXPECT_TRUE(Contains(metrics_->Text(), "zcal_published_stale 1"));
}

TEST_F(PublisherTest, WithoutSavedStateItPublishesAnEmptyTable) {
  auto publisher = Open();
  publisher->LoadSaved();
  EXPECT_FALSE(publisher->stale());
  publisher->Publish();
  const auto info = ReadInfo(config_.segment.name);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->count, 0u);
  EXPECT_NE(info->publish_time_ns, 0u);
  EXPECT_FALSE(Contains(metrics_->Text(),
                        "zcal_state_errors_total{operation=\"load\"} 1"))
      << "a missing file is the normal first start";
}

TEST_F(PublisherTest, AnInvalidStateFileIsCountedAndIgnored) {
  WriteFile(config_.state_path, "{\"format\": \"zcal-st");
  auto publisher = Open();
  publisher->LoadSaved();
  EXPECT_TRUE(publisher->state().empty());
  EXPECT_TRUE(Contains(metrics_->Text(),
                       "zcal_state_errors_total{operation=\"load\"} 1"))
      << metrics_->Text();
}

TEST_F(PublisherTest, ASuccessfulRoundIsPublishedFreshAndSaved) {
  SaveOneResult();
  auto publisher = Open();
  publisher->LoadSaved();
  publisher->Publish();
  ASSERT_TRUE(publisher->Accept(
      Outcome({Report("loopback", {Method::kMsgZerocopy, Method::kUringSendZc})}),
      Host(42), 1000));
  EXPECT_FALSE(publisher->stale());
  const auto info = ReadInfo(config_.segment.name);
  ASSERT_TRUE(info);
  EXPECT_FALSE(info->flags & ZCAL_FLAG_STALE);
  EXPECT_EQ(info->count, 2u);
  const Result<AgentState> saved = LoadState(config_.state_path);
  ASSERT_TRUE(saved) << saved.error().message;
  EXPECT_EQ(saved->fingerprint, 42u) << "the host as when the round started";
  EXPECT_EQ(saved->last_success_ns, 1000u);
  EXPECT_EQ(saved->paths.at(ConfiguredPath("loopback")).size(), 2u);
  const std::string text = metrics_->Text();
  EXPECT_TRUE(Contains(text, "zcal_published_stale 0"));
  EXPECT_TRUE(Contains(text, "zcal_verdict{path=\"loopback\",method=\"uring_send_zc\","
                             "depth=\"stream\",verdict=\"never\"} 1"))
      << text;
}

TEST_F(PublisherTest, TheLoadOfARoundIsSavedAndPublishedWithItsResults) {
  auto publisher = Open();
  PathReport report = Report("loopback", {Method::kMsgZerocopy});
  probes::HostLoad load;
  load.busy_share = 0.75;
  load.own_share = 0.25;
  load.runnable_mean = 3;
  load.runnable_max = 5;
  load.window_seconds = 2;
  load.runnable_reads = 8;
  report.report->load = load;
  ASSERT_TRUE(publisher->Accept(Outcome({std::move(report)}), Host(42), 1000));
  const Result<AgentState> saved = LoadState(config_.state_path);
  ASSERT_TRUE(saved) << saved.error().message;
  const MethodState& s = saved->paths.at(ConfiguredPath("loopback")).at(Method::kMsgZerocopy);
  ASSERT_TRUE(s.load);
  EXPECT_DOUBLE_EQ(s.load->busy_share, 0.75);
  EXPECT_EQ(s.load->runnable_max, 5u);
  const std::string text = metrics_->Text();
  EXPECT_TRUE(Contains(text, "zcal_calibration_host_busy_ratio{path=\"loopback\","
                             "method=\"msg_zerocopy\",depth=\"stream\"} 0.75"))
      << text;
}

TEST_F(PublisherTest, AFailedRoundChangesNothing) {
  SaveOneResult(7);
  auto publisher = Open();
  publisher->LoadSaved();
  publisher->Publish();
  RoundOutcome failed;
  failed.reports.push_back(
      PathReport{ConfiguredPath("loopback"), Fail(Errc::kUnsupported, "no probe could run"), {}});
  EXPECT_FALSE(publisher->Accept(failed, Host(42), 1000));
  EXPECT_TRUE(publisher->stale());
  const auto info = ReadInfo(config_.segment.name);
  ASSERT_TRUE(info);
  EXPECT_TRUE(info->flags & ZCAL_FLAG_STALE);
  const Result<AgentState> saved = LoadState(config_.state_path);
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->fingerprint, 7u) << "the file was not rewritten";
}

TEST_F(PublisherTest, ResultsOfPathsAndMethodsNoLongerConfiguredAreDropped) {
  config_.methods = {Method::kCopy, Method::kMsgZerocopy};
  auto publisher = Open();
  // A reload removed "gone" while the round ran, and uring_send_zc.
  EXPECT_FALSE(publisher->Accept(Outcome({Report("gone", {Method::kMsgZerocopy})}),
                                 Host(1), 1000));
  ASSERT_TRUE(publisher->Accept(
      Outcome({Report("gone", {Method::kMsgZerocopy}),
               Report("loopback", {Method::kMsgZerocopy, Method::kUringSendZc})}),
      Host(1), 1000));
  ASSERT_EQ(publisher->state().paths.size(), 1u);
  const auto& loopback = publisher->state().paths.at(ConfiguredPath("loopback"));
  EXPECT_EQ(loopback.size(), 1u);
  EXPECT_TRUE(loopback.contains(Method::kMsgZerocopy));
}

TEST_F(PublisherTest, AStateFileThatCannotBeWrittenIsCountedAndTheTableStillPublished) {
  WriteFile(dir_.path() / "file", "not a directory");
  config_.state_path = (dir_.path() / "file" / "state.json").string();
  auto publisher = Open();
  ASSERT_TRUE(publisher->Accept(Outcome({Report("loopback", {Method::kMsgZerocopy})}),
                                Host(1), 1000));
  const auto info = ReadInfo(config_.segment.name);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->count, 1u);
  EXPECT_TRUE(Contains(metrics_->Text(),
                       "zcal_state_errors_total{operation=\"save\"} 1"))
      << metrics_->Text();
}

TEST_F(PublisherTest, AFailedSaveIsRetriedAtEachHeartbeatUntilItSucceeds) {
  WriteFile(dir_.path() / "file", "not a directory");
  config_.state_path = (dir_.path() / "file" / "state.json").string();
  auto publisher = Open();
  ASSERT_TRUE(publisher->Accept(Outcome({Report("loopback", {Method::kMsgZerocopy})}),
                                Host(1), 1000));
  EXPECT_TRUE(Contains(metrics_->Text(), "zcal_state_unsaved 1")) << metrics_->Text();
  publisher->Heartbeat();
  EXPECT_TRUE(Contains(metrics_->Text(), "zcal_state_errors_total{operation=\"save\"} 2"))
      << metrics_->Text();
  std::filesystem::remove(dir_.path() / "file");
  publisher->Heartbeat();
  const Result<AgentState> saved = LoadState(config_.state_path);
  ASSERT_TRUE(saved) << saved.error().message;
  EXPECT_EQ(saved->last_success_ns, 1000u);
  EXPECT_TRUE(saved->paths.contains(ConfiguredPath("loopback")));
  publisher->Heartbeat();
  const std::string text = metrics_->Text();
  EXPECT_TRUE(Contains(text, "zcal_state_unsaved 0")) << text;
  EXPECT_TRUE(Contains(text, "zcal_state_errors_total{operation=\"save\"} 2")) << text;
}

TEST_F(PublisherTest, StopSavesTheStateAndLeavesAHeartbeat) {
  SaveOneResult();
  auto publisher = Open();
  publisher->LoadSaved();
  publisher->Publish();
  const std::uint64_t before = static_cast<std::uint64_t>(
      std::chrono::system_clock::now().time_since_epoch().count());
  publisher->Stop();
  const Result<AgentState> saved = LoadState(config_.state_path);
  ASSERT_TRUE(saved);
  EXPECT_GE(saved->saved_at_ns, before);
  const auto info = ReadInfo(config_.segment.name);
  ASSERT_TRUE(info);
  EXPECT_GE(info->heartbeat_ns, before);
}

TEST_F(PublisherTest, ReconfigureDropsWhatIsNoLongerConfiguredAndMovesTheStateFile) {
  auto publisher = Open();
  ASSERT_TRUE(publisher->Accept(
      Outcome({Report("loopback", {Method::kMsgZerocopy, Method::kUringSendZc})}),
      Host(1), 1000));
  Config next = config_;
  next.methods = {Method::kCopy, Method::kMsgZerocopy};
  next.host_default.enabled = false;
  next.state_path = (dir_.path() / "moved" / "state.json").string();
  publisher->Reconfigure(next);
  const auto info = ReadInfo(config_.segment.name);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->count, 1u) << "loopback/msg_zerocopy, no host default";
  const Result<AgentState> moved = LoadState(next.state_path);
  ASSERT_TRUE(moved) << "written at once";
  EXPECT_EQ(moved->paths.at(ConfiguredPath("loopback")).size(), 1u);
}

TEST_F(PublisherTest, ReconfigureDropsTheMetricSeriesOfARemovedPath) {
  auto publisher = Open();
  ASSERT_TRUE(publisher->Accept(Outcome({Report("loopback", {Method::kMsgZerocopy})}),
                                Host(1), 1000));
  ASSERT_TRUE(Contains(metrics_->Text(), "path=\"loopback\""));
  Config next = config_;
  next.paths = {PathConfig{"lo", probes::TargetKind::kLoopback}};
  next.host_default.enabled = false;
  publisher->Reconfigure(next);
  EXPECT_FALSE(Contains(metrics_->Text(), "path=\"loopback\""))
      << metrics_->Text();
  const auto info = ReadInfo(config_.segment.name);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->count, 0u);
}

TEST_F(PublisherTest, MetricsSayWhereTheHostDefaultComesFromOrWhyThereIsNone) {
  config_.paths = {PathConfig{}, PathConfig{"discard", probes::TargetKind::kDiscard}};
  auto publisher = Open();
  ASSERT_TRUE(publisher->Accept(Outcome({Report("loopback", {Method::kMsgZerocopy})}),
                                Host(1), 1000));
  std::string text = metrics_->Text();
  EXPECT_TRUE(Contains(text, "zcal_path_info{path=\"discard\",type=\"discard\"} 1"))
      << text;
  EXPECT_TRUE(Contains(text, "zcal_path_info{path=\"loopback\",type=\"loopback\"} 1"));
  // The host's NIC was never read: no estimate without knowing its IOMMU.
  EXPECT_TRUE(Contains(text, "zcal_host_default_info{source=\"none\",reason=\"iommu_unknown\""))
      << text;
  EXPECT_FALSE(Contains(text, "zcal_host_default_threshold_bytes{"));

  // A NIC without IOMMU group and a discard threshold: an estimate.
  HostInfo host = Host(1);
  probes::InterfaceFacts nic;
  nic.name = "eth0";
  nic.driver = "virtio_net";
  host.host_default_nic.facts = nic;
  publisher->SetHost(host);
  PathReport discard = Report("discard", {Method::kMsgZerocopy});
  MethodResult& result =
      discard.report->analysis.paths["discard"].methods[Method::kMsgZerocopy];
  result.verdict = Verdict::kThreshold;
  result.threshold_bytes = 16384;
  result.reason = Reason::kNone;
  ASSERT_TRUE(publisher->Accept(Outcome({discard}), host, 2000));
  text = metrics_->Text();
  EXPECT_TRUE(Contains(text,
                       "zcal_host_default_info{source=\"estimated\",reason=\"\","
                       "interface=\"eth0\"} 1"))
      << text;
  EXPECT_TRUE(Contains(text,
                       "zcal_host_default_threshold_bytes{method=\"msg_zerocopy\","
                       "depth=\"stream\",estimated=\"1\"} 16384"))
      << text;
}

// A host default estimated from the discard path's threshold (a NIC
// without IOMMU), loopback never: the table the applications' reports are
// checked against.
class AppReportsTest : public PublisherTest {
 protected:
  static constexpr std::uint64_t kSecond = 1'000'000'000;
  static constexpr std::uint64_t kT0 = 1'700'000'000 * kSecond;

  AppReportsTest() {
    config_.paths = {PathConfig{}, PathConfig{"discard", probes::TargetKind::kDiscard}};
    probes::InterfaceFacts nic;
    nic.name = "eth0";
    nic.driver = "virtio_net";
    host_.host_default_nic.facts = nic;
  }

  void Calibrate(Publisher& publisher, std::uint64_t now_ns, DecidedFor decided_for = {}) {
    publisher.SetHost(host_);
    PathReport discard = Report("discard", {Method::kMsgZerocopy});
    MethodResult& result = discard.report->analysis.paths["discard"].methods[Method::kMsgZerocopy];
    result.verdict = Verdict::kThreshold;
    result.threshold_bytes = 16384;
    result.reason = Reason::kNone;
    discard.decided_for = std::move(decided_for);
    ASSERT_TRUE(publisher.Accept(Outcome({Report("loopback", {Method::kMsgZerocopy}), discard}),
                                 host_, now_ns));
  }

  static AppsWindow Copies(std::uint64_t to_ns, AppScope scope, std::uint64_t completions,
                           std::uint64_t copied) {
    AppsWindow w;
    w.from_ns = to_ns - 600 * kSecond;
    w.to_ns = to_ns;
    AppCounters& c = w.apps["db"][{scope, Method::kMsgZerocopy}];
    c.answers[3][1][0] = completions;
    c.completions = completions;
    c.copied = copied;
    c.sizes[14] = completions;
    return w;
  }

  // Scope code -> entry flags of the segment's msg_zerocopy stream entries.
  std::map<int, std::uint16_t> Flags() const {
    std::map<int, std::uint16_t> flags;
    auto segment = client::Segment::Open(config_.segment.name.c_str());
    EXPECT_TRUE(segment) << segment.detail();
    if (!segment) return flags;
    const auto info = segment->Info();
    for (std::uint32_t i = 0; info && i < info->count; ++i) {
      const auto e = segment->Entry(i);
      if (e && e->method == ZCAL_METHOD_MSG_ZEROCOPY) flags[e->scope] = e->entry_flags;
    }
    return flags;
  }

  AppsSettings settings_;  // window 1 h, share 0.5, 1000 completions
  HostInfo host_ = Host(1);
};

TEST_F(AppReportsTest, AContradictionFlagsTheScopesEntriesInTheSegmentCountsAndAsksOnce) {
  auto publisher = Open();
  Calibrate(*publisher, kT0);
  ASSERT_EQ(Flags().count(ZCAL_SCOPE_HOST_DEFAULT), 1u) << "an estimated host default";
  EXPECT_FALSE(Flags().at(ZCAL_SCOPE_HOST_DEFAULT) & ZCAL_ENTRY_CONTRADICTED);

  const AppReportsOutcome first = publisher->ApplyAppReports(
      Copies(kT0 + 10 * kSecond, AppScope::kHostDefault, 2000, 1900), settings_,
      kT0 + 10 * kSecond);
  EXPECT_TRUE(first.recalibrate);
  ASSERT_EQ(first.raised.size(), 1u);
  const std::map<int, std::uint16_t> flags = Flags();
  EXPECT_TRUE(flags.at(ZCAL_SCOPE_HOST_DEFAULT) & ZCAL_ENTRY_CONTRADICTED);
  EXPECT_TRUE(flags.at(ZCAL_SCOPE_HOST_DEFAULT) & ZCAL_ENTRY_ESTIMATED) << "other flags stay";
  EXPECT_FALSE(flags.at(ZCAL_SCOPE_DISCARD) & ZCAL_ENTRY_CONTRADICTED)
      << "the discard path's own entry answers no traffic";
  EXPECT_FALSE(flags.at(ZCAL_SCOPE_LOOPBACK) & ZCAL_ENTRY_CONTRADICTED);
  EXPECT_TRUE(Contains(metrics_->Text(),
                       "zcal_app_contradictions_total{method=\"msg_zerocopy\","
                       "scope=\"host_default\"} 1"))
      << metrics_->Text();

  const AppReportsOutcome again = publisher->ApplyAppReports(
      Copies(kT0 + 20 * kSecond, AppScope::kHostDefault, 3000, 2900), settings_,
      kT0 + 20 * kSecond);
  EXPECT_FALSE(again.recalibrate) << "the same contradiction: not asked again";
  EXPECT_TRUE(Contains(metrics_->Text(),
                       "zcal_app_contradictions_total{method=\"msg_zerocopy\","
                       "scope=\"host_default\"} 1"));
  EXPECT_TRUE(Flags().at(ZCAL_SCOPE_HOST_DEFAULT) & ZCAL_ENTRY_CONTRADICTED);
}

TEST_F(AppReportsTest, TheFlagStaysThroughARecalibrationUntilAWindowWithoutEvidence) {
  auto publisher = Open();
  Calibrate(*publisher, kT0);
  ASSERT_TRUE(publisher
                  ->ApplyAppReports(Copies(kT0 + kSecond, AppScope::kHostDefault, 2000, 2000),
                                    settings_, kT0 + kSecond)
                  .recalibrate);
  Calibrate(*publisher, kT0 + 100 * kSecond);  // confirms the threshold
  EXPECT_TRUE(Flags().at(ZCAL_SCOPE_HOST_DEFAULT) & ZCAL_ENTRY_CONTRADICTED)
      << "a publish keeps the flag in force";
  const std::uint64_t hold_ns = static_cast<std::uint64_t>(settings_.window.count()) * kSecond;
  const AppsWindow quiet = Copies(kT0 + hold_ns, AppScope::kHostDefault, 0, 0);
  EXPECT_FALSE(publisher->ApplyAppReports(quiet, settings_, kT0 + kSecond + hold_ns - 1).recalibrate);
  EXPECT_TRUE(Flags().at(ZCAL_SCOPE_HOST_DEFAULT) & ZCAL_ENTRY_CONTRADICTED);
  publisher->ApplyAppReports(quiet, settings_, kT0 + kSecond + hold_ns);
  EXPECT_FALSE(Flags().at(ZCAL_SCOPE_HOST_DEFAULT) & ZCAL_ENTRY_CONTRADICTED);
  EXPECT_TRUE(publisher->contradictions().empty());
}

TEST_F(AppReportsTest, ARestartKeepsTheFlagFromTheStateFile) {
  {
    auto publisher = Open();
    Calibrate(*publisher, kT0);
    ASSERT_TRUE(publisher
                    ->ApplyAppReports(Copies(kT0 + kSecond, AppScope::kHostDefault, 2000, 2000),
                                      settings_, kT0 + kSecond)
                    .recalibrate);
    publisher->Stop();
  }
  const Result<AgentState> saved = LoadState(config_.state_path);
  ASSERT_TRUE(saved) << saved.error().message;
  ASSERT_EQ(saved->contradictions.size(), 1u);
  EXPECT_EQ(saved->contradictions[0].scope, AppScope::kHostDefault);
  auto restarted = Open();
  restarted->SetHost(host_);
  restarted->LoadSaved();
  restarted->Publish();
  EXPECT_TRUE(Flags().at(ZCAL_SCOPE_HOST_DEFAULT) & ZCAL_ENTRY_CONTRADICTED);
  EXPECT_EQ(restarted->contradictions().size(), 1u);
}

TEST_F(AppReportsTest, LoopbackCopiesNeverTripIt) {
  auto publisher = Open();
  Calibrate(*publisher, kT0);
  const AppReportsOutcome outcome = publisher->ApplyAppReports(
      Copies(kT0 + kSecond, AppScope::kLoopback, 100000, 100000), settings_, kT0 + kSecond);
  EXPECT_FALSE(outcome.recalibrate);
  for (const auto& [scope, flags] : Flags()) EXPECT_FALSE(flags & ZCAL_ENTRY_CONTRADICTED) << scope;
}

TEST_F(AppReportsTest, KeepsEachScopesMixAndSavesWhichMixAPathWasDecidedFor) {
  auto publisher = Open();
  EXPECT_TRUE(publisher->AppMixes().empty());
  publisher->ApplyAppReports(Copies(kT0, AppScope::kHostDefault, 5000, 0), settings_, kT0);
  ASSERT_TRUE(publisher->AppMixes().contains(AppScope::kHostDefault));
  EXPECT_EQ(publisher->AppMixes().at(AppScope::kHostDefault).sends, 5000u);
  RoundPlan plan = PlanRound(config_);
  ApplyMixes(plan, config_, publisher->AppMixes());
  ASSERT_EQ(plan.jobs.size(), 2u);
  Calibrate(*publisher, kT0 + kSecond, plan.jobs[1].decided_for);
  const Result<AgentState> saved = LoadState(config_.state_path);
  ASSERT_TRUE(saved) << saved.error().message;
  const DecidedFor& d = saved->decided_for.at(ConfiguredPath("discard"));
  EXPECT_EQ(d.source, MixSource::kApplications);
  EXPECT_EQ(d.mix.sends, 5000u);
  EXPECT_EQ(saved->decided_for.at(ConfiguredPath("loopback")).source, MixSource::kUniform);
}

// What the service asks after a round (a success that leaves every
// discard-path result inconclusive is retried like a failure).
TEST_F(PublisherTest, TheDiscardPathIsInconclusiveOnlyWhenEachOfItsStreamResultsIs) {
  const auto discard_report = [](std::initializer_list<std::pair<Method, Verdict>> verdicts) {
    probes::CalibrationReport report;
    calibrator::PathResult& result = report.analysis.paths["discard"];
    result.path = "discard";
    for (const auto& [method, verdict] : verdicts) {
      MethodResult r;
      r.method = method;
      r.verdict = verdict;
      r.reason = verdict == Verdict::kInconclusive ? Reason::kNoisy : Reason::kNone;
      if (verdict == Verdict::kThreshold) r.threshold_bytes = 16384;
      r.confidence = 0.6;
      result.methods[method] = r;
    }
    return PathReport{ConfiguredPath("discard"), report, {}};
  };
  {
    auto publisher = Open();  // loopback only
    ASSERT_TRUE(publisher->Accept(Outcome({Report("loopback", {Method::kMsgZerocopy})}),
                                  Host(1), 1000));
    EXPECT_FALSE(publisher->DiscardInconclusive()) << "no discard path configured";
  }
  config_.paths = {PathConfig{}, PathConfig{"discard", probes::TargetKind::kDiscard}};
  {
    auto publisher = Open();
    EXPECT_FALSE(publisher->DiscardInconclusive()) << "no result yet";
    ASSERT_TRUE(publisher->Accept(
        Outcome({discard_report({{Method::kMsgZerocopy, Verdict::kInconclusive},
                                 {Method::kUringSendZc, Verdict::kInconclusive}})}),
        Host(1), 1000));
    EXPECT_TRUE(publisher->DiscardInconclusive());
  }
  std::filesystem::remove(config_.state_path);
  {
    auto publisher = Open();
    ASSERT_TRUE(publisher->Accept(
        Outcome({discard_report({{Method::kMsgZerocopy, Verdict::kInconclusive},
                                 {Method::kUringSendZc, Verdict::kThreshold}})}),
        Host(1), 1000));
    EXPECT_FALSE(publisher->DiscardInconclusive()) << "one method can stand for the NIC";
  }
}

TEST_F(PublisherTest, ANewSegmentNameTakesItsLockAndRemovesTheOldSegment) {
  auto publisher = Open();
  publisher->Accept(Outcome({Report("loopback", {Method::kMsgZerocopy})}), Host(1),
                    1000);
  SegmentConfig next = config_.segment;
  next.name = segments_[1];
  Result<PreparedSegment> prepared = publisher->PrepareSegment(next);
  ASSERT_TRUE(prepared) << prepared.error().message;
  EXPECT_TRUE(ReadInfo(segments_[0])) << "nothing changes before the switch";
  publisher->SwitchSegment(std::move(*prepared));
  publisher->Publish();
  EXPECT_FALSE(ReadInfo(segments_[0]));
  const auto info = ReadInfo(segments_[1]);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->count, 1u);
  EXPECT_EQ(publisher->segment_name(), segments_[1]);
  // The old name's lock is free again, the new one held.
  Config other = config_;
  EXPECT_TRUE(Publisher::Open(other, dir_.path().string(), metrics_));
  other.segment.name = segments_[1];
  EXPECT_FALSE(Publisher::Open(other, dir_.path().string(), metrics_));
}

TEST_F(PublisherTest, PreparingASegmentHeldByAnotherAgentFailsAndChangesNothing) {
  auto publisher = Open();
  Config other = config_;
  other.segment.name = segments_[1];
  auto holder = Publisher::Open(other, dir_.path().string(), metrics_);
  ASSERT_TRUE(holder);
  const Result<PreparedSegment> prepared =
      publisher->PrepareSegment(other.segment);
  ASSERT_FALSE(prepared);
  EXPECT_EQ(prepared.error().code, Errc::kBusy);
  EXPECT_EQ(publisher->segment_name(), segments_[0]);
}

}  // namespace
}  // namespace zcal::agent::publisher_test

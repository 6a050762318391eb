// The files the publisher keeps current (exports:): written after a publish
// that changed their content, never otherwise, with the mode an operator
// gave them kept; an export that cannot be produced leaves the file alone,
// is counted at each attempt and logged once.
#include "zcal/agent/service/exporter.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "shm_test_util.h"
#include "test_util.h"
#include "zcal/agent/service/publisher.h"
#include "zcal/common/clock.h"
#include "zcal/common/fake_clock.h"
#include "zcal/testing/path_ids.h"

namespace zcal::agent::exporter_test {
namespace {

using zcal::testing::ConfiguredPath;
using zcal::testing::PeerPath;

using calibrator::Method;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

std::string UniqueSegment() {
  static std::atomic<int> counter{0};
  return "/zcal-exporter-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

bool Contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

std::size_t CountOf(const std::string& text, const std::string& fragment) {
  std::size_t n = 0;
  for (auto at = text.find(fragment); at != std::string::npos; at = text.find(fragment, at + 1)) ++n;
  return n;
}

RoundOutcome LoopbackNever() {
  probes::CalibrationReport report;
  calibrator::PathResult& result = report.analysis.paths["loopback"];
  result.path = "loopback";
  for (const Method m : {Method::kMsgZerocopy, Method::kUringSendZc, Method::kUringSendZcFixed}) {
    calibrator::MethodResult r;
    r.method = m;
    r.verdict = calibrator::Verdict::kNever;
    r.reason = calibrator::Reason::kKernelCopied;
    r.confidence = 1.0;
    result.methods[m] = r;
  }
  RoundOutcome outcome;
  outcome.reports = {PathReport{ConfiguredPath("loopback"), report, {}}};
  outcome.duration_seconds = 0.1;
  return outcome;
}

HostInfo Host() {
  HostInfo host;
  host.facts.fingerprint = 7;
  return host;
}

struct stat Stat(const std::filesystem::path& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st;
}

class ExporterTest : public ::testing::Test {
 protected:
  ExporterTest() {
    config_.paths = {PathConfig{}};  // loopback only
    config_.segment.name = segment_;
    config_.state_path = (dir_.path() / "state.json").string();
    ExportConfig e;
    e.format = ExportFormat::kLibfabric;
    e.path = file_.string();
    e.for_address = "127.0.0.1";
    config_.exports = {e};
  }
  ~ExporterTest() override { shm_unlink(segment_.c_str()); }

  std::unique_ptr<Publisher> Open() {
    auto publisher = Publisher::Open(config_, dir_.path().string(), metrics_);
    EXPECT_TRUE(publisher) << publisher.error().message;
    return publisher ? std::move(*publisher) : nullptr;
  }
  std::string Counter(const std::string& family, const std::string& format) const {
    const std::string text = metrics_->Text();
    const std::string series = family + "{format=\"" + format + "\"} ";
    const auto at = text.find(series);
    return at == std::string::npos ? "absent"
                                   : text.substr(at + series.size(),
                                                 text.find('\n', at) - at - series.size());
  }

  TempDir dir_;
  const std::string segment_ = UniqueSegment();
  const std::filesystem::path file_ = dir_.path() / "fabric.env";
  Config config_;
  std::shared_ptr<Metrics> metrics_ = std::make_shared<Metrics>("test");
};

TEST_F(ExporterTest, WritesAfterAPublishThatChangedTheContentOnly) {
  auto publisher = Open();
  ASSERT_TRUE(publisher);
  publisher->Publish();  // an empty table: nothing for 127.0.0.1
  EXPECT_FALSE(std::filesystem::exists(file_));
  EXPECT_EQ(Counter("zcal_export_errors_total", "libfabric"), "1");

  publisher->Accept(LoopbackNever(), Host(), 1'000);
  ASSERT_TRUE(std::filesystem::exists(file_));
  const std::string text = ReadFile(file_);
  EXPECT_TRUE(Contains(text, "\nFI_TCP_ZEROCOPY_SIZE=-1\n")) << text;
  EXPECT_EQ(Counter("zcal_export_writes_total", "libfabric"), "1");
  const struct stat first = Stat(file_);

  publisher->Publish();
  publisher->Accept(LoopbackNever(), Host(), 2'000);
  const struct stat same = Stat(file_);
  EXPECT_EQ(same.st_ino, first.st_ino) << "rewritten with the same content";
  EXPECT_EQ(same.st_mtim.tv_nsec, first.st_mtim.tv_nsec);
  EXPECT_EQ(Counter("zcal_export_writes_total", "libfabric"), "1");

  // Another key (through a reload) changes the text: written, in the mode
  // the operator gave the file.
  ASSERT_EQ(chmod(file_.c_str(), 0640), 0);
  Config next = config_;
  next.exports[0].for_address.clear();
  next.exports[0].scope = "loopback";
  publisher->Reconfigure(next);
  EXPECT_EQ(Counter("zcal_export_writes_total", "libfabric"), "2");
  const struct stat changed = Stat(file_);
  EXPECT_NE(changed.st_ino, first.st_ino);
  EXPECT_EQ(changed.st_mode & 07777, 0640u);
  EXPECT_TRUE(Contains(ReadFile(file_), ", for loopback\n")) << ReadFile(file_);
}

TEST_F(ExporterTest, AFileThatAlreadyHoldsTheContentIsNotRewritten) {
  {
    auto publisher = Open();
    ASSERT_TRUE(publisher);
    publisher->Accept(LoopbackNever(), Host(), 1'000);
  }
  shm_unlink(segment_.c_str());
  const struct stat first = Stat(file_);
  auto publisher = Open();  // a restarted agent
  ASSERT_TRUE(publisher);
  publisher->Accept(LoopbackNever(), Host(), 2'000);
  EXPECT_EQ(Stat(file_).st_ino, first.st_ino);
  EXPECT_EQ(Counter("zcal_export_writes_total", "libfabric"), "1");
}

TEST_F(ExporterTest, WithoutAUsableEntryTheFileStaysAndTheReasonIsLoggedOnce) {
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  spdlog::default_logger()->sinks().push_back(sink);
  // Loopback is never a host default: nothing to export for it, and the
  // consumer reads msg_zerocopy.
  config_.exports[0].format = ExportFormat::kEnv;
  config_.exports[0].for_address.clear();
  config_.exports[0].scope = "host_default";
  config_.exports[0].methods = {Method::kMsgZerocopy};
  WriteFile(file_, "ZCAL_MSG_ZEROCOPY_THRESHOLD=16384\n");
  auto publisher = Open();
  ASSERT_TRUE(publisher);
  publisher->Accept(LoopbackNever(), Host(), 1'000);
  publisher->Publish();
  spdlog::default_logger()->sinks().pop_back();
  EXPECT_EQ(ReadFile(file_), "ZCAL_MSG_ZEROCOPY_THRESHOLD=16384\n");
  EXPECT_EQ(Counter("zcal_export_errors_total", "env"), "2");
  EXPECT_EQ(Counter("zcal_export_writes_total", "env"), "0");
  EXPECT_EQ(CountOf(log.str(), "has no usable entry"), 1u) << log.str();
  EXPECT_TRUE(Contains(log.str(), "export " + file_.string() + " (env scope host_default)"))
      << log.str();
}

TEST_F(ExporterTest, EnvMarksTheMethodsWithoutAUsableEntryInsteadOfFailing) {
  // Only msg_zerocopy calibrated on loopback: env's io_uring methods have no
  // entry. Its consumer may not read them: written, each marked missing.
  RoundOutcome outcome = LoopbackNever();
  auto& methods = outcome.reports[0].report->analysis.paths["loopback"].methods;
  methods.erase(Method::kUringSendZc);
  methods.erase(Method::kUringSendZcFixed);
  config_.methods = {Method::kCopy, Method::kMsgZerocopy};
  config_.exports[0].format = ExportFormat::kEnv;
  config_.exports[0].for_address.clear();
  config_.exports[0].scope = "loopback";
  auto publisher = Open();
  ASSERT_TRUE(publisher);
  publisher->Accept(outcome, Host(), 1'000);
  const std::string text = ReadFile(file_);
  EXPECT_TRUE(Contains(text, "\nZCAL_MSG_ZEROCOPY_THRESHOLD=never\n")) << text;
  EXPECT_TRUE(Contains(text, "\nZCAL_URING_SEND_ZC_THRESHOLD=''\nZCAL_URING_SEND_ZC_STATUS=missing\n"
                             "ZCAL_URING_SEND_ZC_REASON=no_entry\n"))
      << text;
  EXPECT_TRUE(Contains(text, "\nZCAL_MISSING=uring_send_zc,uring_send_zc_fixed\n")) << text;
  EXPECT_EQ(Counter("zcal_export_writes_total", "env"), "1");
  EXPECT_EQ(Counter("zcal_export_errors_total", "env"), "0");
}

TEST_F(ExporterTest, AFallbackIsWrittenWhereNoEntryIs) {
  config_.exports[0].format = ExportFormat::kEnv;
  config_.exports[0].for_address.clear();
  config_.exports[0].scope = "host_default";
  config_.exports[0].fallback = "never";
  auto publisher = Open();
  ASSERT_TRUE(publisher);
  publisher->Accept(LoopbackNever(), Host(), 1'000);
  const std::string text = ReadFile(file_);
  EXPECT_TRUE(Contains(text, "\nZCAL_SOURCE=fallback\n")) << text;
  EXPECT_TRUE(Contains(text, "\nZCAL_MSG_ZEROCOPY_THRESHOLD=never\n")) << text;
}

TEST_F(ExporterTest, AFileThatCannotBeWrittenIsCounted) {
  config_.exports[0].path = (dir_.path() / "gone" / "fabric.env").string();
  auto publisher = Open();
  ASSERT_TRUE(publisher);
  publisher->Accept(LoopbackNever(), Host(), 1'000);
  EXPECT_EQ(Counter("zcal_export_errors_total", "libfabric"), "1");
  EXPECT_EQ(Counter("zcal_export_writes_total", "libfabric"), "0");
}

TEST_F(ExporterTest, JsonIsNotRewrittenForANewGenerationOrHeartbeatAlone) {
  config_.exports[0].format = ExportFormat::kJson;
  auto publisher = Open();
  ASSERT_TRUE(publisher);
  publisher->Accept(LoopbackNever(), Host(), 1'000);
  const struct stat first = Stat(file_);
  EXPECT_TRUE(Contains(ReadFile(file_), "\"generation\"")) << ReadFile(file_);
  publisher->Heartbeat();
  publisher->Publish();  // a new generation, a later publish time
  EXPECT_EQ(Stat(file_).st_ino, first.st_ino);
  EXPECT_EQ(Counter("zcal_export_writes_total", "json"), "1");
}

// The ages the json format writes are the service's clock's, as every stamp
// of the segment is: here a clock a day behind the system's.
TEST_F(ExporterTest, JsonAgesAreTakenOnTheServicesClock) {
  config_.exports[0].format = ExportFormat::kJson;
  const std::uint64_t day_ago = common::RealtimeNs() - 86'400ULL * 1'000'000'000ULL;
  auto clock = std::make_shared<common::FakeClock>(day_ago);
  auto publisher = Publisher::Open(config_, dir_.path().string(), metrics_, clock);
  ASSERT_TRUE(publisher) << publisher.error().message;
  (*publisher)->Accept(LoopbackNever(), Host(), 1'000);
  const auto doc = nlohmann::json::parse(ReadFile(file_));
  ASSERT_TRUE(doc.at("heartbeat_age_seconds").is_number()) << doc.dump();
  EXPECT_LT(doc.at("heartbeat_age_seconds").get<double>(), 3600) << doc.dump();
}

TEST(ExportComparison, JsonIgnoresHeartbeatsAndAgesButNotVerdicts) {
  const std::string a =
      R"({"generation": 4, "heartbeat_ns": 1, "heartbeat_age_seconds": 0.1,
          "publish_time_ns": 1, "publish_age_seconds": 0.1,
          "entries": [{"verdict": "never", "age_seconds": 1.5}]})";
  const std::string b =
      R"({"generation": 5, "heartbeat_ns": 2, "heartbeat_age_seconds": 0.2,
          "publish_time_ns": 2, "publish_age_seconds": 0.3,
          "entries": [{"verdict": "never", "age_seconds": 2.5}]})";
  const std::string c = R"({"generation": 5, "entries": [{"verdict": "always"}]})";
  EXPECT_EQ(ComparableText(ExportFormat::kJson, a), ComparableText(ExportFormat::kJson, b));
  EXPECT_NE(ComparableText(ExportFormat::kJson, b), ComparableText(ExportFormat::kJson, c));
  EXPECT_NE(ComparableText(ExportFormat::kEnv, "A=1\n"), ComparableText(ExportFormat::kEnv, "A=2\n"));
}

// The publisher writes stream entries only today; the segment with depth
// classes comes from the writer itself, as a later agent's would.
TEST(ExporterDepth, AnExportAtADepthWritesItsClassAndTheStreamEntryWhereItHasNone) {
  zcal::test::ScopedName name("exporter-depth");
  auto writer = zcal::test::MakeWriter(name);
  PublishedEntry four = zcal::test::Entry(ScopeKind::kHostDefault, 49152);
  four.depth = DepthClass::k4;
  ASSERT_TRUE(writer->Publish(
      std::vector<PublishedEntry>{zcal::test::Entry(ScopeKind::kHostDefault, 24576), four},
      false));
  TempDir dir;
  ExportConfig at_four;
  at_four.format = ExportFormat::kLibfabric;
  at_four.path = (dir.path() / "four.env").string();
  at_four.scope = "host_default";
  at_four.depth = *ParseExportDepth("6");
  ExportConfig at_sixteen = at_four;
  at_sixteen.path = (dir.path() / "sixteen.env").string();
  at_sixteen.depth = *ParseExportDepth("16");
  ExportConfig strict = at_sixteen;
  strict.path = (dir.path() / "strict.env").string();
  strict.strict_depth = true;
  auto metrics = std::make_shared<Metrics>("test");
  Exporter exporter(metrics, common::SystemClock());
  exporter.Configure({at_four, at_sixteen, strict});
  exporter.Update(name.str());
  const std::string four_text = ReadFile(dir.path() / "four.env");
  EXPECT_TRUE(Contains(four_text, "FI_TCP_ZEROCOPY_SIZE=49152\n")) << four_text;
  EXPECT_TRUE(Contains(four_text, "ZCAL_DEPTH=4\n")) << four_text;
  const std::string sixteen_text = ReadFile(dir.path() / "sixteen.env");
  EXPECT_TRUE(Contains(sixteen_text, "FI_TCP_ZEROCOPY_SIZE=24576\n")) << sixteen_text;
  EXPECT_TRUE(Contains(sixteen_text, "ZCAL_DEPTH_FALLBACK=msg_zerocopy\n")) << sixteen_text;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "strict.env"))
      << "--strict-depth's refusal leaves the file alone";
  EXPECT_TRUE(Contains(metrics->Text(), "zcal_export_errors_total{format=\"libfabric\"} 1"))
      << metrics->Text();
}

}  // namespace
}  // namespace zcal::agent::exporter_test

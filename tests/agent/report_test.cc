// The report page as text: its policy admits exactly its inline scripts and
// style sheet, names from the input cannot escape their element, the
// loaders say where a document is wrong, and the agent's status routes.
#include <openssl/evp.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "zcal/agent/report/report.h"
#include "zcal/agent/metrics/status_page.h"
#include "zcal/calibrator/report_json.h"
#include "zcal/testing/path_ids.h"

namespace zcal::agent::report_test {
namespace {

using zcal::testing::ConfiguredPath;
using zcal::testing::PeerPath;

namespace cal = zcal::calibrator;
using nlohmann::json;

std::string Sha256Base64(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EXPECT_EQ(EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr), 1);
  unsigned char out[64] = {};
  const int n = EVP_EncodeBlock(out, digest, static_cast<int>(length));
  return std::string(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
}

// The text of every <TAG> element whose opening tag is exactly `open`.
std::vector<std::string> Elements(const std::string& page, const std::string& open,
                                  const std::string& close) {
  std::vector<std::string> texts;
  for (std::size_t at = page.find(open); at != std::string::npos;
       at = page.find(open, at + 1)) {
    const std::size_t start = at + open.size();
    texts.push_back(page.substr(start, page.find(close, start) - start));
  }
  return texts;
}

ReportEntry Entry(std::string path, cal::Method method) {
  ReportEntry e;
  e.path = std::move(path);
  e.result.method = method;
  e.result.baseline = cal::NativeBaseline(method);
  e.result.verdict = cal::Verdict::kThreshold;
  e.result.threshold_bytes = 16384;
  e.result.confidence = 0.9;
  for (std::uint64_t size : {4096u, 16384u, 65536u}) {
    cal::SizeComparison c;
    c.size_bytes = size;
    c.zerocopy.throughput_bytes_per_second = {1e9 * static_cast<double>(size) / 4096, 1e7};
    c.zerocopy.cpu_ns_per_byte = {0.1, 0.01};
    c.baseline = c.zerocopy;
    e.result.sizes.push_back(c);
  }
  return e;
}

TEST(ReportPage, PolicyAdmitsExactlyItsInlineScriptsAndStyleSheet) {
  ReportModel model;
  model.source = "test";
  model.entries.push_back(Entry("loopback", cal::Method::kMsgZerocopy));
  const std::string page = RenderReport(model);
  const std::string& policy = ReportContentSecurityPolicy();
  EXPECT_TRUE(policy.starts_with("default-src 'none'; ")) << policy;
  EXPECT_EQ(policy.find("unsafe"), std::string::npos) << policy;

  const std::vector<std::string> scripts = Elements(page, "<script>", "</script>");
  const std::vector<std::string> styles = Elements(page, "<style>", "</style>");
  ASSERT_EQ(scripts.size(), 2u);
  ASSERT_EQ(styles.size(), 1u);
  std::size_t hashes = 0;
  for (std::size_t at = policy.find("'sha256-"); at != std::string::npos;
       at = policy.find("'sha256-", at + 1)) {
    ++hashes;
  }
  EXPECT_EQ(hashes, 3u) << policy;
  for (const std::string& text : {scripts[0], scripts[1], styles[0]}) {
    EXPECT_NE(policy.find("'sha256-" + Sha256Base64(text) + "'"), std::string::npos);
  }
  // The policy is in the page, before the first script.
  const std::size_t meta = page.find("<meta http-equiv=\"Content-Security-Policy\"");
  ASSERT_NE(meta, std::string::npos);
  EXPECT_LT(meta, page.find("<script"));
}

TEST(ReportPage, NamesFromTheInputCannotLeaveTheirElement) {
  ReportModel model;
  model.source = "<img src=x>";
  model.entries.push_back(Entry("</script><b>p", cal::Method::kUringSendZc));
  const std::string page = RenderReport(model);
  EXPECT_EQ(page.find("<img src=x>"), std::string::npos);
  EXPECT_EQ(page.find("</script><b>"), std::string::npos);
  EXPECT_NE(page.find("&lt;/script&gt;&lt;b&gt;p"), std::string::npos);
  const std::vector<std::string> data =
      Elements(page, "<script type=\"application/json\" id=\"zcal-data\">", "</script>");
  ASSERT_EQ(data.size(), 1u);
  const json doc = json::parse(data[0]);
  EXPECT_FALSE(doc["lazy"].get<bool>());
  ASSERT_EQ(doc["entries"].size(), 1u);
  EXPECT_EQ(doc["entries"][0]["threshold"], 16384);
  EXPECT_EQ(doc["entries"][0]["sizes"].size(), 3u);
}

TEST(ReportPage, DrawsALargeStateAsItScrolls) {
  ReportModel model;
  for (int i = 0; i < 25; ++i) {
    model.entries.push_back(Entry("peer-" + std::to_string(i), cal::Method::kMsgZerocopy));
  }
  const std::string page = RenderReport(model);
  EXPECT_NE(page.find("{\"entries\":"), std::string::npos);
  EXPECT_NE(page.find("\"lazy\":true"), std::string::npos);
}

// Where the probed sizes bound the threshold, disagree with the curves or
// are overruled by the threshold, the page says so, as `zcal analyze` does.
TEST(ReportPage, SaysWhatTheProbedSizesSayOfTheThreshold) {
  ReportModel model;
  ReportEntry e = Entry("discard", cal::Method::kUringSendZcFixed);
  e.result.measured_bracket = cal::MeasuredBracket{4096, 16384};
  e.result.curve_choice = cal::CurveChoice{20480, 0.012};
  e.result.curve_disagreements = {cal::CurveDisagreement{16384, true, 0.93, 1.04, true}};
  e.result.overruled = {cal::OverruledSize{65536, false, true, 1.02, 0.02}};
  e.result.overruled_cost = 0.004;
  model.entries.push_back(e);
  const std::string page = RenderReport(model);
  EXPECT_NE(page.find("The probed sizes put the threshold above 4 KiB"), std::string::npos)
      << page;
  EXPECT_NE(page.find("at or below 16 KiB (zerocopy wins clearly there and above)"),
            std::string::npos);
  EXPECT_NE(page.find("On the fitted curves alone the threshold would be from 20 KiB"),
            std::string::npos);
  EXPECT_NE(page.find("disagree with probed sizes beyond their noise: 16 KiB (measured: "
                      "zerocopy wins, cost 0.930; curves 1.040; bounds the threshold)"),
            std::string::npos);
  EXPECT_NE(page.find("The threshold overrules 64 KiB (zerocopy loses clearly; 2.0 % dearer"),
            std::string::npos);
  model.entries[0] = Entry("discard", cal::Method::kUringSendZcFixed);
  EXPECT_EQ(RenderReport(model).find("probed sizes"), std::string::npos)
      << "nothing to say without a bracket";
}

TEST(ReportPage, SaysWhatEndedTheProbesOfAMethod) {
  ReportModel model;
  ReportEntry e = Entry("discard", cal::Method::kMsgZerocopy);
  e.result.stop = cal::PlannerStop{cal::StopReason::kNoise,
                                   "resolution limited by noise (9 % scatter between repeats)"};
  model.entries.push_back(e);
  const std::string page = RenderReport(model);
  EXPECT_NE(page.find("The calibration stopped probing it: the noise, not the budget, limited "
                      "its resolution (resolution limited by noise (9 % scatter between "
                      "repeats))."),
            std::string::npos)
      << page;
  model.entries[0].result.stop = cal::PlannerStop{cal::StopReason::kBudget, "time ran out"};
  EXPECT_NE(RenderReport(model).find("the budget ran out first (time ran out)"), std::string::npos);
  model.entries[0].result.stop.reset();
  EXPECT_EQ(RenderReport(model).find("stopped probing"), std::string::npos)
      << "an analysis of samples alone says nothing of it";
}

// A numeric class decided as the stream plus its cost per send says so,
// with the figures and any size it set aside; one that was refused says
// why.
TEST(ReportPage, SaysWhatADepthClassCostsPerSendOverTheStream) {
  ReportModel model;
  ReportEntry e = Entry("discard", cal::Method::kUringSendZcFixed);
  e.result.class_offset = cal::ClassOffset{483, 5, 12, 6, 24, "", 36864, 37888, ""};
  model.entries.push_back(e);
  const auto says = [&model](const std::string& text) {
    const std::string page = RenderReport(model);
    EXPECT_NE(page.find(text), std::string::npos) << page;
    return page;
  };
  const std::string page =
      says("At this depth each zerocopy send costs +483 ns of CPU over the stream class's "
           "(&plusmn;10 ns, 95 %; 12 samples at 6 sizes): the stream class's 24 samples, moved "
           "by that, decided it with this class's own.");
  EXPECT_EQ(page.find("set aside"), std::string::npos) << "none was";
  model.entries[0].result.class_offset->set_aside = "+2097 ns at 1024 bytes <against>";
  says("Off that cost per send, and set aside as zerocopy wins or loses there either way: "
       "+2097 ns at 1024 bytes &lt;against&gt;.");
  model.entries[0].result.class_offset->rejected = "its sender ran for 30 % <of> the time";
  says("Decided on this depth's own samples: its sender ran for 30 % &lt;of&gt; the time.");
  model.entries[0].result.class_offset.reset();
  EXPECT_EQ(RenderReport(model).find("this depth"), std::string::npos);
}

// A calibration whose host changed speed says so under each method of the
// path, with the figures; one whose samples were left alone says nothing.
TEST(ReportPage, SaysWhenTheHostsSpeedMovedDuringTheCalibration) {
  cal::PathResult path;
  path.path = "discard";
  path.methods[cal::Method::kMsgZerocopy] = Entry("discard", cal::Method::kMsgZerocopy).result;
  path.drift = cal::HostDrift{180, 120, 0.82, 1.17, 0.82, 1.16, 0.004, true};
  json document = {{"paths", {{"discard", cal::ToJson(path)}}}};
  std::vector<std::string> where;
  auto model = ModelOfDocument(document, "x", where);
  ASSERT_TRUE(model) << model.error().message;
  ASSERT_EQ(model->entries.size(), 1u);
  const std::string page = RenderReport(*model);
  EXPECT_NE(page.find("The host's speed moved during this calibration: its probes cost from "
                      "0.82 to 1.17 times the run's level (CPU per byte), measured by 120 of "
                      "its 180 samples"),
            std::string::npos)
      << page;
  document["paths"]["discard"]["drift"]["applied"] = false;
  model = ModelOfDocument(document, "x", where);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(RenderReport(*model).find("speed moved"), std::string::npos);
  document["paths"]["discard"]["drift"]["samples"] = "many";
  const auto bad = ModelOfDocument(document, "x", where);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("paths.discard.drift: 'samples' must be a whole number"),
            std::string::npos)
      << bad.error().message;
}

TEST(ReportModelOf, SaysWhatIsWrongAndWhere) {
  std::vector<std::string> where;
  auto unknown = ModelOfDocument(json{{"metrics", 1}}, "x", where);
  ASSERT_FALSE(unknown);
  EXPECT_TRUE(unknown.error().message.starts_with("unknown document")) << unknown.error().message;

  const json bad = {{"paths", {{"p", {{"methods", {{"copy", json::object()}}}}}}}};
  auto baseline = ModelOfDocument(bad, "x", where);
  ASSERT_FALSE(baseline);
  EXPECT_EQ(where, (std::vector<std::string>{"paths", "p", "methods", "copy"}));
  EXPECT_NE(baseline.error().message.find("not a zerocopy method"), std::string::npos);
}

TEST(ReportModelOf, ReadsTheHostFactsOfACalibration) {
  const json doc = {
      {"paths", {{"loopback", {{"methods", json::object()}}}}},
      {"host",
       {{"kernel_release", "6.1.0"}, {"cpu_model", "Xeon"}, {"fingerprint", "00000000000000ab"},
        {"iommu_cmdline", {"intel_iommu=on"}},
        {"interface", {{"name", "eth0"}, {"driver", "mlx5_core"}, {"iommu_group", "7"},
                       {"iommu_type", "DMA-FQ"}, {"speed_mbps", 100000}}}}}};
  std::vector<std::string> where;
  auto model = ModelOfDocument(doc, "run.json", where);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(model->kind, ReportKind::kCalibration);
  ASSERT_TRUE(model->host);
  const std::string page = RenderReport(*model);
  for (const char* fact : {"6.1.0", "Xeon", "00000000000000ab", "intel_iommu=on", "mlx5_core",
                           "DMA-FQ (translated, lazy flush)", "100000 Mbit/s"}) {
    EXPECT_NE(page.find(fact), std::string::npos) << fact;
  }
}

probes::HostLoad Load() {
  probes::HostLoad load;
  load.busy_share = 0.34;
  load.steal_share = 0;
  load.own_share = 0.18;
  load.runnable_mean = 2.1;
  load.runnable_max = 4;
  load.window_seconds = 2.3;
  load.runnable_reads = 9;
  return load;
}

TEST(ReportModelOf, ShowsTheLoadEachResultOfAStateWasMeasuredUnder) {
  AgentState state;
  state.paths[ConfiguredPath("discard")][cal::Method::kUringSendZc].published =
      Entry("discard", cal::Method::kUringSendZc).result;
  state.paths[ConfiguredPath("discard")][cal::Method::kUringSendZc].load = Load();
  state.paths[ConfiguredPath("discard")][cal::Method::kMsgZerocopy].published =
      Entry("discard", cal::Method::kMsgZerocopy).result;
  const ReportModel model = ModelOfState(state, "state.json");
  ASSERT_EQ(model.entries.size(), 2u);
  const std::string page = RenderReport(model);
  EXPECT_NE(page.find("<th>Measured under</th>"), std::string::npos);
  EXPECT_NE(page.find("<td class=\"load\">host busy 34 %, steal 0 %, this process 18 %, "
                      "runnable 2.1 (max 4) over 2.3 s</td>"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("<td class=\"load\">load not measured</td>"), std::string::npos);
}

TEST(ReportModelOf, SaysWhichTrafficMixEachPathOfAStateWasDecidedFor) {
  AgentState state;
  state.paths[ConfiguredPath("discard")][cal::Method::kMsgZerocopy].published =
      Entry("discard", cal::Method::kMsgZerocopy).result;
  state.paths[ConfiguredPath("loopback")][cal::Method::kMsgZerocopy].published =
      Entry("loopback", cal::Method::kMsgZerocopy).result;
  DecidedFor apps;
  apps.source = MixSource::kApplications;
  apps.mix = TrafficMix{3600, 12000, {{6144, 1.0}, {98304, 2.0}}, {}};
  state.decided_for[ConfiguredPath("discard")] = apps;
  const ReportModel model = ModelOfState(state, "state.json");
  ASSERT_EQ(model.entries.size(), 2u);
  EXPECT_EQ(model.entries[0].decided_for, apps);
  EXPECT_FALSE(model.entries[1].decided_for) << "a state written before the mix says nothing";
  const std::string page = RenderReport(model);
  EXPECT_NE(page.find("Decided for the traffic mix: applications (3600 s, 12000 sends, 2 "
                      "sizes)."),
            std::string::npos)
      << page;
}

TEST(ReportModelOf, AStateHasARowAndAChartPerDepthClass) {
  AgentState state;
  state.paths[ConfiguredPath("discard")][cal::Method::kMsgZerocopy].published =
      Entry("discard", cal::Method::kMsgZerocopy).result;
  state.paths[ConfiguredPath("discard")][{cal::Method::kMsgZerocopy, DepthClass::k4}].published =
      Entry("discard", cal::Method::kMsgZerocopy).result;
  const ReportModel model = ModelOfState(state, "state.json");
  ASSERT_EQ(model.entries.size(), 2u);
  EXPECT_EQ(model.entries[0].depth, DepthClass::kStream) << "stream first";
  EXPECT_EQ(model.entries[1].depth, DepthClass::k4);
  const std::string page = RenderReport(model);
  EXPECT_NE(page.find("<th>Method</th><th>Depth</th>"), std::string::npos);
  EXPECT_NE(page.find(">msg_zerocopy</a></td><td>stream</td>"), std::string::npos) << page;
  EXPECT_NE(page.find(">msg_zerocopy</a></td><td>4</td>"), std::string::npos) << page;
  EXPECT_NE(page.find("on path discard, depth 4</span>"), std::string::npos);
  EXPECT_NE(page.find("data-method=\"msg_zerocopy\" data-depth=\"4\""), std::string::npos);
}

TEST(ReportModelOf, ReadsTheLoadOfACalibrationAndSaysWhereItIsWrong) {
  json doc = {
      {"paths", {{"loopback", {{"methods", {{"msg_zerocopy",
                                             cal::ToJson(Entry("loopback", cal::Method::kMsgZerocopy)
                                                             .result)}}}}}}},
      {"host", {{"kernel_release", "6.1.0"}}},
      {"host_load", {{"busy_share", 0.5}, {"steal_share", 0.25}, {"own_share", 0.125},
                     {"runnable_mean", 3.0}, {"runnable_max", 5}, {"runnable_reads", 7},
                     {"window_seconds", 1.5}}}};
  std::vector<std::string> where;
  auto model = ModelOfDocument(doc, "run.json", where);
  ASSERT_TRUE(model) << model.error().message;
  ASSERT_EQ(model->entries.size(), 1u);
  ASSERT_TRUE(model->entries[0].load);
  EXPECT_EQ(model->entries[0].load->runnable_max, 5u);
  EXPECT_NE(RenderReport(*model).find("host busy 50 %, steal 25 %, this process 12.5 %, "
                                      "runnable 3.0 (max 5) over 1.5 s"),
            std::string::npos);

  doc["host_load"]["busy_share"] = 2;
  auto bad = ModelOfDocument(doc, "run.json", where);
  ASSERT_FALSE(bad);
  EXPECT_EQ(where, (std::vector<std::string>{"host_load"}));
  EXPECT_NE(bad.error().message.find("host_load: busy_share: 2 is not a share in [0, 1]"),
            std::string::npos)
      << bad.error().message;

  // A calibration written before the load was measured: not measured.
  doc.erase("host_load");
  model = ModelOfDocument(doc, "run.json", where);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_NE(RenderReport(*model).find("load not measured"), std::string::npos);

  // An analysis of samples has no load to show.
  doc.erase("host");
  model = ModelOfDocument(doc, "analysis.json", where);
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(model->kind, ReportKind::kAnalysis);
  EXPECT_EQ(RenderReport(*model).find("Measured under"), std::string::npos);
}

// An application that sent 3 messages of 4 KiB with copy and 1 of 64 KiB
// with zerocopy through the host default, and one of 1 MiB through a peer;
// 4 completions of which 1 came back copied.
AppsSnapshot OneApp() {
  AppCounters host;
  host.answers[0][0][0] = 3;
  host.answers[0][1][0] = 1;
  host.bytes = {3 * 4096, 65536};
  host.sizes[12] = 3;
  host.sizes[16] = 1;
  host.completions = 4;
  host.copied = 1;
  AppCounters peer;
  peer.answers[3][1][0] = 1;
  peer.bytes = {0, 1 << 20};
  peer.sizes[20] = 1;
  AppsSnapshot apps;
  AppTotals& t = apps.apps["storage<target>"];
  t.cells[{AppScope::kHostDefault, cal::Method::kMsgZerocopy}] = host;
  t.cells[{AppScope::kPeer, cal::Method::kMsgZerocopy}] = peer;
  t.live_processes = 1;
  t.exited_processes = 2;
  return apps;
}

TEST(ReportPage, ShowsEachApplicationsZerocopyAndCopiedSharesAndSizesAgainstTheThreshold) {
  ReportModel model;
  model.kind = ReportKind::kLive;
  model.apps = OneApp();
  model.published = {{"entries", json::array({{{"scope", "host_default"},
                                               {"method", "msg_zerocopy"},
                                               {"depth", "stream"},
                                               {"verdict", "threshold"},
                                               {"threshold_bytes", 16384}}})}};
  const std::string page = RenderReport(model);
  const std::vector<std::string> rows = Elements(page, "<tr><td>storage&lt;target&gt;</td>", "</tr>");
  ASSERT_EQ(rows.size(), 1u) << "one row per application and method, the scopes summed";
  // 5 sends; of 1,126,400 bytes, 1,114,112 with zerocopy; 1 of 4 copied.
  EXPECT_NE(rows[0].find("<td>msg_zerocopy</td><td class=\"num\">5</td>"), std::string::npos)
      << rows[0];
  EXPECT_NE(rows[0].find("98.9 %"), std::string::npos) << rows[0];
  EXPECT_NE(rows[0].find("<td class=\"num\">4</td><td class=\"num\">25.0 %</td>"),
            std::string::npos)
      << rows[0];
  EXPECT_NE(rows[0].find("1 running, 2 exited"), std::string::npos);
  const std::vector<std::string> charts = Elements(page, "<svg class=\"sizes\"", "</svg>");
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_NE(charts[0].find("<title>4 KiB \u2013 8 KiB: 3 sends</title>"), std::string::npos)
      << charts[0];
  EXPECT_NE(charts[0].find("<title>1 MiB \u2013 2 MiB: 1 sends</title>"), std::string::npos);
  EXPECT_NE(charts[0].find("<line class=\"threshold\""), std::string::npos);
  EXPECT_NE(charts[0].find("threshold 16 KiB"), std::string::npos);
  EXPECT_EQ(page.find("style=\""), std::string::npos) << "the policy admits no style attribute";
}

TEST(ReportPage, MarksAPublishedEntryTheApplicationsContradict) {
  ReportModel model;
  model.kind = ReportKind::kLive;
  model.published = {{"entries", json::array({{{"scope", "host_default"},
                                               {"method", "msg_zerocopy"},
                                               {"verdict", "threshold"},
                                               {"threshold_bytes", 16384},
                                               {"contradicted", true}},
                                              {{"scope", "loopback"},
                                               {"method", "msg_zerocopy"},
                                               {"verdict", "never"},
                                               {"contradicted", false}}})}};
  const std::string page = RenderReport(model);
  EXPECT_NE(page.find("<td>host_default (contradicted by the applications: copy)</td>"),
            std::string::npos);
  EXPECT_NE(page.find("<td>loopback</td>"), std::string::npos);
}

TEST(ReportPage, SaysWhenNoApplicationReportsAndHasNoSectionForAnInputWithout) {
  ReportModel model;
  model.kind = ReportKind::kLive;
  EXPECT_EQ(RenderReport(model).find("id=\"apps\""), std::string::npos);
  model.apps = AppsSnapshot{};
  const std::string page = RenderReport(model);
  EXPECT_NE(page.find("id=\"apps\""), std::string::npos);
  EXPECT_NE(page.find("No application reports"), std::string::npos);
  EXPECT_EQ(page.find("<svg class=\"sizes\""), std::string::npos);
}

TEST(StatusPage, ShowsTheApplicationsOfTheLastUpdateApps) {
  auto status = std::make_shared<StatusPage>();
  status->Update(AgentState{}, false, "/zcal-report-test-absent");
  EXPECT_NE(status->Page(1).body.find("No application reports"), std::string::npos);
  status->UpdateApps(OneApp());
  const std::string page = status->Page(1).body;
  EXPECT_NE(page.find("<tr><td>storage&lt;target&gt;</td>"), std::string::npos);
  EXPECT_EQ(page.find("threshold 16 KiB"), std::string::npos) << "no segment, no threshold";
  status->Update(AgentState{}, false, "/zcal-report-test-absent");
  EXPECT_NE(status->Page(1).body.find("storage&lt;target&gt;"), std::string::npos)
      << "an Update of the state keeps the applications";
}

TEST(StatusPage, AnswersOnceTheAgentHasAState) {
  auto status = std::make_shared<StatusPage>();
  EXPECT_EQ(status->Page(1).status, 503);
  EXPECT_EQ(status->Thresholds(1).status, 503);

  AgentState state;
  state.paths[ConfiguredPath("loopback")][cal::Method::kMsgZerocopy].published =
      Entry("loopback", cal::Method::kMsgZerocopy).result;
  status->Update(state, true, "/zcal-report-test-absent");
  const HttpResponse page = status->Page(1'700'000'000'000'000'000);
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  bool policy = false;
  for (const auto& [name, value] : page.headers) {
    if (name == "Content-Security-Policy") {
      policy = value == ReportContentSecurityPolicy() + "; frame-ancestors 'none'";
    }
  }
  EXPECT_TRUE(policy);
  EXPECT_NE(page.body.find("The segment could not be read"), std::string::npos);
  EXPECT_NE(page.body.find("data-method=\"msg_zerocopy\""), std::string::npos);

  const HttpResponse api = status->Thresholds(1);
  EXPECT_EQ(api.status, 503);
  EXPECT_EQ(api.content_type, "application/json");
  EXPECT_NE(json::parse(api.body)["error"].get<std::string>().find("/zcal-report-test-absent"),
            std::string::npos);
  EXPECT_EQ(status->Routes().size(), 2u);
}

}  // namespace
}  // namespace zcal::agent::report_test

// The report pages in a real browser: headless Chromium, network
// off, loads the page of each kind of input and the live agent's, and the
// DOM it leaves shows a drawn chart per path and method, the threshold
// marker where the axis puts the threshold, no console message and no
// external URL. Screenshots go to $ZCAL_SCREENSHOT_DIR when it is set.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent_harness.h"
#include "browser.h"
#include "test_util.h"

namespace zcal::agent::testing::report_browser_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;

std::string Source(const std::string& relative) {
  return std::string(std::getenv("ZCAL_SOURCE_ROOT")) + "/" + relative;
}

// (path, method) -> whether it has sizes to draw, from a document of
// `zcal calibrate --json` / `zcal analyze --json`.
std::map<std::pair<std::string, std::string>, bool> Expected(const json& doc) {
  std::map<std::pair<std::string, std::string>, bool> expected;
  for (const auto& [path, p] : doc.at("paths").items()) {
    for (const auto& [method, r] : p.at("methods").items()) {
      expected[{path, method}] = !r.at("sizes").empty();
    }
  }
  return expected;
}

fs::path Shot(const TempDir& dir, const std::string& name) {
  const char* keep = std::getenv("ZCAL_SCREENSHOT_DIR");
  if (keep != nullptr && *keep != 0) {
    fs::create_directories(keep);
    return fs::path(keep) / (name + ".png");
  }
  return dir.path() / (name + ".png");
}

// What every page must show in the browser.
void ExpectGoodPage(const LoadedPage& page, const fs::path& shot,
                    const std::map<std::pair<std::string, std::string>, bool>& expected) {
  ASSERT_EQ(page.exit_status, 0) << page.log;
  ASSERT_FALSE(page.dom.empty()) << page.log;
  for (const std::string& line : page.console) ADD_FAILURE() << "console: " << line;
  const std::vector<std::string> html = Tags(page.dom, "html");
  ASSERT_EQ(html.size(), 1u);
  EXPECT_EQ(Attribute(html[0], "data-errors"), "") << "the page reported script errors";
  EXPECT_NE(Attribute(html[0], "data-render-ms"), "") << "report.js did not finish";
  for (const std::string& url : ExternalUrls(page.dom)) ADD_FAILURE() << "external URL " << url;
  EXPECT_EQ(PngSize(shot).first, 1280) << shot;

  const std::vector<std::string> canvases = Tags(page.dom, "canvas");
  ASSERT_FALSE(expected.empty());
  for (const auto& [entry, drawable] : expected) {
    const std::pair<std::string, std::string> key = entry;  // clang 14: no captured bindings
    for (const char* kind : {"throughput", "cpu"}) {
      const auto it = std::find_if(canvases.begin(), canvases.end(), [&](const std::string& c) {
        return Attribute(c, "data-path") == key.first &&
               Attribute(c, "data-method") == key.second && Attribute(c, "data-kind") == kind;
      });
      if (!drawable) {
        EXPECT_EQ(it, canvases.end()) << key.first << "/" << key.second;
        continue;
      }
      ASSERT_NE(it, canvases.end()) << "no " << kind << " chart for " << key.first << "/"
                                    << key.second;
      EXPECT_EQ(Attribute(*it, "data-rendered"), "1")
          << kind << " chart of " << key.first << "/" << key.second << " not drawn";
    }
  }
}

std::string Figure(const LoadedPage& page) {
  const std::vector<std::string> html = Tags(page.dom, "html");
  const std::string ms = html.empty() ? "" : Attribute(html[0], "data-render-ms");
  const std::string drawn = html.empty() ? "" : Attribute(html[0], "data-charts-drawn");
  char text[160];
  std::snprintf(text, sizeof text,
                "browser run %.2f s, charts drawn %s, last chart drawn %s ms after "
                "navigation",
                page.seconds, drawn.c_str(), ms.c_str());
  return text;
}

class ReportBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ChromiumPath().empty()) {
      GTEST_SKIP() << "no Chromium at /usr/bin/chromium (Debian package chromium, "
                      "scripts/install-deps.sh) nor $ZCAL_CHROMIUM";
    }
  }

  json RunJson(const std::vector<std::string>& argv) {
    const CommandResult run = RunCommand(argv);
    EXPECT_EQ(run.status, 0) << run.err;
    return json::parse(run.out);
  }

  void Report(const std::string& input, const fs::path& out) {
    const CommandResult run = RunCommand({ZcalBinary(), "report", "-o", out.string(), input});
    ASSERT_EQ(run.status, 0) << run.err;
  }

  TempDir dir_;
};

TEST_F(ReportBrowser, ExampleCsvMarksTheThresholdWhereTheLogAxisPutsIt) {
  const std::string csv = Source("configs/examples/xeon-cx6.csv");
  const json analysis = RunJson({ZcalBinary(), "analyze", "--json", csv});
  const fs::path html = dir_.path() / "xeon.html";
  ASSERT_NO_FATAL_FAILURE(Report(csv, html));
  const std::string file = ReadFile(html);
  for (const std::string& url : ExternalUrls(file)) ADD_FAILURE() << "external URL " << url;
  const fs::path shot = Shot(dir_, "report-xeon-cx6");
  const LoadedPage page = LoadPage("file://" + html.string(), shot);
  ExpectGoodPage(page, shot, Expected(analysis));
  std::printf("xeon-cx6 report: %zu bytes, %s\n", file.size(), Figure(page).c_str());

  // The example's msg_zerocopy pays off from about 16 KiB (its header
  // says so); the marker is drawn at the threshold the analysis gives.
  const json& result = analysis["paths"]["xeon-cx6"]["methods"]["msg_zerocopy"];
  ASSERT_TRUE(result["threshold_bytes"].is_number()) << result.dump();
  const double threshold = result["threshold_bytes"].get<double>();
  EXPECT_NEAR(threshold, 16384, 2048);
  int checked = 0;
  for (const std::string& canvas : Tags(page.dom, "canvas")) {
    if (Attribute(canvas, "data-method") != "msg_zerocopy") continue;
    const std::string marker = Attribute(canvas, "data-marker-x");
    ASSERT_NE(marker, "") << canvas;
    // Ticks [bytes, pixel]: powers of two, equally spaced on a log axis.
    const json ticks = json::parse(Attribute(canvas, "data-ticks"));
    ASSERT_GE(ticks.size(), 3u);
    const double step = ticks[1][1].get<double>() - ticks[0][1].get<double>();
    for (std::size_t i = 1; i < ticks.size(); ++i) {
      EXPECT_EQ(ticks[i][0].get<double>(), 2 * ticks[i - 1][0].get<double>());
      EXPECT_NEAR(ticks[i][1].get<double>() - ticks[i - 1][1].get<double>(), step, 0.5);
    }
    double at_16k = -1;
    for (const json& t : ticks) {
      if (t[0].get<double>() == 16384) at_16k = t[1].get<double>();
    }
    ASSERT_GE(at_16k, 0) << "no 16 KiB tick";
    const double expected = at_16k + step * std::log2(threshold / 16384);
    EXPECT_NEAR(std::stod(marker), expected, 1.0) << Attribute(canvas, "data-kind");
    std::printf("msg_zerocopy %s chart: threshold %.0f B drawn at x=%s px, 16 KiB tick at "
                "%.1f px\n",
                Attribute(canvas, "data-kind").c_str(), threshold, marker.c_str(), at_16k);
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

TEST_F(ReportBrowser, CalibrationOnLoopbackDrawsEveryMethod) {
  const fs::path direct = dir_.path() / "calibrate.html";
  const json doc = RunJson({ZcalBinary(), "calibrate", "--path", "loopback", "--max", "16KiB",
                            "--budget", "2", "--json", "--report", direct.string()});
  WriteFile(dir_.path() / "calibrate.json", doc.dump());
  const fs::path html = dir_.path() / "from-json.html";
  ASSERT_NO_FATAL_FAILURE(Report((dir_.path() / "calibrate.json").string(), html));
  for (const fs::path& file : {direct, html}) {
    const fs::path shot = Shot(dir_, "report-calibrate-" + file.stem().string());
    const LoadedPage page = LoadPage("file://" + file.string(), shot);
    ExpectGoodPage(page, shot, Expected(doc));
    // The host facts of the run are on the page.
    EXPECT_NE(page.dom.find(doc["host"]["kernel_release"].get<std::string>()),
              std::string::npos);
    EXPECT_NE(page.dom.find(doc["host"]["fingerprint"].get<std::string>()), std::string::npos);
    std::printf("calibrate report %s: %s\n", file.filename().c_str(), Figure(page).c_str());
  }
}

// The agent's live page and the report of the state it saved, from one run
// of the real agent (loopback, and the discard path where zerocopy is real).
TEST_F(ReportBrowser, AgentLivePageAndItsSavedState) {
  AgentSettings settings;
  settings.segment = UniqueSegment();
  SegmentCleanup cleanup(settings.segment);
  settings.state = dir_.path() / "state.json";
  settings.discard = true;
  settings.budget_seconds = 4;
  WriteFile(dir_.path() / "agent.yaml", AgentConfig(settings));
  auto agent = AgentProcess::Start(dir_.path() / "agent.yaml", dir_.path() / "agent.log");
  ASSERT_TRUE(agent->WaitForLog("calibration finished", milliseconds(60'000))) << agent->Log();
  const int port = agent->MetricsPort();
  ASSERT_GT(port, 0) << agent->Log();
  const std::string base = "http://127.0.0.1:" + std::to_string(port);

  // /api/v1/thresholds is `zcal show --json`, ages apart.
  json shown = RunJson({ZcalBinary(), "show", "--json", "--segment", settings.segment});
  const auto api = HttpGet(port, "/api/v1/thresholds");
  ASSERT_TRUE(api);
  ASSERT_EQ(api->status, 200) << api->body;
  json served = json::parse(api->body);
  for (json* doc : {&served, &shown}) {
    for (const char* key : {"publish_age_seconds", "heartbeat_age_seconds", "heartbeat_ns"}) {
      doc->erase(key);
    }
    for (json& e : (*doc)["entries"]) e.erase("age_seconds");
  }
  EXPECT_EQ(served, shown);

  // The page's policy is a header too.
  const CommandResult head = RunCommand({"/usr/bin/curl", "-s", "-D", "-", "-o", "/dev/null",
                                         base + "/"});
  EXPECT_NE(head.out.find("Content-Security-Policy: default-src 'none'"), std::string::npos)
      << head.out;

  // What the page must show: every path and method of the saved state.
  json expected_doc = {{"paths", json::object()}};
  const auto collect = [&](const json& state) {
    for (const auto& [path, methods] : state.at("paths").items()) {
      for (const auto& [method, s] : methods.items()) {
        expected_doc["paths"][path]["methods"][method] = s.at("published");
      }
    }
  };
  ASSERT_TRUE(WaitFor([&] { return fs::exists(settings.state); }, milliseconds(10'000)));
  collect(json::parse(ReadFile(settings.state)));
  const fs::path live_shot = Shot(dir_, "report-agent-live");
  const LoadedPage live = LoadPage(base + "/", live_shot, 1000);
  ExpectGoodPage(live, live_shot, Expected(expected_doc));
  EXPECT_NE(live.dom.find("Published now"), std::string::npos);
  EXPECT_NE(live.dom.find(settings.segment), std::string::npos);
  std::printf("live page: %s\n", Figure(live).c_str());

  agent->Signal(SIGTERM);
  ASSERT_EQ(agent->WaitExit(milliseconds(20'000)), 0) << agent->Log();
  const fs::path html = dir_.path() / "state.html";
  ASSERT_NO_FATAL_FAILURE(Report(settings.state.string(), html));
  const fs::path shot = Shot(dir_, "report-agent-state");
  const LoadedPage page = LoadPage("file://" + html.string(), shot);
  ExpectGoodPage(page, shot, Expected(expected_doc));
  std::printf("state report: %s\n", Figure(page).c_str());
}

// 256 entries (86 peers of the example's three methods, less two): the file
// stays under 1 MiB and the browser draws what is in view.
TEST_F(ReportBrowser, LargeStateStaysUnderOneMebibyteAndRenders) {
  const json analysis = RunJson({ZcalBinary(), "analyze", "--json",
                                 Source("configs/examples/xeon-cx6.csv")});
  const json& methods = analysis["paths"]["xeon-cx6"]["methods"];
  json state = {{"format", "zcal-state"}, {"version", 1}, {"saved_at_ns", 1700000000000000000},
                {"fingerprint", "00000000deadbeef"}, {"last_success_ns", 1700000000000000000},
                {"host", json::object()}, {"paths", json::object()}};
  int entries = 0;
  for (int peer = 0; entries < 256; ++peer) {
    for (const auto& [method, result] : methods.items()) {
      if (entries == 256) break;
      state["paths"]["peer-" + std::to_string(peer)][method] = {
          {"published", result}, {"measured_at_ns", 1700000000000000000}, {"pending", nullptr}};
      ++entries;
    }
  }
  WriteFile(dir_.path() / "state.json", state.dump());
  const fs::path html = dir_.path() / "large.html";
  ASSERT_NO_FATAL_FAILURE(Report((dir_.path() / "state.json").string(), html));
  const std::uintmax_t bytes = fs::file_size(html);
  EXPECT_LT(bytes, 1u << 20);

  const fs::path shot = Shot(dir_, "report-large-state");
  const LoadedPage page = LoadPage("file://" + html.string(), shot);
  ASSERT_EQ(page.exit_status, 0) << page.log;
  for (const std::string& line : page.console) ADD_FAILURE() << "console: " << line;
  const std::vector<std::string> html_tag = Tags(page.dom, "html");
  ASSERT_EQ(html_tag.size(), 1u);
  EXPECT_EQ(Attribute(html_tag[0], "data-errors"), "");
  EXPECT_EQ(Tags(page.dom, "canvas").size(), 512u);
  // The verdict table lists every entry, charts or not.
  EXPECT_EQ(CountOf(page.dom, "<tr><td>peer-"), 256u);
  EXPECT_GT(std::stoi(Attribute(html_tag[0], "data-charts-drawn")), 0);
  std::printf("256-entry state report: %ju bytes (%.0f KiB), %s\n", bytes, bytes / 1024.0,
              Figure(page).c_str());
}

}  // namespace
}  // namespace zcal::agent::testing::report_browser_test

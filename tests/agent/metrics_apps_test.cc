// zcal_app_*: the applications' reported sends as series, from a reader's
// snapshot and stats; every refusal kind present from the start.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "test_util.h"
#include "zcal/agent/apps/apps_reader.h"
#include "zcal/agent/metrics/metrics.h"

namespace zcal::agent::metrics_apps_test {
namespace {

using calibrator::Method;

bool Has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

AppsSnapshot TwoApps() {
  AppsSnapshot snap;
  AppCounters zc;
  zc.answers[3][1][0] = 90;   // stream, zerocopy, threshold
  zc.answers[0][0][2] = 10;   // depth 1, copy, no answer
  zc.bytes = {10 * 512, 90 * 65536};
  zc.completions = 90;
  zc.copied = 30;
  zc.sizes[9] = 10;   // 512..1023
  zc.sizes[16] = 80;  // 64 KiB..
  zc.sizes[30] = 10;  // 1 GiB..: above the last bound
  AppTotals& rpc = snap.apps["rpc"];
  rpc.cells[{AppScope::kHostDefault, Method::kMsgZerocopy}] = zc;
  rpc.cells[{AppScope::kLoopback, Method::kMsgZerocopy}] = zc;  // summed over scopes
  rpc.live_processes = 2;
  AppCounters copy;
  copy.answers[3][0][0] = 5;
  copy.bytes[0] = 5 * 100;
  copy.sizes[6] = 5;
  snap.apps["other"].cells[{AppScope::kNone, Method::kCopy}] = copy;
  return snap;
}

TEST(MetricsApps, CountsSendsBytesCompletionsAndSizesByAppAndMethod) {
  Metrics metrics("test");
  AppsReadStats totals;
  totals.refused[static_cast<std::size_t>(AppRefusal::kMagic)] = 3;
  totals.removed = 4;
  metrics.SetApps(TwoApps(), totals);
  const std::string text = metrics.Text();
  EXPECT_TRUE(Has(text, "zcal_app_sends_total{app=\"rpc\",decision=\"zerocopy\",depth=\"stream\","
                        "method=\"msg_zerocopy\"} 180\n"))
      << text;
  EXPECT_TRUE(Has(text, "zcal_app_sends_total{app=\"rpc\",decision=\"copy\",depth=\"1\","
                        "method=\"msg_zerocopy\"} 20\n"));
  EXPECT_TRUE(Has(text, "zcal_app_sends_total{app=\"rpc\",decision=\"copy\",depth=\"stream\","
                        "method=\"msg_zerocopy\"} 0\n"));
  EXPECT_TRUE(Has(text, "zcal_app_bytes_total{app=\"rpc\",decision=\"zerocopy\","
                        "method=\"msg_zerocopy\"} 11796480\n"));
  EXPECT_TRUE(Has(text, "zcal_app_bytes_total{app=\"other\",decision=\"copy\",method=\"copy\"} 500\n"));
  EXPECT_TRUE(Has(text, "zcal_app_completions_total{app=\"rpc\",copied=\"true\","
                        "method=\"msg_zerocopy\"} 60\n"));
  EXPECT_TRUE(Has(text, "zcal_app_completions_total{app=\"rpc\",copied=\"false\","
                        "method=\"msg_zerocopy\"} 120\n"));
  // 512..1023 bytes under le=1023; 64 KiB..128 KiB-1 from le=131071 on.
  EXPECT_TRUE(Has(text, "zcal_app_message_size_bytes_bucket{app=\"rpc\",method=\"msg_zerocopy\","
                        "le=\"1023\"} 20\n"));
  EXPECT_TRUE(Has(text, "zcal_app_message_size_bytes_bucket{app=\"rpc\",method=\"msg_zerocopy\","
                        "le=\"65535\"} 20\n"));
  EXPECT_TRUE(Has(text, "zcal_app_message_size_bytes_bucket{app=\"rpc\",method=\"msg_zerocopy\","
                        "le=\"131071\"} 180\n"));
  EXPECT_TRUE(Has(text, "zcal_app_message_size_bytes_bucket{app=\"rpc\",method=\"msg_zerocopy\","
                        "le=\"16777215\"} 180\n"));
  EXPECT_TRUE(Has(text, "zcal_app_message_size_bytes_bucket{app=\"rpc\",method=\"msg_zerocopy\","
                        "le=\"+Inf\"} 200\n"));
  EXPECT_TRUE(Has(text, "zcal_app_message_size_bytes_count{app=\"rpc\",method=\"msg_zerocopy\"} 200\n"));
  EXPECT_TRUE(Has(text, "zcal_app_reports{app=\"rpc\"} 2\n"));
  EXPECT_TRUE(Has(text, "zcal_app_report_refusals_total{kind=\"magic\"} 3\n"));
  EXPECT_TRUE(Has(text, "zcal_app_report_refusals_total{kind=\"backwards\"} 0\n"));
  EXPECT_TRUE(Has(text, "zcal_app_reports_removed_total 4\n"));
}

TEST(MetricsApps, ServesEveryRefusalKindAtZeroBeforeTheFirstRead) {
  Metrics metrics("test");
  const std::string text = metrics.Text();
  for (const AppRefusal kind : kAllAppRefusals) {
    EXPECT_TRUE(Has(text, "zcal_app_report_refusals_total{kind=\"" +
                              std::string(AppRefusalName(kind)) + "\"} 0\n"))
        << AppRefusalName(kind);
  }
  EXPECT_FALSE(Has(text, "zcal_app_sends_total{"));
}

TEST(MetricsApps, PassesPromtoolLint) {
  if (access("/usr/bin/promtool", X_OK) != 0) {
    GTEST_SKIP() << "promtool (Debian package prometheus) is not installed";
  }
  Metrics metrics("test");
  metrics.SetApps(TwoApps(), AppsReadStats{});
  testing::TempDir dir;
  const std::filesystem::path file = dir.path() / "metrics.txt";
  testing::WriteFile(file, metrics.Text());
  const testing::CommandResult result = testing::RunCommand(
      {"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + file.string()});
  EXPECT_EQ(result.status, 0) << result.out << result.err;
  EXPECT_EQ(result.out + result.err, "");
}

}  // namespace
}  // namespace zcal::agent::metrics_apps_test

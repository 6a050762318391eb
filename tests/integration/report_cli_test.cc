// `zcal report` and the --report options as a user runs them: each bad
// input is one line naming file:line:column, exit 2, and no file left
// behind; a good one is written whole.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_command.h"

namespace zcal::testing::report_cli_test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class ReportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("zcal-report-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << content;
    return path.string();
  }

  std::string Out() const { return (dir_ / "out.html").string(); }

  CommandResult Report(const std::string& input) {
    return RunCommand({ZcalPath(), "report", "--out", Out(), input});
  }

  // Exit 2 with one line that starts with "zcal report: WHERE", and nothing
  // left in the directory but the inputs.
  void ExpectRejected(const CommandResult& r, const std::string& where) {
    EXPECT_EQ(r.exit_status, 2) << r.err;
    EXPECT_THAT(r.err, StartsWith("zcal report: " + where)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty());
    EXPECT_FALSE(fs::exists(Out()));
    for (const auto& entry : fs::directory_iterator(dir_)) {
      EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(".tmp.")));
    }
  }

  std::string AnalysisJson() {
    const auto r = RunCommand(
        {ZcalPath(), "analyze", "--json", SourcePath("configs/examples/xeon-cx6.csv")});
    EXPECT_EQ(r.exit_status, 0) << r.err;
    return r.out;
  }

  fs::path dir_;
};

TEST_F(ReportCli, WritesThePageOfAnAnalysisWhole) {
  const std::string input = Write("analysis.json", AnalysisJson());
  const auto r = Report(input);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const std::string page = [&] {
    std::ifstream in(Out());
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  EXPECT_THAT(page, StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(page, HasSubstr("</html>\n"));
  EXPECT_THAT(page, HasSubstr("Content-Security-Policy\" content=\"default-src &#39;none&#39;"));
  EXPECT_EQ(fs::status(Out()).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::others_read);
}

TEST_F(ReportCli, WritesToStandardOutputByDefault) {
  const auto r = RunCommand({ZcalPath(), "report", SourcePath("configs/examples/xeon-cx6.csv")});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(r.out, HasSubstr("xeon-cx6.csv"));
}

TEST_F(ReportCli, RejectsAnUnknownJsonDocument) {
  const std::string input = Write("other.json", "\n  {\"metrics\": [1, 2]}\n");
  const auto r = Report(input);
  ExpectRejected(r, input + ":2:3: unknown document");
  EXPECT_THAT(r.err, HasSubstr("zcal calibrate --json"));
}

TEST_F(ReportCli, RejectsATruncatedFileAtItsEnd) {
  std::string text = AnalysisJson();
  text.resize(text.size() / 2);
  const std::string input = Write("truncated.json", text);
  const std::size_t lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  const std::size_t column = text.size() - text.rfind('\n');
  const auto r = Report(input);
  ExpectRejected(r, input + ":" + std::to_string(lines + 1) + ":" + std::to_string(column) +
                        ": not valid JSON (truncated: ");
}

TEST_F(ReportCli, PointsAtTheBadFieldOfAKnownDocument) {
  const std::string input =
      Write("bad.json",
            "{\"paths\": {\"p\": {\"methods\": {\n"
            "  \"msg_zerocopy\": {\"verdict\": \"maybe\"}}}}}\n");
  const auto r = Report(input);
  ExpectRejected(r, input + ":2:3: paths.p.methods.msg_zerocopy: 'verdict'");
}

TEST_F(ReportCli, RejectsAStateOfAnotherVersion) {
  const std::string input =
      Write("state.json", "{\"format\": \"zcal-state\", \"version\": 7, \"paths\": {}}");
  const auto r = Report(input);
  ExpectRejected(r, input + ":1:1: version 7 is not the version this zcal reads");
}

TEST_F(ReportCli, NamesTheLineAndColumnOfACsvError) {
  const std::string input = Write("samples.csv",
                                  "method,size,mb_per_s,cpu_pct\n"
                                  "copy,4096,100,50\n"
                                  "copy,4096,fast,50\n");
  const auto r = Report(input);
  ExpectRejected(r, input + ":3:11: ");
}

TEST_F(ReportCli, KeepsThePreviousPageWhenTheInputIsBad) {
  std::ofstream(Out()) << "previous";
  const std::string input = Write("other.json", "[]");
  const auto r = Report(input);
  EXPECT_EQ(r.exit_status, 2);
  std::ifstream in(Out());
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "previous");
}

TEST_F(ReportCli, SaysWhenTheInputIsMissing) {
  const auto r = Report((dir_ / "absent.json").string());
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_THAT(r.err, HasSubstr("absent.json"));
  EXPECT_FALSE(fs::exists(Out()));
}

TEST_F(ReportCli, FailsWhenTheOutputDirectoryIsMissing) {
  const auto r = RunCommand({ZcalPath(), "report", "--out", (dir_ / "no/such/dir.html").string(),
                             SourcePath("configs/examples/xeon-cx6.csv")});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_THAT(r.err, StartsWith("zcal report: --out " + (dir_ / "no/such/dir.html").string()));
}

TEST_F(ReportCli, WritesADeviceInPlace) {
  // Renaming over /dev/null would replace the device with a file.
  const auto r = RunCommand({ZcalPath(), "report", "--out", "/dev/null",
                             SourcePath("configs/examples/xeon-cx6.csv")});
  EXPECT_EQ(r.exit_status, 0) << r.err;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  for (const auto& entry : fs::directory_iterator("/dev")) {
    EXPECT_THAT(entry.path().filename().string(), Not(StartsWith("null.tmp.")));
  }
}

TEST_F(ReportCli, ReplacesTheTargetOfASymbolicLink) {
  Write("target.html", "old");
  fs::create_symlink(dir_ / "target.html", Out());
  const auto r = Report(SourcePath("configs/examples/xeon-cx6.csv"));
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(Out()));
  EXPECT_GT(fs::file_size(dir_ / "target.html"), 1000u);
}

TEST_F(ReportCli, AnalyzeWritesTheSamePageBesideItsTable) {
  const fs::path page = dir_ / "analyze.html";
  const auto r = RunCommand({ZcalPath(), "analyze", "--report", page.string(),
                             SourcePath("configs/examples/xeon-cx6.csv")});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("path xeon-cx6"));
  std::ifstream in(page);
  const std::string html(std::istreambuf_iterator<char>(in), {});
  EXPECT_THAT(html, HasSubstr("data-method=\"msg_zerocopy\""));
  EXPECT_THAT(html, HasSubstr("<td class=\"verdict\">threshold "));
}

TEST_F(ReportCli, CalibrateRefusesAnUnwritableReportBeforeProbing) {
  const auto r = RunCommand({ZcalPath(), "calibrate", "--report",
                             (dir_ / "no/such/dir.html").string()});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_THAT(r.err, StartsWith("zcal calibrate: --report "));
  EXPECT_TRUE(r.out.empty());
}

}  // namespace
}  // namespace zcal::testing::report_cli_test

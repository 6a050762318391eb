// `zcal analyze` as a user runs it: the real binary, files on disk.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "run_command.h"

namespace zcal::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class AnalyzeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("zcal-analyze-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content) {
    const auto path = dir_ / name;
    std::ofstream(path, std::ios::binary) << content;
    return path.string();
  }

  CommandResult Analyze(std::vector<std::string> args) {
    args.insert(args.begin(), {ZcalPath(), "analyze"});
    return RunCommand(args);
  }

  std::filesystem::path dir_;
};

TEST_F(AnalyzeCli, PrintsVerdictsForTheShippedExample) {
  const auto r = Analyze({SourcePath("configs/examples/xeon-cx6.csv")});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("path xeon-cx6"));
  EXPECT_THAT(r.out, HasSubstr("msg_zerocopy         threshold"));
  EXPECT_THAT(r.out, HasSubstr("msg_zerocopy vs copy:"));
  EXPECT_THAT(r.out, HasSubstr("uring_send_zc_fixed vs uring_send:"));
}

TEST_F(AnalyzeCli, JsonOutputParsesBackWithTheDocumentedShape) {
  const auto r = Analyze({"--json", SourcePath("configs/examples/xeon-cx6.csv")});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& methods = doc.at("paths").at("xeon-cx6").at("methods");
  ASSERT_EQ(methods.size(), 3u);
  for (const char* m : {"msg_zerocopy", "uring_send_zc", "uring_send_zc_fixed"}) {
    const auto& method = methods.at(m);
    EXPECT_EQ(method.at("verdict"), "threshold") << m;
    EXPECT_TRUE(method.at("threshold_bytes").is_number_integer()) << m;
    EXPECT_TRUE(method.at("reason").is_null()) << m;
    EXPECT_FALSE(method.at("sizes").empty()) << m;
    EXPECT_TRUE(method.at("sizes")[0].at("zerocopy_wins").is_boolean());
  }
  EXPECT_EQ(methods.at("msg_zerocopy").at("baseline"), "copy");
  EXPECT_EQ(methods.at("uring_send_zc").at("baseline"), "uring_send");
  // Registered buffers pay off no later than plain SEND_ZC on this host.
  EXPECT_LE(methods.at("uring_send_zc_fixed").at("threshold_bytes").get<int>(),
            methods.at("uring_send_zc").at("threshold_bytes").get<int>());
}

TEST_F(AnalyzeCli, NeverOnTheIommuExample) {
  const auto r = Analyze({"--json", SourcePath("configs/examples/epyc-iommu.csv")});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  for (const auto& [name, m] : doc["paths"]["epyc-iommu"]["methods"].items()) {
    EXPECT_EQ(m.at("verdict"), "never") << name;
    EXPECT_EQ(m.at("reason"), "slower") << name;
    EXPECT_TRUE(m.at("threshold_bytes").is_null()) << name;
  }
}

TEST_F(AnalyzeCli, ObjectiveAndMarginChangeTheDecision) {
  const std::string file = Write("t.csv",
                                 "method,size,mb_per_s,cpu_pct\n"
                                 "copy,65536,10000,100\n"
                                 "msg_zerocopy,65536,5000,25\n");
  auto r = Analyze({"--json", file});
  EXPECT_EQ(nlohmann::json::parse(r.out)["paths"]["default"]["methods"]
                ["msg_zerocopy"]["verdict"], "never");
  r = Analyze({"--json", "--objective", "cpu", file});
  EXPECT_EQ(nlohmann::json::parse(r.out)["paths"]["default"]["methods"]
                ["msg_zerocopy"]["verdict"], "always");
  r = Analyze({"--json", "--objective", "cpu", "--margin", "60", file});
  EXPECT_EQ(nlohmann::json::parse(r.out)["paths"]["default"]["methods"]
                ["msg_zerocopy"]["verdict"], "never");
}

TEST_F(AnalyzeCli, ReadsStandardInput) {
  const auto r = RunCommand({ZcalPath(), "analyze", "--json", "-"},
                            "method,size,mb_per_s,cpu_pct\ncopy,1024,1,1\n"
                            "uring_send_zc,1024,1,2\n");
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["paths"]["default"]["methods"]
                ["uring_send_zc"]["baseline_substituted"], true);
}

struct BadInput {
  const char* name;
  std::string content;
  const char* message;  // after "zcal analyze: <file>:"
};

TEST_F(AnalyzeCli, EveryBadInputExitsTwoWithOneLineNamingTheSpot) {
  const std::vector<BadInput> cases = {
      {"empty", "", "1:1: empty file"},
      {"no-header", "copy,4096,1000,50\n", "1:1: missing column 'method'"},
      {"missing-column", "method,size,mb_per_s\ncopy,1,1\n",
       "1:1: missing column 'cpu_pct'"},
      {"not-a-number", "method,size,mb_per_s,cpu_pct\ncopy,4096,x,1\n",
       "2:11: 'x' in column mb_per_s is not a number"},
      {"zero-size", "method,size,mb_per_s,cpu_pct\ncopy,0,1,1\n",
       "2:6: size 0 must be a positive number of bytes"},
      {"negative-size", "method,size,mb_per_s,cpu_pct\ncopy,-1,1,1\n",
       "2:6: column size: '-1' is not a size"},
      {"unknown-method", "method,size,mb_per_s,cpu_pct\nsplice,1,1,1\n",
       "2:1: unknown method 'splice'"},
      {"no-baseline", "method,size,mb_per_s,cpu_pct\nmsg_zerocopy,1,1,1\n",
       "1:1: no baseline rows"},
      {"binary", std::string("\x7f" "ELF\x02\x01\x01\0\0\0", 10),
       "1:5: binary data (byte 0x02)"},
  };
  for (const BadInput& c : cases) {
    const std::string file = Write(std::string(c.name) + ".csv", c.content);
    const auto r = Analyze({file});
    EXPECT_EQ(r.exit_status, 2) << c.name;
    EXPECT_THAT(r.err, StartsWith("zcal analyze: " + file + ":" + c.message))
        << c.name;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.name;
    EXPECT_TRUE(r.out.empty()) << c.name;
  }
}

TEST_F(AnalyzeCli, MissingFileAndBadOptionsExitTwo) {
  auto r = Analyze({(dir_ / "absent.csv").string()});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_THAT(r.err, HasSubstr("absent.csv: cannot open: No such file"));
  r = Analyze({dir_.string()});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_THAT(r.err, HasSubstr("is a directory"));
  r = Analyze({"--objective", "speed", "x.csv"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_THAT(r.err, HasSubstr("--objective"));
  r = Analyze({"--tolerance", "-1", "x.csv"});
  EXPECT_EQ(r.exit_status, 2);
  r = Analyze({});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_THAT(r.err, HasSubstr("FILE is required"));
}

TEST_F(AnalyzeCli, HelpAndVersion) {
  auto r = RunCommand({ZcalPath(), "analyze", "--help"});
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_THAT(r.out, HasSubstr("--objective"));
  EXPECT_THAT(r.out, HasSubstr("Exit status"));
  r = RunCommand({ZcalPath(), "--version"});
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_THAT(r.out, StartsWith("zcal "));
  r = RunCommand({ZcalPath()});
  EXPECT_EQ(r.exit_status, 2) << "a subcommand is required";
  r = RunCommand({ZcalPath(), "frobnicate"});
  EXPECT_EQ(r.exit_status, 2);
}

}  // namespace
}  // namespace zcal::testing

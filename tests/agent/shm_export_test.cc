// `zcal export` and `zcal exec`, run as a user would against a segment
// written with the agent's own writer: every format parses as its consumer
// reads it, the key picks the entry a transport's lookup would, and every
// refusal is one line, a non-zero status and nothing written.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "shm_test_util.h"

// This file's names, apart from other test files' (unity builds).
namespace shm_export_test {
namespace {

namespace fs = std::filesystem;
using zcal::agent::PublishedEntry;
using zcal::agent::ScopeKind;
using zcal::calibrator::Method;
using zcal::calibrator::Verdict;
using zcal::test::Entry;
using zcal::test::LineCount;
using zcal::test::MakeWriter;
using zcal::test::PeerEntry;
using zcal::test::ProcessResult;
using zcal::test::ScopedName;

std::vector<PublishedEntry> Table() {
  PublishedEntry never = Entry(ScopeKind::kHostDefault, 0, Method::kUringSendZc);
  never.verdict = Verdict::kNever;
  never.threshold_bytes.reset();
  never.reason = zcal::calibrator::Reason::kSlower;
  PublishedEntry fixed = Entry(ScopeKind::kHostDefault, 12288, Method::kUringSendZcFixed);
  fixed.estimated = true;
  PublishedEntry nic = Entry(ScopeKind::kInterface, 32768);
  nic.interface = "zc0";
  PublishedEntry loopback = Entry(ScopeKind::kLoopback, 0);
  loopback.verdict = Verdict::kAlways;
  loopback.threshold_bytes.reset();
  return {Entry(ScopeKind::kHostDefault, 65536), never, fixed, nic,
          PeerEntry("198.18.0.0", 15, 16384), loopback};
}

class ZcalExport : public zcal::test::ZcalCommandTest {
 protected:
  ProcessResult Zcal(const std::string& command, std::vector<std::string> args) {
    args.insert(args.begin(), {binary_, command});
    return zcal::test::Run(args);
  }
};

TEST_F(ZcalExport, EnvForTheHostDefaultIsReadByTheShell) {
  ScopedName name("export-env");
  auto writer = MakeWriter(name);
  ASSERT_TRUE(writer->Publish(Table(), false));
  const std::string file = (dir_ / "zcal.env").string();
  auto r = Zcal("export", {"--format", "env", "--segment", name.str(), "-o", file});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  auto sh = zcal::test::Run(
      {"/bin/sh", "-c",
       ". \"$1\" && echo $ZCAL_MSG_ZEROCOPY_THRESHOLD $ZCAL_MSG_ZEROCOPY_SCOPE "
       "$ZCAL_URING_SEND_ZC_THRESHOLD $ZCAL_URING_SEND_ZC_FIXED_THRESHOLD "
       "$ZCAL_URING_SEND_ZC_FIXED_ESTIMATED $ZCAL_SOURCE $ZCAL_STALE",
       "sh", file});
  EXPECT_EQ(sh.out, "65536 host_default never 12288 1 segment 0\n") << sh.err;
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(zcal::test::EnvLines(text.str())["ZCAL_MSG_ZEROCOPY_MEASURED_AT"].find('T'), std::string::npos);
}

TEST_F(ZcalExport, TheKeyPicksTheEntryALookupWould) {
  ScopedName name("export-key");
  auto writer = MakeWriter(name);
  ASSERT_TRUE(writer->Publish(Table(), false));
  auto peer = zcal::test::EnvLines(Zcal("export", {"--format", "env", "--segment", name.str(), "--for",
                                   "198.19.4.4"}).out);
  EXPECT_EQ(peer["ZCAL_MSG_ZEROCOPY_THRESHOLD"], "16384");
  EXPECT_EQ(peer["ZCAL_MSG_ZEROCOPY_SCOPE"], "peer:198.18.0.0/15");
  EXPECT_EQ(peer["ZCAL_URING_SEND_ZC_SCOPE"], "host_default");
  auto other = zcal::test::EnvLines(Zcal("export", {"--format", "env", "--segment", name.str(), "--for",
                                    "2001:db8::1"}).out);
  EXPECT_EQ(other["ZCAL_MSG_ZEROCOPY_THRESHOLD"], "65536");
  auto nic = zcal::test::EnvLines(Zcal("export", {"--format", "env", "--segment", name.str(), "--interface",
                                  "zc0"}).out);
  EXPECT_EQ(nic["ZCAL_MSG_ZEROCOPY_THRESHOLD"], "32768");
  EXPECT_EQ(nic["ZCAL_MSG_ZEROCOPY_SCOPE"], "interface:zc0");
  auto loopback = zcal::test::EnvLines(Zcal("export", {"--format", "env", "--segment", name.str(), "--scope",
                                       "loopback"}).out);
  EXPECT_EQ(loopback["ZCAL_MSG_ZEROCOPY_THRESHOLD"], "always");
  EXPECT_EQ(loopback["ZCAL_MSG_ZEROCOPY_SCOPE"], "loopback");
  EXPECT_EQ(loopback["ZCAL_URING_SEND_ZC_SCOPE"], "host_default");
  auto fabric = zcal::test::EnvLines(Zcal("export", {"--format", "libfabric", "--segment", name.str(), "--for",
                                     "127.0.0.1"}).out);
  EXPECT_EQ(fabric["FI_TCP_ZEROCOPY_SIZE"], "0") << "always is libfabric's 0";
}

TEST_F(ZcalExport, LibfabricSpdkAndJsonParse) {
  ScopedName name("export-formats");
  auto writer = MakeWriter(name);
  ASSERT_TRUE(writer->Publish(Table(), false));
  auto fabric = Zcal("export", {"--format", "libfabric", "--segment", name.str()});
  ASSERT_EQ(fabric.exit_status, 0) << fabric.err;
  EXPECT_EQ(zcal::test::EnvLines(fabric.out)["FI_TCP_ZEROCOPY_SIZE"], "65536");
  EXPECT_EQ(zcal::test::EnvLines(fabric.out)["FI_NET_ZEROCOPY_SIZE"], "65536");

  auto spdk = Zcal("export", {"--format", "spdk", "--segment", name.str()});
  ASSERT_EQ(spdk.exit_status, 0) << spdk.err;
  const auto config = nlohmann::json::parse(spdk.out);
  EXPECT_EQ(config["subsystem"], "sock");
  EXPECT_EQ(config["config"][0]["params"]["zerocopy_threshold"], 65536);
  // SPDK's uring module sends with MSG_ZEROCOPY: msg_zerocopy's threshold,
  // not uring_send_zc's never.
  EXPECT_EQ(config["config"][1]["params"]["impl_name"], "uring");
  EXPECT_EQ(config["config"][1]["params"]["enable_zerocopy_send_client"], true);
  EXPECT_EQ(config["config"][1]["params"]["zerocopy_threshold"], 65536);

  auto rpc = Zcal("export", {"--format", "spdk-rpc", "--segment", name.str()});
  ASSERT_EQ(rpc.exit_status, 0) << rpc.err;
  std::istringstream lines(rpc.out);
  std::string line;
  int requests = 0;
  while (std::getline(lines, line)) {
    EXPECT_EQ(nlohmann::json::parse(line)["method"], "sock_impl_set_options");
    ++requests;
  }
  EXPECT_EQ(requests, 2);

  auto json = Zcal("export", {"--format", "json", "--segment", name.str(), "--for", "198.18.1.1"});
  ASSERT_EQ(json.exit_status, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["entries"].size(), 6u) << "zcal show --json's document";
  EXPECT_EQ(doc["export"]["methods"]["msg_zerocopy"]["threshold_bytes"], 16384);
}

TEST_F(ZcalExport, NoSegmentFailsUnlessAFallbackIsNamed) {
  ScopedName name("export-none");
  const std::string file = (dir_ / "out.env").string();
  ExpectRefused(Zcal("export", {"--format", "env", "--segment", name.str(), "-o", file}), 1,
                "no segment " + name.str());
  EXPECT_FALSE(fs::exists(file));
  EXPECT_TRUE(fs::is_empty(dir_)) << "no temporary file left";

  auto r = Zcal("export", {"--format", "libfabric", "--segment", name.str(), "--fallback", "never"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(zcal::test::EnvLines(r.out)["FI_TCP_ZEROCOPY_SIZE"], "-1");
  EXPECT_EQ(zcal::test::EnvLines(r.out)["ZCAL_SOURCE"], "fallback");
  EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
  auto json = Zcal("export", {"--format", "json", "--segment", name.str(), "--fallback", "8KiB"});
  ASSERT_EQ(json.exit_status, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["export"]["source"], "fallback");
  EXPECT_EQ(doc["export"]["methods"]["uring_send_zc_fixed"]["threshold_bytes"], 8192);
  EXPECT_FALSE(doc.contains("entries"));
}

// msg_zerocopy measured, uring_send_zc inconclusive, uring_send_zc_fixed
// absent: what a VM whose io_uring methods could not be decided publishes.
std::vector<PublishedEntry> WithoutUring() {
  PublishedEntry unsure = Entry(ScopeKind::kHostDefault, 0, Method::kUringSendZc);
  unsure.verdict = Verdict::kInconclusive;
  unsure.threshold_bytes.reset();
  unsure.reason = zcal::calibrator::Reason::kNoisy;
  return {Entry(ScopeKind::kHostDefault, 8192), unsure};
}

TEST_F(ZcalExport, AMethodTheConsumerReadsWithoutAUsableEntryFailsOrFallsBack) {
  ScopedName name("export-partial");
  auto writer = MakeWriter(name);
  ASSERT_TRUE(writer->Publish(WithoutUring(), false));
  const std::string file = (dir_ / "out").string();
  ExpectRefused(Zcal("export", {"--format", "json", "--segment", name.str(), "-o", file}), 1,
                "no usable entry (none, or inconclusive) for host_default and uring_send_zc, "
                "uring_send_zc_fixed, which the consumer reads");
  ExpectRefused(Zcal("export", {"--format", "env", "--segment", name.str(), "--methods",
                                "msg_zerocopy,uring_send_zc", "-o", file}),
                1, "for host_default and uring_send_zc, which the consumer reads");
  EXPECT_TRUE(fs::is_empty(dir_)) << "nothing written";
  auto r = Zcal("export", {"--format", "env", "--segment", name.str(), "--fallback", "4KiB"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  auto vars = zcal::test::EnvLines(r.out);
  EXPECT_EQ(vars["ZCAL_MSG_ZEROCOPY_THRESHOLD"], "8192");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_THRESHOLD"], "4096");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_SCOPE"], "fallback");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_STATUS"], "fallback");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_REASON"], "inconclusive:noisy");
  EXPECT_EQ(vars["ZCAL_SOURCE"], "fallback");
  EXPECT_EQ(vars["ZCAL_MISSING"], "''");
  // libfabric and SPDK read msg_zerocopy only.
  for (const char* format : {"libfabric", "spdk", "spdk-rpc"}) {
    auto ok = Zcal("export", {"--format", format, "--segment", name.str()});
    EXPECT_EQ(ok.exit_status, 0) << format << " needs msg_zerocopy only: " << ok.err;
    EXPECT_EQ(ok.err, "") << format;
  }
}

TEST_F(ZcalExport, EnvMarksAMethodWithoutAUsableEntryForTheStartScriptToTest) {
  ScopedName name("export-marked");
  auto writer = MakeWriter(name);
  ASSERT_TRUE(writer->Publish(WithoutUring(), false));
  const std::string file = (dir_ / "zcal.env").string();
  auto r = Zcal("export", {"--format", "env", "--segment", name.str(), "-o", file});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(LineCount(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("zcal export: warning: segment " + name.str() +
                       " has no usable entry (none, or inconclusive) for host_default and "
                       "uring_send_zc, uring_send_zc_fixed: marked missing"),
            std::string::npos)
      << r.err;
  // What a start script tests, read by the shell.
  auto sh = zcal::test::Run(
      {"/bin/sh", "-c",
       ". \"$1\" && echo \"$ZCAL_MSG_ZEROCOPY_THRESHOLD $ZCAL_MSG_ZEROCOPY_STATUS|"
       "$ZCAL_URING_SEND_ZC_THRESHOLD|$ZCAL_URING_SEND_ZC_STATUS $ZCAL_URING_SEND_ZC_REASON|"
       "$ZCAL_URING_SEND_ZC_FIXED_STATUS $ZCAL_URING_SEND_ZC_FIXED_REASON|$ZCAL_MISSING|"
       "$ZCAL_SOURCE\"",
       "sh", file});
  EXPECT_EQ(sh.out,
            "8192 segment||missing inconclusive:noisy|missing no_entry|"
            "uring_send_zc,uring_send_zc_fixed|segment\n")
      << sh.err;
  // --methods names what the consumer reads: only those are written.
  auto only = Zcal("export", {"--format", "env", "--segment", name.str(), "--methods",
                              "msg_zerocopy"});
  ASSERT_EQ(only.exit_status, 0) << only.err;
  EXPECT_EQ(only.err, "");
  EXPECT_EQ(zcal::test::EnvLines(only.out).count("ZCAL_URING_SEND_ZC_STATUS"), 0u) << only.out;
  EXPECT_EQ(zcal::test::EnvLines(only.out)["ZCAL_MISSING"], "''");
}

TEST_F(ZcalExport, ExecRunsAConsumerThatReadsOnlyWhatWasMeasured) {
  ScopedName name("exec-partial");
  auto writer = MakeWriter(name);
  ASSERT_TRUE(writer->Publish(WithoutUring(), false));
  const std::string print =
      "echo \"$FI_TCP_ZEROCOPY_SIZE $ZCAL_MSG_ZEROCOPY_THRESHOLD "
      "${ZCAL_URING_SEND_ZC_STATUS-unset} ${ZCAL_MISSING-unset}\"; exit 3";
  auto both = Zcal("exec", {"--segment", name.str(), "--format", "libfabric,env", "--",
                            "/bin/sh", "-c", print});
  EXPECT_EQ(both.exit_status, 3) << both.err;
  EXPECT_EQ(both.out, "8192 8192 missing uring_send_zc,uring_send_zc_fixed\n");
  EXPECT_NE(both.err.find("zcal exec: warning:"), std::string::npos) << both.err;
  auto defaults = Zcal("exec", {"--segment", name.str(), "--", "/bin/sh", "-c", print});
  EXPECT_EQ(defaults.exit_status, 3) << defaults.err;
  EXPECT_EQ(defaults.out, both.out);
  auto fabric = Zcal("exec", {"--segment", name.str(), "--format", "libfabric", "--",
                              "/bin/sh", "-c", print});
  EXPECT_EQ(fabric.exit_status, 3) << fabric.err;
  EXPECT_EQ(fabric.out, "8192  unset unset\n");
  EXPECT_EQ(fabric.err, "");
  // A consumer that reads an io_uring method says so, and is not started.
  ExpectRefused(Zcal("exec", {"--segment", name.str(), "--format", "env", "--methods",
                              "uring_send_zc_fixed", "--", "/bin/sh", "-c", "echo ran"}),
                1, "uring_send_zc_fixed, which the consumer reads");
}

TEST_F(ZcalExport, ExecRefusesWhenTheMethodLibfabricReadsIsMissing) {
  ScopedName name("exec-no-msg");
  auto writer = MakeWriter(name);
  ASSERT_TRUE(writer->Publish(std::vector<PublishedEntry>{Entry(ScopeKind::kHostDefault, 4096,
                                                                Method::kUringSendZc)},
                              false));
  ExpectRefused(Zcal("exec", {"--segment", name.str(), "--", "/bin/sh", "-c", "echo ran"}), 1,
                "for host_default and msg_zerocopy, which the consumer reads");
  auto env = Zcal("exec", {"--segment", name.str(), "--format", "env", "--", "/bin/sh", "-c",
                           "echo $ZCAL_URING_SEND_ZC_THRESHOLD $ZCAL_MSG_ZEROCOPY_STATUS"});
  EXPECT_EQ(env.exit_status, 0) << env.err;
  EXPECT_EQ(env.out, "4096 missing\n");
}

TEST_F(ZcalExport, AStaleTableWarnsAndFreshRefusesIt) {
  ScopedName name("export-stale");
  auto writer = MakeWriter(name);
  ASSERT_TRUE(writer->Publish(Table(), true));
  auto r = Zcal("export", {"--format", "libfabric", "--segment", name.str()});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.err.find("is stale"), std::string::npos) << r.err;
  EXPECT_EQ(zcal::test::EnvLines(r.out)["FI_TCP_ZEROCOPY_SIZE"], "65536");
  ExpectRefused(Zcal("export", {"--format", "env", "--segment", name.str(), "--fresh"}), 1,
                "--fresh");
  auto fallback = Zcal("export", {"--format", "env", "--segment", name.str(), "--fresh",
                                  "--fallback", "always"});
  ASSERT_EQ(fallback.exit_status, 0) << fallback.err;
  EXPECT_EQ(zcal::test::EnvLines(fallback.out)["ZCAL_MSG_ZEROCOPY_THRESHOLD"], "always");
  EXPECT_EQ(zcal::test::EnvLines(fallback.out)["ZCAL_SOURCE"], "fallback");
}

TEST_F(ZcalExport, BadInputIsOneLineAndWritesNothing) {
  ScopedName name("export-bad");
  auto writer = MakeWriter(name);
  ASSERT_TRUE(writer->Publish(Table(), false));
  const std::string file = (dir_ / "out").string();
  const std::string seg = name.str();
  ExpectRefused(Zcal("export", {"--format", "yaml", "--segment", seg, "-o", file}), 2,
                "unknown format \"yaml\"");
  ExpectRefused(Zcal("export", {"--segment", seg, "-o", file}), 2, "name a format");
  ExpectRefused(Zcal("export", {"--format", "env", "--segment", seg, "--for", "198.18.1", "-o",
                                file}),
                2, "not a numeric IPv4 or IPv6 address");
  ExpectRefused(Zcal("export", {"--format", "env", "--segment", seg, "--scope", "galaxy"}), 2,
                "--scope \"galaxy\"");
  ExpectRefused(Zcal("export", {"--format", "env", "--segment", seg, "--fallback", "maybe"}), 2,
                "--fallback \"maybe\"");
  ExpectRefused(Zcal("export", {"--format", "env", "--segment", "no-slash"}), 2, "invalid");
  ExpectRefused(Zcal("export", {"--format", "env", "--segment", seg, "--methods", "tcp", "-o",
                                file}),
                2, "--methods: \"tcp\" is not a zerocopy method; the methods are msg_zerocopy, "
                   "uring_send_zc and uring_send_zc_fixed");
  ExpectRefused(Zcal("export", {"--format", "libfabric", "--segment", seg, "--methods",
                                "uring_send_zc", "-o", file}),
                2, "--methods uring_send_zc leaves out what format libfabric writes (msg_zerocopy)");
  ExpectRefused(Zcal("export", {"--format", "spdk", "--segment", seg, "--methods",
                                "msg_zerocopy,uring_send_zc", "-o", file}),
                2, "--methods names uring_send_zc, which format spdk does not write");
  ExpectRefused(Zcal("export", {"--format", "env", "--segment", seg, "-o",
                                (dir_ / "missing" / "out").string()}),
                1, (dir_ / "missing").string());
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(ZcalExport, OutputReplacesAFileKeepingItsMode) {
  ScopedName name("export-file");
  auto writer = MakeWriter(name);
  ASSERT_TRUE(writer->Publish(Table(), false));
  const fs::path file = dir_ / "fabric.env";
  std::ofstream(file) << "old\n";
  ASSERT_EQ(chmod(file.c_str(), 0600), 0);
  auto r = Zcal("export", {"--format", "libfabric", "--segment", name.str(), "-o", file.string()});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  struct stat st{};
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(zcal::test::EnvLines(text.str())["FI_TCP_ZEROCOPY_SIZE"], "65536");
}

TEST_F(ZcalExport, ExecGivesTheCommandTheValuesAndItsExitStatus) {
  ScopedName name("exec-run");
  auto writer = MakeWriter(name);
  ASSERT_TRUE(writer->Publish(Table(), false));
  auto r = Zcal("exec", {"--segment", name.str(), "--for", "198.18.0.9", "--",
                         "/bin/sh", "-c", "echo $FI_TCP_ZEROCOPY_SIZE $ZCAL_URING_SEND_ZC_THRESHOLD; exit 7"});
  EXPECT_EQ(r.exit_status, 7) << r.err;
  EXPECT_EQ(r.out, "16384 never\n");
  auto only = Zcal("exec", {"--segment", name.str(), "--format", "libfabric", "--", "/bin/sh",
                            "-c", "echo ${ZCAL_MSG_ZEROCOPY_THRESHOLD:-unset} $FI_NET_ZEROCOPY_SIZE"});
  EXPECT_EQ(only.exit_status, 0) << only.err;
  EXPECT_EQ(only.out, "unset 65536\n");
}

TEST_F(ZcalExport, ExecRefusesAsExportDoesAndLikeEnvWhenItCannotRun) {
  ScopedName name("exec-refuse");
  const std::vector<std::string> echo = {"/bin/sh", "-c", "echo ran"};
  auto args = [&](std::vector<std::string> options) {
    options.push_back("--");
    options.insert(options.end(), echo.begin(), echo.end());
    return options;
  };
  ExpectRefused(Zcal("exec", args({"--segment", name.str()})), 1, "no segment");
  auto fallback = Zcal("exec", {"--segment", name.str(), "--fallback", "never", "--",
                                "/bin/sh", "-c", "echo $FI_TCP_ZEROCOPY_SIZE $ZCAL_SOURCE"});
  EXPECT_EQ(fallback.exit_status, 0) << fallback.err;
  EXPECT_EQ(fallback.out, "-1 fallback\n");
  ScopedName live("exec-live");
  auto writer = MakeWriter(live);
  ASSERT_TRUE(writer->Publish(Table(), false));
  ExpectRefused(Zcal("exec", {"--segment", live.str(), "/bin/true"}), 2, "after --");
  ExpectRefused(Zcal("exec", args({"--segment", live.str(), "--format", "spdk"})), 2,
                "env and libfabric");
  ExpectRefused(Zcal("exec", args({"--segment", live.str(), "--for", "nowhere"})), 2,
                "not a numeric");
  ExpectRefused(Zcal("exec", args({"--segment", live.str(), "--methods", "msg_zerocopy,"})), 2,
                "--methods: \"\" is not a zerocopy method");
  ExpectRefused(Zcal("exec", args({"--segment", live.str(), "--methods", "uring_send_zc"})), 2,
                "leaves out what format libfabric writes (msg_zerocopy); name it, or leave that "
                "format out");
  ExpectRefused(Zcal("exec", {"--segment", live.str(), "--", (dir_ / "absent").string()}), 127,
                "cannot run");
  const fs::path plain = dir_ / "not-executable";
  std::ofstream(plain) << "#!/bin/sh\n";
  ExpectRefused(Zcal("exec", {"--segment", live.str(), "--", plain.string()}), 126,
                "cannot run");
}

}  // namespace

}  // namespace shm_export_test

// The real agent keeps an exported file current (exports:): the file holds
// what `zcal export` prints for the same key, byte for byte; a republish
// with the same content leaves it alone (same inode, same mtime, one write
// counted); a reload that changes its key rewrites it in the mode the
// operator gave it. An agent that calibrates msg_zerocopy only keeps an env
// file with the io_uring methods marked missing and a libfabric file, and
// refuses (leaves unwritten) an export whose consumer reads an io_uring
// method.
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "agent_harness.h"
#include "test_util.h"

namespace zcal::agent::testing::agent_exports_test {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kTimeout{30'000};

struct stat Stat(const std::filesystem::path& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st;
}

class AgentExportsTest : public ::testing::Test {
 protected:
  AgentExportsTest() : cleanup_(settings_.segment = UniqueSegment()) {
    settings_.state = dir_.path() / "state.json";
  }
  void WriteConfig(const std::string& key) {
    WriteFile(config_, AgentConfig(settings_) + "exports:\n  - {format: libfabric, path: " +
                           file_.string() + ", " + key + "}\n");
  }
  std::string ZcalExport(const std::string& option, const std::string& value) const {
    const CommandResult r = RunCommand({ZcalBinary(), "export", "--format", "libfabric",
                                        "--segment", settings_.segment, option, value});
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
  }

  TempDir dir_;
  AgentSettings settings_;
  SegmentCleanup cleanup_;
  const std::filesystem::path config_ = dir_.path() / "agent.yaml";
  const std::filesystem::path file_ = dir_.path() / "fabric.env";
};

TEST_F(AgentExportsTest, KeepsTheFileAsZcalExportPrintsItAndWritesOnlyOnChange) {
  WriteConfig("for: 127.0.0.1");
  auto agent = AgentProcess::Start(config_, dir_.path() / "agent.log");
  ASSERT_TRUE(agent->WaitForLog("calibration finished", kTimeout)) << agent->Log();
  const int port = agent->MetricsPort();
  const std::string written = "zcal_export_writes_total{format=\"libfabric\"} ";
  ASSERT_TRUE(WaitFor([&] { return Contains(Scrape(port), written + "1"); }, kTimeout))
      << Scrape(port) << agent->Log();

  // Loopback is never zerocopy: libfabric's off value, as zcal export says.
  const std::string text = ReadFile(file_);
  EXPECT_TRUE(Contains(text, "\nFI_TCP_ZEROCOPY_SIZE=-1\n")) << text;
  EXPECT_EQ(text, ZcalExport("--for", "127.0.0.1"));
  const struct stat first = Stat(file_);

  // A second calibration publishes the same values: the file is left alone.
  agent->Signal(SIGUSR1);
  ASSERT_TRUE(agent->WaitForLog("calibration finished", kTimeout, 2)) << agent->Log();
  const struct stat same = Stat(file_);
  EXPECT_EQ(same.st_ino, first.st_ino);
  EXPECT_EQ(same.st_mtim.tv_sec, first.st_mtim.tv_sec);
  EXPECT_EQ(same.st_mtim.tv_nsec, first.st_mtim.tv_nsec);
  EXPECT_TRUE(Contains(Scrape(port), written + "1")) << Scrape(port);

  // A reload that changes the key changes the text: rewritten, keeping the
  // mode the operator set.
  ASSERT_EQ(chmod(file_.c_str(), 0640), 0);
  WriteConfig("scope: loopback");
  agent->Signal(SIGHUP);
  ASSERT_TRUE(agent->WaitForLog("changed: exports", kTimeout)) << agent->Log();
  ASSERT_TRUE(WaitFor([&] { return Contains(Scrape(port), written + "2"); }, kTimeout))
      << Scrape(port) << agent->Log();
  EXPECT_EQ(Stat(file_).st_mode & 07777, 0640u);
  EXPECT_EQ(ReadFile(file_), ZcalExport("--scope", "loopback"));
  // The table published at start, before any calibration, had nothing for
  // the key: said once, and the file was not created then.
  EXPECT_EQ(CountOf(agent->Log(), "export " + file_.string() + " (libfabric for 127.0.0.1)"), 1u)
      << agent->Log();
}

TEST_F(AgentExportsTest, WithoutTheIoUringMethodsOnlyTheExportThatReadsThemIsRefused) {
  settings_.methods = "[copy, msg_zerocopy]";
  const std::filesystem::path env = dir_.path() / "zcal.env";
  const std::filesystem::path uring = dir_.path() / "uring.env";
  WriteFile(config_, AgentConfig(settings_) + "exports:\n"
                         "  - {format: libfabric, path: " + file_.string() + ", scope: loopback}\n"
                         "  - {format: env, path: " + env.string() + ", scope: loopback}\n"
                         "  - {format: env, path: " + uring.string() +
                         ", scope: loopback, methods: [uring_send_zc]}\n");
  auto agent = AgentProcess::Start(config_, dir_.path() / "agent.log");
  ASSERT_TRUE(agent->WaitForLog("calibration finished", kTimeout)) << agent->Log();
  const int port = agent->MetricsPort();
  // The env file is written at start too, from the empty table published
  // before the first calibration (every method missing), then again.
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string text = Scrape(port);
        return Contains(text, "zcal_export_writes_total{format=\"env\"} 2") &&
               Contains(text, "zcal_export_writes_total{format=\"libfabric\"} 1");
      },
      kTimeout))
      << Scrape(port) << agent->Log();

  const std::string text = ReadFile(env);
  EXPECT_TRUE(Contains(text, "\nZCAL_URING_SEND_ZC_STATUS=missing\nZCAL_URING_SEND_ZC_REASON=no_entry\n"))
      << text;
  EXPECT_TRUE(Contains(text, "\nZCAL_MISSING=uring_send_zc,uring_send_zc_fixed\n")) << text;
  EXPECT_TRUE(Contains(text, "\nZCAL_MSG_ZEROCOPY_STATUS=segment\n")) << text;
  // Byte for byte what zcal export prints, its warning aside.
  const CommandResult exported = RunCommand({ZcalBinary(), "export", "--format", "env", "--segment",
                                             settings_.segment, "--scope", "loopback"});
  EXPECT_EQ(exported.status, 0) << exported.err;
  EXPECT_EQ(text, exported.out);
  EXPECT_TRUE(Contains(exported.err, "marked missing")) << exported.err;
  EXPECT_TRUE(Contains(ReadFile(file_), "\nFI_TCP_ZEROCOPY_SIZE=-1\n")) << ReadFile(file_);

  EXPECT_FALSE(std::filesystem::exists(uring));
  EXPECT_TRUE(Contains(Scrape(port), "zcal_export_errors_total{format=\"env\"} ")) << Scrape(port);
  EXPECT_TRUE(Contains(agent->Log(), "export " + uring.string() +
                                         " (env scope loopback): segment " + settings_.segment +
                                         " has no usable entry (none, or inconclusive) for loopback "
                                         "and uring_send_zc, which the consumer reads"))
      << agent->Log();

  // zcal exec with both formats starts the consumer: libfabric's value is
  // there, env's io_uring methods are marked.
  const CommandResult run = RunCommand(
      {ZcalBinary(), "exec", "--segment", settings_.segment, "--scope", "loopback", "--format",
       "libfabric,env", "--", "/bin/sh", "-c",
       "echo $FI_TCP_ZEROCOPY_SIZE $ZCAL_URING_SEND_ZC_FIXED_STATUS $ZCAL_MISSING"});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "-1 missing uring_send_zc,uring_send_zc_fixed\n");
}

TEST_F(AgentExportsTest, CheckConfigRejectsAnExportWhoseDirectoryIsMissing) {
  WriteFile(config_, AgentConfig(settings_) +
                         "exports:\n  - {format: env, path: " +
                         (dir_.path() / "missing" / "zcal.env").string() +
                         ", scope: loopback}\n");
  const CommandResult r =
      RunCommand({ZcalBinary(), "agent", "--check-config", config_.string()});
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(Contains(r.err + r.out, "exports[0].path: the directory")) << r.err << r.out;
}

TEST_F(AgentExportsTest, CheckConfigRejectsMethodsTheFormatDoesNotWrite) {
  WriteFile(config_, AgentConfig(settings_) +
                         "exports:\n  - {format: libfabric, path: " + file_.string() +
                         ", scope: loopback, methods: [uring_send_zc_fixed]}\n");
  const CommandResult r =
      RunCommand({ZcalBinary(), "agent", "--check-config", config_.string()});
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(Contains(r.err + r.out, "exports[0].methods uring_send_zc_fixed leaves out what "
                                      "format libfabric writes (msg_zerocopy)"))
      << r.err << r.out;
}

}  // namespace
}  // namespace zcal::agent::testing::agent_exports_test

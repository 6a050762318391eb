// The segment grows under the real `zcal agent` when the table outgrows
// its capacity, with /dev/shm (a private tmpfs in a mount namespace of the
// agent's own; the host's /dev/shm is never filled) full right then: the
// old segment keeps serving the old table, the failure is one log line and
// a metric while it lasts, and the grow succeeds once there is room.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent_harness.h"
#include "http_test_util.h"
#include "test_util.h"

namespace zcal::agent::testing::agent_segment_grow_test {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kTimeout{30'000};
constexpr const char* kFinished = "calibration finished";

// Writes zeros to `path` until its file system has no page left.
void FillUp(const std::filesystem::path& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0) << path;
  const std::string chunk(4096, '\0');
  while (write(fd, chunk.data(), chunk.size()) > 0) {
  }
  close(fd);
}

class SegmentGrowTest : public ::testing::Test {
 protected:
  SegmentGrowTest() : cleanup_(settings_.segment = UniqueSegment()) {
    settings_.state = dir_.path() / "state.json";
  }

  void WriteConfig(const std::string& methods) {
    std::string config = AgentConfig(settings_);
    const std::string heartbeat = "  heartbeat: " + settings_.heartbeat + "\n";
    ASSERT_NE(config.find(heartbeat), std::string::npos);
    config.replace(config.find(heartbeat), heartbeat.size(), heartbeat + "  capacity: 1\n");
    WriteFile(config_, config + "methods: [" + methods + "]\n");
  }

  // `zcal` inside the agent's mount namespace (its /dev/shm).
  CommandResult InAgentsShm(pid_t pid, std::vector<std::string> argv) const {
    std::vector<std::string> command = {"/usr/bin/nsenter", "-t", std::to_string(pid), "-m"};
    command.insert(command.end(), argv.begin(), argv.end());
    return RunCommand(command);
  }

  TempDir dir_;
  AgentSettings settings_;
  SegmentCleanup cleanup_;
  std::filesystem::path config_ = dir_.path() / "agent.yaml";
};

TEST_F(SegmentGrowTest, AFullDevShmWhenTheSegmentMustGrowKeepsTheOldTableUntilThereIsRoom) {
  const char* reader = std::getenv("ZCAL_WALL_READER");
  if (reader == nullptr) GTEST_SKIP() << "ZCAL_WALL_READER unset";
  WriteConfig("copy, msg_zerocopy");  // one zerocopy method: one entry
  const std::string script =
      "mount -t tmpfs -o size=1m tmpfs /dev/shm || exit 77; exec \"$1\" agent --config \"$2\"";
  auto agent = AgentProcess::StartProgram(
      {"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script, "sh",
       ZcalBinary(), config_.string()},
      dir_.path() / "agent.log");
  if (!agent->WaitForLog(kFinished, kTimeout)) {
    if (agent->WaitExit(milliseconds(0)) == 77) GTEST_SKIP() << "no private mount namespace";
    FAIL() << agent->Log();
  }
  const int port = agent->MetricsPort();
  const auto entries = [&] {
    const CommandResult show =
        InAgentsShm(agent->pid(), {ZcalBinary(), "show", "--segment", settings_.segment, "--json"});
    EXPECT_EQ(show.status, 0) << show.out << show.err;
    return show.status == 0 ? nlohmann::json::parse(show.out) : nlohmann::json();
  };
  ASSERT_EQ(entries()["entries"].size(), 1u);
  EXPECT_EQ(entries()["capacity"], 1);

  // Three zerocopy methods from now on; their table needs a larger segment.
  WriteConfig("copy, msg_zerocopy, uring_send, uring_send_zc, uring_send_zc_fixed");
  agent->Signal(SIGHUP);
  ASSERT_TRUE(agent->WaitForLog("configuration reloaded", kTimeout)) << agent->Log();
  const std::filesystem::path shm = "/proc/" + std::to_string(agent->pid()) + "/root/dev/shm";
  FillUp(shm / "filler");
  agent->Signal(SIGUSR1);
  ASSERT_TRUE(agent->WaitForLog(kFinished, kTimeout, 2)) << agent->Log();
  const std::string failed = "growing it from 1 to 4 entries for a table of ";
  ASSERT_TRUE(agent->WaitForLog(failed, kTimeout)) << agent->Log();
  EXPECT_TRUE(Contains(agent->Log(), "ENOSPC")) << agent->Log();
  ASSERT_TRUE(WaitFor([&] { return Series(port, "zcal_segment_publish_failing") == 1; }, kTimeout));
  // Retried at the heartbeats, logged once.
  ASSERT_TRUE(agent->WaitForLog("publishing failed again", kTimeout, 3)) << agent->Log();
  EXPECT_EQ(CountOf(agent->Log(), "entries failed: " + failed), 1u) << agent->Log();
  // The old segment serves the old table, whole, with a live heartbeat: a
  // reader with max_age never falls back.
  const nlohmann::json kept = entries();
  EXPECT_EQ(kept["entries"].size(), 1u) << kept.dump();
  EXPECT_EQ(kept["stale"], false) << kept.dump();
  const CommandResult read = InAgentsShm(agent->pid(), {reader, settings_.segment, "400", "2000"});
  EXPECT_TRUE(Contains(read.out, "failed 0 dropped 0")) << read.out << read.err;
  EXPECT_FALSE(agent->WaitExit(milliseconds(0))) << "no SIGBUS";

  std::filesystem::remove(shm / "filler");
  ASSERT_TRUE(agent->WaitForLog("grew from 1 to 4 entries for a table of 3", kTimeout))
      << agent->Log();
  EXPECT_TRUE(Contains(agent->Log(), "published 3 entries after ")) << agent->Log();
  EXPECT_EQ(Series(port, "zcal_segment_publish_failing"), 0);
  const nlohmann::json grown = entries();
  EXPECT_EQ(grown["entries"].size(), 3u) << grown.dump();
  EXPECT_EQ(grown["capacity"], 4) << grown.dump();
  const CommandResult reread = InAgentsShm(agent->pid(), {reader, settings_.segment, "100", "2000"});
  EXPECT_TRUE(Contains(reread.out, "failed 0 dropped 0")) << reread.out << reread.err;

  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->WaitExit(kTimeout), 0) << agent->Log();
  const nlohmann::json state = nlohmann::json::parse(ReadFile(settings_.state));
  EXPECT_EQ(state["paths"]["loopback"].size(), 3u);
}

}  // namespace
}  // namespace zcal::agent::testing::agent_segment_grow_test

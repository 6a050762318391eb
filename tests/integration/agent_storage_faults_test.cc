// Full and read-only storage under the real `zcal agent`: the state
// directory on a small tmpfs, and /dev/shm full in a private mount
// namespace (the host's /dev/shm is never filled).
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
#include "zcal/zcal.hpp"

namespace zcal::agent::testing::agent_storage_faults_test {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kStartTimeout{30'000};
constexpr const char* kFinished = "calibration finished";
constexpr std::size_t kMethods = 3;  // the zerocopy methods on loopback

bool Shell(const std::string& command) { return std::system(command.c_str()) == 0; }

// A tmpfs of `size` mounted on `dir` for the test's life (lazily unmounted
// also when the test fails).
class TmpfsMount {
 public:
  TmpfsMount(std::filesystem::path dir, const std::string& size) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
    mounted_ = Shell("mount -t tmpfs -o size=" + size + " tmpfs " + dir_.string());
  }
  ~TmpfsMount() {
    if (mounted_) Shell("umount -l " + dir_.string());
  }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;
  bool mounted() const { return mounted_; }
  bool Remount(const std::string& how) {
    return Shell("mount -o remount," + how + " " + dir_.string());
  }

 private:
  std::filesystem::path dir_;
  bool mounted_ = false;
};

// Writes zeros to `path` until its file system has no page left.
void FillUp(const std::filesystem::path& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0) << path;
  const std::string chunk(4096, '\0');
  while (write(fd, chunk.data(), chunk.size()) > 0) {
  }
  close(fd);
}

std::uint64_t LastSuccess(const std::filesystem::path& state) {
  const nlohmann::json document = nlohmann::json::parse(ReadFile(state));
  EXPECT_EQ(document["paths"]["loopback"].size(), kMethods);
  return document["last_success_ns"].get<std::uint64_t>();
}

class StorageFaultsTest : public ::testing::Test {
 protected:
  StorageFaultsTest() : cleanup_(settings_.segment = UniqueSegment()) {}

  std::filesystem::path WriteConfig() {
    const std::filesystem::path config = dir_.path() / "agent.yaml";
    WriteFile(config, AgentConfig(settings_));
    return config;
  }

  TempDir dir_;
  AgentSettings settings_;
  SegmentCleanup cleanup_;
};

TEST_F(StorageFaultsTest, AFullOrReadOnlyStateDirectoryKeepsTheTableAndRetriesTheSave) {
  TmpfsMount mount(dir_.path() / "state", "64k");
  if (!mount.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root)";
  settings_.state = dir_.path() / "state" / "state.json";
  auto agent = AgentProcess::Start(WriteConfig(), dir_.path() / "agent.log");
  ASSERT_TRUE(agent->WaitForLog(kFinished, kStartTimeout)) << agent->Log();
  const int port = agent->MetricsPort();
  const std::uint64_t first = LastSuccess(settings_.state);

  // Full while a calibration finishes.
  FillUp(dir_.path() / "state" / "filler");
  agent->Signal(SIGUSR1);
  ASSERT_TRUE(agent->WaitForLog(kFinished, kStartTimeout, 2)) << agent->Log();
  ASSERT_TRUE(agent->WaitForLog("saving the state failed: ", kStartTimeout)) << agent->Log();
  EXPECT_TRUE(Contains(agent->Log(), "ENOSPC")) << agent->Log();
  EXPECT_EQ(Series(port, "zcal_state_unsaved"), 1);
  auto opened = client::Segment::Open(settings_.segment.c_str());
  ASSERT_TRUE(opened);
  const auto info = opened->Info();
  ASSERT_TRUE(info);
  EXPECT_EQ(info->count, kMethods) << "the published table is kept";
  EXPECT_FALSE(info->flags & ZCAL_FLAG_STALE);
  EXPECT_EQ(LastSuccess(settings_.state), first) << "the old file stays whole";
  // Retried at the heartbeats, each failure counted, one error line.
  ASSERT_TRUE(WaitFor(
      [&] { return Series(port, "zcal_state_errors_total{operation=\"save\"}") >= 3; },
      kStartTimeout));
  EXPECT_EQ(CountOf(agent->Log(), "saving the state failed: "), 1u) << agent->Log();

  std::filesystem::remove(dir_.path() / "state" / "filler");
  ASSERT_TRUE(agent->WaitForLog("state saved to " + settings_.state.string(), kStartTimeout))
      << agent->Log();
  const std::uint64_t second = LastSuccess(settings_.state);
  EXPECT_GT(second, first);
  EXPECT_EQ(Series(port, "zcal_state_unsaved"), 0);

  // Read-only while a calibration finishes.
  ASSERT_TRUE(mount.Remount("ro"));
  agent->Signal(SIGUSR1);
  ASSERT_TRUE(agent->WaitForLog(kFinished, kStartTimeout, 3)) << agent->Log();
  ASSERT_TRUE(agent->WaitForLog("saving the state failed: ", kStartTimeout, 2)) << agent->Log();
  EXPECT_TRUE(Contains(agent->Log(), "EROFS")) << agent->Log();
  EXPECT_EQ(Series(port, "zcal_state_unsaved"), 1);
  EXPECT_EQ(LastSuccess(settings_.state), second);
  ASSERT_TRUE(mount.Remount("rw"));
  ASSERT_TRUE(agent->WaitForLog("state saved to " + settings_.state.string(), kStartTimeout, 2))
      << agent->Log();
  EXPECT_GT(LastSuccess(settings_.state), second);
  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->WaitExit(milliseconds(5000)), 0) << agent->Log();
}

// `zcal agent --config CONFIG` with its own /dev/shm: a tmpfs of `size`,
// filled up first when `full`. Exits 77 when the tmpfs cannot be mounted.
std::vector<std::string> InPrivateShm(const std::string& size, bool full,
                                      const std::filesystem::path& config) {
  const std::string script = "mount -t tmpfs -o size=" + size + " tmpfs /dev/shm || exit 77; " +
                             (full ? "cat /dev/zero > /dev/shm/filler 2>/dev/null; " : "") +
                             "exec \"$1\" agent --config \"$2\"";
  return {"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
          script,             "sh", ZcalBinary(),    config.string()};
}

TEST_F(StorageFaultsTest, AFullDevShmAtStartFailsWithOneLineInsteadOfACrash) {
  settings_.state = dir_.path() / "state.json";
  auto agent = AgentProcess::StartProgram(InPrivateShm("64k", true, WriteConfig()),
                                          dir_.path() / "agent.log");
  const auto status = agent->WaitExit(kStartTimeout);
  ASSERT_TRUE(status) << agent->Log();
  if (*status == 77) GTEST_SKIP() << "no private mount namespace here: " << agent->Log();
  EXPECT_EQ(*status, 1) << "not killed by SIGBUS\n" << agent->Log();
  EXPECT_EQ(CountOf(agent->Log(), "segment " + settings_.segment + ": cannot reserve "), 1u)
      << agent->Log();
  EXPECT_TRUE(Contains(agent->Log(), "ENOSPC (No space left on device)")) << agent->Log();
  // Named once: the publisher does not repeat what the writer's message says.
  EXPECT_EQ(CountOf(agent->Log(), "segment " + settings_.segment + ": "), 1u) << agent->Log();
}

TEST_F(StorageFaultsTest, ASegmentRemovedWhileDevShmIsFullIsRecreatedOnceThereIsRoom) {
  settings_.state = dir_.path() / "state.json";
  auto agent = AgentProcess::StartProgram(InPrivateShm("1m", false, WriteConfig()),
                                          dir_.path() / "agent.log");
  ASSERT_TRUE(agent->WaitForLog(kFinished, kStartTimeout)) << agent->Log();
  const int port = agent->MetricsPort();
  // The agent's /dev/shm, seen from outside its mount namespace.
  const std::filesystem::path shm = "/proc/" + std::to_string(agent->pid()) + "/root/dev/shm";
  const std::filesystem::path segment = shm / settings_.segment.substr(1);
  ASSERT_TRUE(std::filesystem::exists(segment)) << agent->Log();
  FillUp(shm / "filler");
  std::filesystem::remove(segment);
  ASSERT_TRUE(agent->WaitForLog("recreating it failed: ", kStartTimeout)) << agent->Log();
  EXPECT_TRUE(Contains(agent->Log(), "ENOSPC")) << agent->Log();
  EXPECT_EQ(Series(port, "zcal_segment_repair_failing"), 1);
  EXPECT_FALSE(agent->WaitExit(milliseconds(0)));

  std::filesystem::remove(shm / "filler");
  ASSERT_TRUE(agent->WaitForLog("repaired (removed)", kStartTimeout)) << agent->Log();
  EXPECT_EQ(Series(port, "zcal_segment_repair_failing"), 0);
  const CommandResult show =
      RunCommand({"/usr/bin/nsenter", "-t", std::to_string(agent->pid()), "-m", ZcalBinary(),
                  "show", "--segment", settings_.segment, "--json"});
  ASSERT_EQ(show.status, 0) << show.err;
  EXPECT_EQ(nlohmann::json::parse(show.out)["entries"].size(), kMethods) << show.out;
  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->WaitExit(milliseconds(5000)), 0) << agent->Log();
}

}  // namespace
}  // namespace zcal::agent::testing::agent_storage_faults_test

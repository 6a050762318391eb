// The real `zcal agent` whose segment is damaged while it runs (truncated,
// overwritten, removed, replaced): it stays alive, logs one line, counts the
// repair, and readers (`zcal show`, a libzcal handle opened before) read a
// valid table again.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent_harness.h"
#include "test_util.h"
#include "zcal/zcal.h"

namespace zcal::agent::testing::agent_segment_test {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kTimeout{20'000};
constexpr std::uint64_t kThreshold = 24576;

// A saved loopback result, republished at start: the table the agent must
// republish after a repair, without waiting for a calibration.
void SaveLoopbackState(const std::filesystem::path& path,
                       const std::string& fingerprint = "0000000000000001") {
  const nlohmann::json result = {
      {"published",
       {{"verdict", "threshold"}, {"threshold_bytes", kThreshold},
        {"reason", nullptr}, {"confidence", 0.8}}},
      {"measured_at_ns", 1'700'000'000'000'000'000ULL},
      {"pending", nullptr}};
  const nlohmann::json state = {{"format", "zcal-state"},
                                {"version", 1},
                                {"saved_at_ns", 1'700'000'000'000'000'000ULL},
                                {"fingerprint", fingerprint},
                                {"last_success_ns", 1'700'000'000'000'000'000ULL},
                                {"host", nlohmann::json::object()},
                                {"paths", {{"loopback", {{"msg_zerocopy", result}}}}}};
  std::filesystem::create_directories(path.parent_path());
  WriteFile(path, state.dump());
}

// This host's fingerprint, as the agent logs it when it differs from the
// saved one: a state saved with it is republished without the calibration
// a changed host starts (which would replace the table under the test).
std::string HostFingerprint() {
  static const std::string fingerprint = [] {
    TempDir dir;
    AgentSettings settings;
    settings.segment = UniqueSegment();
    SegmentCleanup cleanup(settings.segment);
    settings.state = dir.path() / "state.json";
    settings.at_startup = false;
    SaveLoopbackState(settings.state);
    WriteFile(dir.path() / "agent.yaml", AgentConfig(settings));
    auto agent = AgentProcess::Start(dir.path() / "agent.yaml", dir.path() / "agent.log");
    const std::string marker = "(fingerprint 0000000000000001 -> ";
    if (!agent->WaitForLog(marker, kTimeout)) return std::string();
    const std::string log = agent->Log();
    return log.substr(log.find(marker) + marker.size(), 16);
  }();
  return fingerprint;
}

// Writes `bytes` at `offset` of the file, in place (as `dd conv=notrunc`).
void Overwrite(const std::string& path, off_t offset, const std::string& bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(pwrite(fd, bytes.data(), bytes.size(), offset),
            static_cast<ssize_t>(bytes.size()));
  close(fd);
}

class SegmentRepair : public ::testing::Test {
 protected:
  SegmentRepair() : cleanup_(settings_.segment = UniqueSegment()) {
    settings_.state = dir_.path() / "state" / "state.json";
    settings_.at_startup = false;
    settings_.heartbeat = "100ms";
    path_ = "/dev/shm" + settings_.segment;
  }
  ~SegmentRepair() override { zcal_close(reader_); }

  // Starts the agent with the saved table and opens a reader on it.
  void Start() {
    const std::string fingerprint = HostFingerprint();
    ASSERT_EQ(fingerprint.size(), 16u) << "the agent did not log this host's fingerprint";
    SaveLoopbackState(settings_.state, fingerprint);
    const std::filesystem::path config = dir_.path() / "agent.yaml";
    WriteFile(config, AgentConfig(settings_));
    agent_ = AgentProcess::Start(config, dir_.path() / "agent.log");
    ASSERT_TRUE(agent_->WaitForLog("serving metrics at", kTimeout)) << agent_->Log();
    ASSERT_EQ(zcal_open(settings_.segment.c_str(), &reader_), 0) << zcal_error_detail();
    ASSERT_EQ(ReaderThreshold(), static_cast<std::int64_t>(kThreshold));
  }

  // Stops the agent (SIGSTOP) and waits until it is stopped.
  void Pause() {
    agent_->Signal(SIGSTOP);
    const std::string stat = "/proc/" + std::to_string(agent_->pid()) + "/stat";
    ASSERT_TRUE(WaitFor(
        [&] {
          const std::string text = ReadFile(stat);
          const std::size_t paren = text.rfind(')');
          return paren != std::string::npos && paren + 2 < text.size() &&
                 text[paren + 2] == 'T';
        },
        kTimeout));
  }

  // The loopback threshold the reader opened at start answers, or its error.
  std::int64_t ReaderThreshold() {
    zcal_key key;
    zcal_key_from_string("127.0.0.1", nullptr, &key);
    zcal_result r;
    const int rc = zcal_lookup(reader_, &key, ZCAL_METHOD_MSG_ZEROCOPY, &r);
    return rc != 0 ? rc : static_cast<std::int64_t>(r.threshold_bytes);
  }

  // After the damage: one repair of `cause`, the agent alive, `zcal show`
  // and the old reader served the saved table again.
  void ExpectRepaired(const std::string& cause) {
    const std::string line = "segment " + settings_.segment + " repaired (" + cause + ")";
    ASSERT_TRUE(agent_->WaitForLog(line, kTimeout)) << agent_->Log();
    EXPECT_FALSE(agent_->WaitExit(milliseconds(0))) << "the agent died: " << agent_->Log();

    // The reader reopens the name at most once a second.
    EXPECT_TRUE(WaitFor([&] { return ReaderThreshold() == static_cast<std::int64_t>(kThreshold); },
                        kTimeout))
        << ReaderThreshold() << ": " << zcal_error_detail();
    const CommandResult show =
        RunCommand({ZcalBinary(), "show", "--segment", settings_.segment, "--json"});
    ASSERT_EQ(show.status, 0) << show.err;
    const nlohmann::json doc = nlohmann::json::parse(show.out);
    EXPECT_EQ(doc["agent_pid"], agent_->pid());
    ASSERT_EQ(doc["entries"].size(), 1u) << show.out;
    EXPECT_EQ(doc["entries"][0]["threshold_bytes"], kThreshold) << show.out;

    // More heartbeats into the new segment find nothing more to repair.
    const std::uint64_t heartbeat = doc["heartbeat_ns"].get<std::uint64_t>();
    EXPECT_TRUE(WaitFor(
        [&] {
          const CommandResult again =
              RunCommand({ZcalBinary(), "show", "--segment", settings_.segment, "--json"});
          return again.status == 0 &&
                 nlohmann::json::parse(again.out)["heartbeat_ns"].get<std::uint64_t>() >
                     heartbeat + 200'000'000;
        },
        kTimeout));
    EXPECT_EQ(CountOf(agent_->Log(), " repaired ("), 1u) << agent_->Log();
    const std::string metrics = Scrape(agent_->MetricsPort());
    EXPECT_TRUE(Contains(metrics, "zcal_segment_repairs_total{cause=\"" + cause + "\"} 1"))
        << metrics;
    EXPECT_TRUE(Contains(metrics, "zcal_segment_repairs_total{cause=\"header\"} " +
                                      std::string(cause == "header" ? "1" : "0")))
        << metrics;
  }

  TempDir dir_;
  AgentSettings settings_;
  SegmentCleanup cleanup_;
  std::string path_;
  std::unique_ptr<AgentProcess> agent_;
  zcal_handle* reader_ = nullptr;
};

TEST_F(SegmentRepair, TruncatedToZero) {
  Start();
  ASSERT_EQ(truncate(path_.c_str(), 0), 0);
  ExpectRepaired("truncated");
  EXPECT_TRUE(Contains(agent_->Log(), "is 0 bytes, shorter than")) << agent_->Log();
}

TEST_F(SegmentRepair, TruncatedToTenBytes) {
  Start();
  ASSERT_EQ(truncate(path_.c_str(), 10), 0);
  ExpectRepaired("truncated");
  EXPECT_TRUE(Contains(agent_->Log(), "is 10 bytes, shorter than")) << agent_->Log();
}

TEST_F(SegmentRepair, GarbageOverTheMagic) {
  Start();
  Overwrite(path_, 0, "XXXXXXXX");
  ExpectRepaired("header");
  EXPECT_TRUE(Contains(agent_->Log(), "header field magic is 0x5858585858585858"))
      << agent_->Log();
}

TEST_F(SegmentRepair, GarbageOverTheWholeHeader) {
  Start();
  std::mt19937_64 rng(7);
  std::string garbage(sizeof(zcal_shm_header), '\0');
  for (char& c : garbage) c = static_cast<char>(rng());
  Overwrite(path_, 0, garbage);
  ExpectRepaired("header");
}

TEST_F(SegmentRepair, DamagedAbiMajor) {
  Start();
  Overwrite(path_, offsetof(zcal_shm_header, abi_major), std::string("\x07\x00", 2));
  ExpectRepaired("header");
  EXPECT_TRUE(Contains(agent_->Log(), "header field abi_major is 7, the agent wrote 1"))
      << agent_->Log();
}

TEST_F(SegmentRepair, GarbageOverAnEntry) {
  Start();
  Overwrite(path_, sizeof(zcal_shm_header), std::string(8, '\x5a'));
  ExpectRepaired("table");
}

TEST_F(SegmentRepair, Removed) {
  Start();
  ASSERT_EQ(unlink(path_.c_str()), 0);
  ExpectRepaired("removed");
}

TEST_F(SegmentRepair, ReplacedByAnotherFile) {
  Start();
  const std::string other = path_ + ".other";
  WriteFile(other, std::string(4096, 'Z'));
  ASSERT_EQ(rename(other.c_str(), path_.c_str()), 0);
  ExpectRepaired("replaced");
}

TEST_F(SegmentRepair, ARepairThatFailsIsLoggedOnceAndRetried) {
  Start();
  // A symbolic link at the name is refused (it would redirect the agent's
  // writes): the agent keeps running, says so once, and repairs the segment
  // once the link is gone. Stopped meanwhile, so that it sees the link, not
  // the name removed.
  Pause();
  ASSERT_EQ(unlink(path_.c_str()), 0);
  ASSERT_EQ(symlink("/dev/null", path_.c_str()), 0);
  agent_->Signal(SIGCONT);
  const std::string failed = "recreating it failed";
  ASSERT_TRUE(agent_->WaitForLog(failed, kTimeout)) << agent_->Log();
  EXPECT_TRUE(Contains(agent_->Log(), "is a symbolic link")) << agent_->Log();
  // Later heartbeats try again (at debug level), with one error in all.
  ASSERT_TRUE(agent_->WaitForLog("still cannot recreate it", kTimeout, 2)) << agent_->Log();
  EXPECT_FALSE(agent_->WaitExit(milliseconds(0))) << agent_->Log();
  ASSERT_EQ(unlink(path_.c_str()), 0);
  ExpectRepaired("removed");
  EXPECT_EQ(CountOf(agent_->Log(), failed), 1u) << agent_->Log();
}

TEST_F(SegmentRepair, ShowSaysTheRunningAgentRepairsItsSegment) {
  Start();
  // Stopped, the agent cannot repair before `zcal show` reads the damage.
  Pause();
  Overwrite(path_, 0, "XXXXXXXX");
  const CommandResult show = RunCommand({ZcalBinary(), "show", "--segment", settings_.segment});
  agent_->Signal(SIGCONT);
  EXPECT_EQ(show.status, 1);
  EXPECT_TRUE(Contains(show.err, "magic 0x5858585858585858")) << show.err;
  EXPECT_TRUE(Contains(show.err, "segment of the running agent (pid " +
                                     std::to_string(agent_->pid()) + ")"))
      << show.err;
  EXPECT_FALSE(Contains(show.err, "remove it or name the agent's segment")) << show.err;
  ExpectRepaired("header");
}

TEST_F(SegmentRepair, ShowWithoutARunningAgentKeepsTheReadersAdvice) {
  Start();
  agent_->Signal(SIGKILL);
  ASSERT_TRUE(agent_->WaitExit(kTimeout));
  Overwrite(path_, 0, "XXXXXXXX");
  const CommandResult show = RunCommand({ZcalBinary(), "show", "--segment", settings_.segment});
  EXPECT_EQ(show.status, 1);
  EXPECT_TRUE(Contains(show.err, "remove it or name the agent's segment")) << show.err;
  EXPECT_FALSE(Contains(show.err, "running agent")) << show.err;
}

}  // namespace
}  // namespace zcal::agent::testing::agent_segment_test

// The wall clock stepped by an hour under the real `zcal agent`: the
// agent and the processes that read its segment run with a test-only
// LD_PRELOAD shim (wall_offset_shim.c) that offsets their CLOCK_REALTIME
// by the seconds in a file, so the test steps them while they run and the
// machine's clock is never touched. The agent's timers run on the steady
// clock, which the shim leaves alone, as a real step does.
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent_harness.h"
#include "http_test_util.h"
#include "test_util.h"
#include "zcal/zcal.hpp"

namespace zcal::agent::testing::agent_clock_test {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kTimeout{30'000};
constexpr const char* kFinished = "calibration finished";
constexpr std::int64_t kHour = 3600;
constexpr std::size_t kMethods = 3;  // the zerocopy methods on loopback

// The machine's wall clock: the test process never loads the shim.
std::int64_t TrueWallNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The line of `text` that starts with `prefix`, or "".
std::string LineOf(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

// Sets LD_PRELOAD to the shim while it lives, for the processes started
// meanwhile; the test process itself never loads it.
class Shimmed {
 public:
  explicit Shimmed(const std::string& shim) { setenv("LD_PRELOAD", shim.c_str(), 1); }
  ~Shimmed() { unsetenv("LD_PRELOAD"); }
  Shimmed(const Shimmed&) = delete;
  Shimmed& operator=(const Shimmed&) = delete;
};

class WallClockStepTest : public ::testing::Test {
 protected:
  WallClockStepTest() : cleanup_(settings_.segment = UniqueSegment()) {
    settings_.state = dir_.path() / "state.json";
    offset_file_ = dir_.path() / "wall-offset";
    setenv("ZCAL_TEST_WALL_OFFSET_FILE", offset_file_.c_str(), 1);
    SetOffset(0);
  }
  ~WallClockStepTest() override { unsetenv("ZCAL_TEST_WALL_OFFSET_FILE"); }

  // Replaced whole (rename), so that the shim never reads half a number.
  void SetOffset(std::int64_t seconds) {
    const std::filesystem::path next = offset_file_.string() + ".next";
    WriteFile(next, std::to_string(seconds));
    std::filesystem::rename(next, offset_file_);
    offset_ = seconds;
  }

  // The heartbeat the segment holds, read without the shim.
  std::uint64_t Heartbeat() const {
    auto segment = client::Segment::Open(settings_.segment.c_str());
    if (!segment) return 0;
    auto info = segment->Info();
    return info ? info->heartbeat_ns : 0;
  }

  // `zcal show` of the segment, with or without the shim.
  std::string Show(bool shimmed) const {
    std::optional<Shimmed> shim;
    if (shimmed) shim.emplace(shim_);
    const CommandResult shown = RunCommand({ZcalBinary(), "show", "--segment", settings_.segment});
    EXPECT_EQ(shown.status, 0) << shown.out << shown.err;
    return shown.out;
  }

  // A libzcal reader on the shifted clock, as every process of a host
  // whose clock stepped is: "lookups N failed F dropped D ...".
  std::string Read() const {
    const Shimmed shim(shim_);
    const CommandResult read =
        RunCommand({reader_, settings_.segment, "400", "60000"});  // max_age 60 s
    EXPECT_EQ(read.status, 0) << read.out << read.err;
    return read.out;
  }

  TempDir dir_;
  AgentSettings settings_;
  SegmentCleanup cleanup_;
  std::filesystem::path offset_file_;
  std::int64_t offset_ = 0;
  const char* shim_env_ = std::getenv("ZCAL_WALL_SHIM");
  const char* reader_env_ = std::getenv("ZCAL_WALL_READER");
  std::string shim_ = shim_env_ ? shim_env_ : "";
  std::string reader_ = reader_env_ ? reader_env_ : "";
};

TEST_F(WallClockStepTest, StepsOfAnHourKeepHeartbeatStalenessScheduleAgesAndState) {
  if (shim_.empty() || reader_.empty()) GTEST_SKIP() << "ZCAL_WALL_SHIM and ZCAL_WALL_READER unset";
  settings_.heartbeat = "200ms";
  settings_.budget_seconds = 1;
  std::string config = AgentConfig(settings_);
  // A schedule of seconds, so that a calibration postponed by an hour (or
  // one due at once because an hour seemed to pass) shows within the test.
  const std::string hourly = "interval: 1h";
  ASSERT_NE(config.find(hourly), std::string::npos);
  config.replace(config.find(hourly), hourly.size(), "interval: 3s");
  WriteFile(dir_.path() / "agent.yaml", config);

  std::unique_ptr<AgentProcess> agent;
  {
    const Shimmed shim(shim_);
    agent = AgentProcess::Start(dir_.path() / "agent.yaml", dir_.path() / "agent.log");
  }
  ASSERT_TRUE(agent->WaitForLog(kFinished, kTimeout)) << agent->Log();
  const int port = agent->MetricsPort();
  ASSERT_GT(port, 0);
  ASSERT_TRUE(std::filesystem::exists(settings_.state));

  struct Step {
    std::int64_t offset;
    const char* line;  // the log line the step must produce, once
    std::size_t count;  // of that line after this step
  };
  // Forward by an hour, back to the true time, back by an hour, and forward
  // again to the true time.
  const Step steps[] = {
      {kHour, "wall clock stepped forward by 3600 s; ages are measured on the steady clock", 1},
      {0, "wall clock stepped back by 3600 s; ages are measured on the steady clock", 1},
      {-kHour, "wall clock stepped back by 3600 s; ages are measured on the steady clock", 2},
      {0, "wall clock stepped forward by 3600 s; ages are measured on the steady clock", 2},
  };
  for (const Step& step : steps) {
    SCOPED_TRACE("wall clock offset " + std::to_string(step.offset) + " s");
    const std::size_t finished = CountOf(agent->Log(), kFinished);
    SetOffset(step.offset);
    ASSERT_TRUE(agent->WaitForLog(step.line, kTimeout, step.count)) << agent->Log();
    EXPECT_EQ(CountOf(agent->Log(), step.line), step.count) << "one line per step";

    // Heartbeats keep coming, stamped with the agent's (stepped) wall time.
    const std::uint64_t before = Heartbeat();
    ASSERT_TRUE(WaitFor([&] { return Heartbeat() != before; }, kTimeout));
    const std::int64_t shifted_now =
        TrueWallNs() + step.offset * 1'000'000'000;
    EXPECT_LT(std::llabs(static_cast<std::int64_t>(Heartbeat()) - shifted_now),
              60'000'000'000LL);

    // A reader on the same (stepped) clock keeps the table: it never sees
    // a heartbeat older than its max_age once the agent has beaten once.
    // A minute tells an hour's step from a late heartbeat (every 200 ms)
    // on a loaded machine; the ages it saw are printed.
    const std::string read = Read();
    EXPECT_TRUE(Contains(read, "failed 0 dropped 0")) << read;
    std::printf("reader on the stepped clock: %s", read.c_str());

    // Nothing turned stale.
    {
      auto segment = client::Segment::Open(settings_.segment.c_str());
      ASSERT_TRUE(segment);
      auto info = segment->Info();
      ASSERT_TRUE(info);
      EXPECT_EQ(info->count, kMethods);
      EXPECT_FALSE(info->flags & ZCAL_FLAG_STALE);
    }
    EXPECT_EQ(Series(port, "zcal_published_stale"), 0);

    // `zcal show` on the agent's clock: a heartbeat of a moment ago.
    const std::string same_clock = LineOf(Show(true), "heartbeat");
    EXPECT_TRUE(Contains(same_clock, " s ago)")) << same_clock;
    EXPECT_FALSE(Contains(same_clock, "ahead")) << same_clock;
    // On the machine's clock: a stamp ahead is said to be, not shown as a
    // negative or wrapped age; one an hour behind is an hour old.
    const std::string true_clock = LineOf(Show(false), "heartbeat");
    if (step.offset > 0) {
      EXPECT_TRUE(Contains(true_clock, "age 0: stamped 3600 s ahead of this clock")) << true_clock;
    } else if (step.offset < 0) {
      EXPECT_TRUE(Contains(true_clock, "60.0 min ago)")) << true_clock;
    } else {
      EXPECT_TRUE(Contains(true_clock, " s ago)")) << true_clock;
    }

    // The schedule runs on: the next calibration comes seconds later, not
    // an hour later.
    ASSERT_TRUE(agent->WaitForLog(kFinished, kTimeout, finished + 1)) << agent->Log();
  }

  EXPECT_EQ(Series(port, "zcal_wall_clock_steps_total{direction=\"forward\"}"), 2);
  EXPECT_EQ(Series(port, "zcal_wall_clock_steps_total{direction=\"back\"}"), 2);
  // Every calibration came from the schedule (or the start): none was
  // triggered by the steps.
  const std::string log = agent->Log();
  EXPECT_EQ(CountOf(log, "calibration started ("),
            CountOf(log, "calibration started (startup)") +
                CountOf(log, "calibration started (schedule)"))
      << log;
  EXPECT_EQ(CountOf(log, "calibration failed"), 0u) << log;

  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->WaitExit(kTimeout), 0) << agent->Log();
  // The state file is kept, whole, with every result.
  const nlohmann::json state = nlohmann::json::parse(ReadFile(settings_.state));
  EXPECT_EQ(state["paths"]["loopback"].size(), kMethods);
  EXPECT_GT(state["last_success_ns"].get<std::uint64_t>(), 0u);
}

}  // namespace
}  // namespace zcal::agent::testing::agent_clock_test

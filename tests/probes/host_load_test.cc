// The host's load over a calibration: /proc/stat parsed from fixture files,
// the shares between two readings, and the meter on this machine.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "zcal/probes/host/cpu_accounting.h"
#include "zcal/testing/test_data.h"

namespace zcal::probes::host_load_test {
namespace {

std::string Fixture(const std::string& name) {
  return (zcal::testing::TestData() / "procstat" / name).string();
}

double NsPerTick() { return 1e9 / static_cast<double>(::sysconf(_SC_CLK_TCK)); }

TEST(HostLoad, ParsesTheCpuLineAndProcsRunningOfProcStat) {
  const auto counters = ReadHostCpuCounters(Fixture("before"));
  ASSERT_TRUE(counters.has_value());
  // user 1000 nice 10 system 500 irq 5 softirq 45 steal 100; idle 8000
  // iowait 40.
  EXPECT_EQ(counters->busy_ticks, 1660u);
  EXPECT_EQ(counters->steal_ticks, 100u);
  EXPECT_EQ(counters->total_ticks, 9700u);
  EXPECT_EQ(counters->procs_running, 3u);
}

TEST(HostLoad, IsUnknownWhenProcStatIsMissingOrMalformed) {
  EXPECT_FALSE(ReadHostCpuCounters(Fixture("no-running")).has_value()) << "no procs_running";
  EXPECT_FALSE(ReadHostCpuCounters(Fixture("none")).has_value()) << "no file";
  EXPECT_FALSE(ParseProcStat("cpu 1 2 three\nprocs_running 1\n").has_value());
  EXPECT_FALSE(ParseProcStat("cpu 1 2 3 4 5 6 7 8\nprocs_running x\n").has_value());
  EXPECT_TRUE(ParseProcStat("cpu 1 2 3 4 5 6 7 8\nprocs_running 2\n").has_value());
}

TEST(HostLoad, SharesOfAllCpusBetweenTwoReadings) {
  const auto before = ReadHostCpuCounters(Fixture("before"));
  const auto after = ReadHostCpuCounters(Fixture("after"));
  ASSERT_TRUE(before && after);
  // 1500 ticks of all CPUs passed: 900 busy, 100 of them stolen; this
  // process used 300 ticks' worth.
  const auto own_ns = static_cast<std::uint64_t>(300 * NsPerTick());
  const auto load = LoadBetween(*before, *after, own_ns, 7.5, {3, 5, 4});
  ASSERT_TRUE(load.has_value());
  EXPECT_DOUBLE_EQ(load->busy_share, 0.6);
  EXPECT_NEAR(load->steal_share, 100.0 / 1500.0, 1e-12);
  EXPECT_NEAR(load->own_share, 0.2, 1e-9);
  EXPECT_DOUBLE_EQ(load->runnable_mean, 4.0);
  EXPECT_EQ(load->runnable_max, 5u);
  EXPECT_EQ(load->runnable_reads, 3u);
  EXPECT_DOUBLE_EQ(load->window_seconds, 7.5);
}

TEST(HostLoad, IsUnknownWhenTheCountersDidNotAdvance) {
  const auto before = ReadHostCpuCounters(Fixture("before"));
  const auto after = ReadHostCpuCounters(Fixture("after"));
  ASSERT_TRUE(before && after);
  EXPECT_FALSE(LoadBetween(*before, *before, 0, 0.001, {}).has_value()) << "within one tick";
  EXPECT_FALSE(LoadBetween(*after, *before, 0, 1, {}).has_value()) << "backwards";
}

TEST(HostLoad, TheMeterSeesThisProcessBusy) {
  HostLoadMeter meter("/");
  meter.Start();
  // Work until the host's counters show at least 20 more busy ticks than
  // at the start (a condition, not a duration), capped so that a broken
  // reading fails instead of hanging.
  const auto start = ReadHostCpuCounters("/");
  ASSERT_TRUE(start.has_value());
  volatile std::uint64_t sink = 0;
  for (int round = 0; round < 100000; ++round) {
    for (int i = 0; i < 100000; ++i) sink = sink + static_cast<std::uint64_t>(i);
    const auto now = ReadHostCpuCounters("/");
    ASSERT_TRUE(now.has_value());
    if (now->busy_ticks >= start->busy_ticks + 20) break;
  }
  meter.Sample();
  const auto load = meter.Finish();
  ASSERT_TRUE(load.has_value());
  EXPECT_GT(load->own_share, 0.0);
  EXPECT_LE(load->own_share, 1.0);
  EXPECT_GT(load->busy_share, 0.0);
  EXPECT_LE(load->busy_share, 1.0);
  EXPECT_LE(load->steal_share, load->busy_share);
  EXPECT_EQ(load->runnable_reads, 1u);
  EXPECT_GE(load->runnable_max, 1u) << "the reading thread itself runs";
  EXPECT_GT(load->window_seconds, 0.0);
}

}  // namespace
}  // namespace zcal::probes::host_load_test

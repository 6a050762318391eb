#include "zcal/probes/host/cpu_accounting.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "scratch_dir.h"
#include "zcal/testing/test_data.h"

namespace zcal::probes::cpu_accounting_test {
namespace {

namespace fs = std::filesystem;

std::uint64_t RusageThreadCpuNs() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  auto ns = [](const timeval& tv) {
    return static_cast<std::uint64_t>(tv.tv_sec) * 1'000'000'000u +
           static_cast<std::uint64_t>(tv.tv_usec) * 1000u;
  };
  return ns(usage.ru_utime) + ns(usage.ru_stime);
}

std::uint64_t ProcessCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// Work, not time: the same amount whatever else the machine runs.
void Spin(std::uint64_t iterations) {
  volatile std::uint64_t sink = 0;
  for (std::uint64_t i = 0; i < iterations; ++i) sink = sink + i * 31;
}

TEST(CpuAccounting, ThreadTimeAgreesWithGetrusage) {
  // Against getrusage(RUSAGE_THREAD) over the same work: two readings of
  // one quantity, equal within getrusage's error (a scheduler tick).
  const std::uint64_t before = ThreadCpuNs();
  const std::uint64_t rusage_before = RusageThreadCpuNs();
  Spin(50'000'000);
  const std::uint64_t used = ThreadCpuNs() - before;
  const std::uint64_t rusage_used = RusageThreadCpuNs() - rusage_before;
  EXPECT_GT(used, 0u);
  EXPECT_NEAR(static_cast<double>(used), static_cast<double>(rusage_used),
              5e6 + 0.05 * static_cast<double>(rusage_used));
}

TEST(CpuAccounting, ThreadTimeResolvesWhatAShortProbeSpends) {
  // A probe of 20 ms needs its CPU time to well under a millisecond; a
  // tick-based clock is off by up to a tick (1-10 ms). This test's process
  // runs one thread while it spins, so the process's CPU clock (another
  // reading of the same scheduler runtime) must agree within 0.1 ms on
  // every ~1 ms piece of work.
  for (int i = 0; i < 20; ++i) {
    const std::uint64_t before = ThreadCpuNs();
    const std::uint64_t process_before = ProcessCpuNs();
    Spin(1'000'000);
    const std::uint64_t used = ThreadCpuNs() - before;
    const std::uint64_t process_used = ProcessCpuNs() - process_before;
    EXPECT_GT(used, 0u);
    EXPECT_NEAR(static_cast<double>(used), static_cast<double>(process_used), 1e5) << i;
  }
}

TEST(CpuAccounting, ThreadTimeExcludesBlocking) {
  // This thread blocks in read() while another spins 50 ms of its own CPU
  // time and then writes: the blocked thread is charged next to nothing,
  // the worker at least what it spun, whatever the machine's load.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::uint64_t worker_used = 0;
  std::thread worker([&] {
    const std::uint64_t start = ThreadCpuNs();
    while (ThreadCpuNs() - start < 50'000'000u) Spin(100'000);
    worker_used = ThreadCpuNs() - start;
    const char byte = 1;
    EXPECT_EQ(::write(fds[1], &byte, 1), 1);
  });
  const std::uint64_t before = ThreadCpuNs();
  char byte = 0;
  EXPECT_EQ(::read(fds[0], &byte, 1), 1);
  const std::uint64_t blocked_used = ThreadCpuNs() - before;
  worker.join();
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_GE(worker_used, 50'000'000u);
  EXPECT_LT(blocked_used, 5'000'000u);
}

TEST(CpuAccounting, HostBusyTimeSumsTheBusyFieldsOfProcStat) {
  const std::string root = (zcal::testing::TestData() / "sysfs" / "pci-host").string();
  // cpu 100 5 50 1000 7 3 10 2: user+nice+system+irq+softirq+steal = 170.
  const auto busy = HostBusyCpuNs(root);
  ASSERT_TRUE(busy.has_value());
  EXPECT_EQ(*busy, 170u * (1'000'000'000u / static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK))));
}

TEST(CpuAccounting, HostBusyTimeIsUnknownWhenProcStatIsMissingOrMalformed) {
  const testing::ScratchDir scratch("cpu-root");
  const fs::path& root = scratch.path();
  fs::create_directories(root / "proc");
  EXPECT_FALSE(HostBusyCpuNs(root.string()).has_value());
  std::ofstream(root / "proc/stat") << "cpu 1 2 three\n";
  EXPECT_FALSE(HostBusyCpuNs(root.string()).has_value());
}

TEST(CpuAccounting, HostBusyTimeOfThisMachineAdvances) {
  const auto before = HostBusyCpuNs("/");
  ASSERT_TRUE(before.has_value());
  // Work until /proc/stat shows it (one clock tick), with a cap on the work
  // so that a broken reading fails instead of hanging.
  std::optional<std::uint64_t> now = before;
  for (int round = 0; round < 1000 && now && *now <= *before; ++round) {
    Spin(1'000'000);
    now = HostBusyCpuNs("/");
  }
  ASSERT_TRUE(now.has_value());
  EXPECT_GT(*now, *before);
}

// Reading /proc/stat costs the thread CPU; a window's snapshots keep that
// cost outside it, so an empty window costs less than half a read. Each is
// the least of 20 tries: a timer tick or a preemption charged to one try
// (an empty window of 35 us against 19 us a read, once, with other tests
// running beside it) must not decide, and a window that held a read would
// cost at least the cheapest read in every try.
TEST(CpuAccounting, SnapshotsLeaveTheirOwnProcStatReadOutsideTheWindow) {
  constexpr int kTries = 20;
  std::uint64_t read = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t window = std::numeric_limits<std::uint64_t>::max();
  for (int i = 0; i < kTries; ++i) {
    const std::uint64_t start = ThreadCpuNs();
    ASSERT_TRUE(HostBusyCpuNs("/").has_value());
    read = std::min(read, ThreadCpuNs() - start);
    const CpuSnapshot before = CpuSnapshot::Before("/");
    const CpuSnapshot after = CpuSnapshot::After("/");
    ASSERT_TRUE(before.host_busy_ns && after.host_busy_ns);
    window = std::min(window, after.thread_ns - before.thread_ns);
  }
  EXPECT_LT(window, read / 2) << "the cheapest empty window " << window
                              << " ns against the cheapest read " << read << " ns";
}

}  // namespace
}  // namespace zcal::probes::cpu_accounting_test

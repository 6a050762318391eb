#include "zcal/probes/cpu_accounting.h"

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include <gtest/gtest.h>

namespace zcal::probes {
namespace {

namespace fs = std::filesystem;

std::uint64_t KernelThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// Work, not time: the same amount whatever else the machine runs.
void Spin(std::uint64_t iterations) {
  volatile std::uint64_t sink = 0;
  for (std::uint64_t i = 0; i < iterations; ++i) sink = sink + i * 31;
}

TEST(CpuAccounting, ThreadTimeAgreesWithTheKernelsThreadClock) {
  // getrusage(RUSAGE_THREAD) against CLOCK_THREAD_CPUTIME_ID over the same
  // work: two readings of one quantity, equal within getrusage's
  // microsecond resolution and the scheduler tick (a few ms).
  const std::uint64_t before = ThreadCpuNs();
  const std::uint64_t kernel_before = KernelThreadCpuNs();
  Spin(50'000'000);
  const std::uint64_t used = ThreadCpuNs() - before;
  const std::uint64_t kernel_used = KernelThreadCpuNs() - kernel_before;
  EXPECT_GT(used, 0u);
  EXPECT_NEAR(static_cast<double>(used), static_cast<double>(kernel_used),
              5e6 + 0.05 * static_cast<double>(kernel_used));
}

TEST(CpuAccounting, ThreadTimeExcludesSleeping) {
  const std::uint64_t before = ThreadCpuNs();
  const std::uint64_t kernel_before = KernelThreadCpuNs();
  ::usleep(50'000);
  // Sleeping costs no CPU, whatever the load: what the thread was charged
  // is what the kernel's thread clock says, far below the 50 ms slept.
  const std::uint64_t used = ThreadCpuNs() - before;
  EXPECT_LT(used, 10'000'000u);
  EXPECT_NEAR(static_cast<double>(used),
              static_cast<double>(KernelThreadCpuNs() - kernel_before), 5e6);
}

TEST(CpuAccounting, HostBusyTimeSumsTheBusyFieldsOfProcStat) {
  const char* data = std::getenv("ZCAL_TEST_DATA");
  const std::string root = std::string(data != nullptr ? data : "tests/data") + "/sysfs/pci-host";
  // cpu 100 5 50 1000 7 3 10 2: user+nice+system+irq+softirq+steal = 170.
  const auto busy = HostBusyCpuNs(root);
  ASSERT_TRUE(busy.has_value());
  EXPECT_EQ(*busy, 170u * (1'000'000'000u / static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK))));
}

TEST(CpuAccounting, HostBusyTimeIsUnknownWhenProcStatIsMissingOrMalformed) {
  const fs::path root = fs::temp_directory_path() / "zcal-cpu-root";
  fs::remove_all(root);
  fs::create_directories(root / "proc");
  EXPECT_FALSE(HostBusyCpuNs(root.string()).has_value());
  std::ofstream(root / "proc/stat") << "cpu 1 2 three\n";
  EXPECT_FALSE(HostBusyCpuNs(root.string()).has_value());
  fs::remove_all(root);
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

}  // namespace
}  // namespace zcal::probes

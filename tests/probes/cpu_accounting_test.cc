#include "zcal/probes/cpu_accounting.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace zcal::probes {
namespace {

namespace fs = std::filesystem;

TEST(CpuAccounting, ThreadTimeGrowsWithWork) {
  const std::uint64_t before = ThreadCpuNs();
  volatile std::uint64_t sink = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
  while (std::chrono::steady_clock::now() < end) sink = sink + 1;
  EXPECT_GT(ThreadCpuNs() - before, 10'000'000u);
}

TEST(CpuAccounting, ThreadTimeExcludesSleeping) {
  const std::uint64_t before = ThreadCpuNs();
  ::usleep(50'000);
  EXPECT_LT(ThreadCpuNs() - before, 10'000'000u);
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
  volatile std::uint64_t sink = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  while (std::chrono::steady_clock::now() < end) sink = sink + 1;
  EXPECT_GT(*HostBusyCpuNs("/"), *before);
}

}  // namespace
}  // namespace zcal::probes

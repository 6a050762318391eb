// `zcal calibrate --buffers`: the probes' buffers in 4 KiB pages or huge
// pages, on the discard path and on loopback, and the one line a user
// gets when huge pages cannot be had.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_command.h"

namespace zcal::testing::calibrate_buffers_test {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

CommandResult Calibrate(std::vector<std::string> args) {
  args.insert(args.begin(), {ZcalPath(), "calibrate"});
  return RunCommand(args);
}

// Huge pages, namespaces or io_uring this machine lacks: the reason.
std::string MissingHere(const CommandResult& r) {
  if (r.exit_status != 3) return "";
  for (const char* why : {"huge pages:", "private network namespace"}) {
    if (r.err.find(why) != std::string::npos) return r.err;
  }
  return "";
}

constexpr const char* kHugeKinds[] = {"hugetlbfs 2 MiB pages",
                                      "transparent huge pages (2 MiB)"};

TEST(CalibrateBuffers, HugePagesOnTheDiscardPathSayWhichPagesTheyGot) {
  const auto r = Calibrate({"--path", "discard", "--json", "--buffers", "hugepages", "--budget",
                            "2", "--max", "64K", "--methods",
                            "copy,msg_zerocopy,uring_send,uring_send_zc_fixed"});
  if (const std::string why = MissingHere(r); !why.empty()) GTEST_SKIP() << why;
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("buffers").at("memory"), "hugepages");
  EXPECT_THAT(doc.at("buffers").at("pages").get<std::string>(),
              AnyOf(kHugeKinds[0], kHugeKinds[1]));
  const auto& probes = doc.at("probes");
  EXPECT_GT(probes.at("msg_zerocopy").at("ok").get<int>(), 0) << probes.dump();
  // Registered buffers pin the huge pages like small ones; only io_uring
  // missing here makes the method unsupported.
  const auto& fixed = probes.at("uring_send_zc_fixed");
  EXPECT_EQ(fixed.at("failed").get<int>(), 0) << fixed.dump();
  if (fixed.at("unsupported").get<int>() == 0) {
    EXPECT_GT(fixed.at("ok").get<int>(), 0) << fixed.dump();
  }
}

TEST(CalibrateBuffers, HugePagesOnLoopbackAndPagesByDefault) {
  const auto huge = Calibrate({"--buffers", "hugepages", "--budget", "1", "--max", "64K",
                               "--methods", "copy,msg_zerocopy"});
  if (const std::string why = MissingHere(huge); !why.empty()) GTEST_SKIP() << why;
  ASSERT_EQ(huge.exit_status, 0) << huge.err;
  EXPECT_THAT(huge.out, HasSubstr("  buffers      hugepages: "));
  EXPECT_THAT(huge.out, AnyOf(HasSubstr(kHugeKinds[0]), HasSubstr(kHugeKinds[1])));

  const auto pages = Calibrate({"--json", "--budget", "1", "--max", "16K", "--methods", "copy"});
  ASSERT_EQ(pages.exit_status, 0) << pages.err;
  const auto doc = nlohmann::json::parse(pages.out);
  EXPECT_EQ(doc.at("buffers").at("memory"), "pages");
  EXPECT_EQ(doc.at("buffers").at("pages"), "4 KiB pages");
}

TEST(CalibrateBuffers, UnknownMemoryIsOneLineAndExitTwo) {
  const auto r = Calibrate({"--buffers", "bogus"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_EQ(r.err,
            "zcal calibrate: --buffers: unknown buffer memory \"bogus\"; choose pages or "
            "hugepages\n");
  EXPECT_EQ(r.out, "");
}

// A host with no huge pages (a fake root: none reserved, THP never):
// one line saying what to do, exit 3, before any probe.
TEST(CalibrateBuffers, NoHugePagesIsOneLineSayingWhatToDo) {
  const auto root = std::filesystem::temp_directory_path() /
                    ("zcal-buffers-" + std::to_string(::getpid()));
  const auto write = [&root](const std::string& relative, const std::string& line) {
    std::filesystem::create_directories((root / relative).parent_path());
    std::ofstream(root / relative) << line << "\n";
  };
  write("proc/sys/vm/nr_hugepages", "0");
  write("proc/sys/vm/nr_overcommit_hugepages", "0");
  write("sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]");
  const auto r = Calibrate({"--buffers", "hugepages", "--root", root.string(), "--budget", "1",
                            "--methods", "copy"});
  std::filesystem::remove_all(root);
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_THAT(r.err, StartsWith("zcal calibrate: --buffers hugepages: huge pages: none "
                                "reserved (vm.nr_hugepages is 0) and transparent huge pages "
                                "are disabled ("));
  EXPECT_THAT(r.err, HasSubstr("reserve some with sysctl vm.nr_hugepages=1 or enable THP"));
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace zcal::testing::calibrate_buffers_test

// Methods that cannot run yield "unsupported" with the reason, not an error.
#include <seccomp.h>
#include <sys/capability.h>
#include <sys/resource.h>

#include <cerrno>
#include <chrono>

#include <gtest/gtest.h>

#include "child_process.h"
#include "zcal/calibrator/method.h"
#include "zcal/probes/send/capabilities.h"
#include "zcal/probes/send/probe.h"
#include "zcal/probes/sink/sink.h"

namespace zcal::probes::fallback_test {
namespace {

using namespace std::chrono_literals;
using calibrator::Method;
using calibrator::Sample;
using calibrator::SampleStatus;
using testing::RunInChild;

std::string Describe(const Sample& sample) {
  const char* status = sample.status == SampleStatus::kOk            ? "ok"
                       : sample.status == SampleStatus::kUnsupported ? "unsupported"
                                                                     : "failed";
  return std::string(status) + "|" + sample.error;
}

Sample ProbeInThisProcess(Method method, std::uint64_t size) {
  auto sink = Sink::Start({});
  if (!sink) {
    Sample failed;
    failed.status = SampleStatus::kFailed;
    failed.error = "sink: " + sink.error().message;
    return failed;
  }
  ProbeOptions options;
  options.method = method;
  options.size_bytes = size;
  options.sink = (*sink)->endpoint();
  options.duration = 50ms;
  return RunProbe(options);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  for (std::size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
  }
  return lines;
}

// "blocked" when the filter is in place, or why it could not be.
std::string BlockIoUringSetup(int err) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return "seccomp_init failed";
  int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(static_cast<std::uint32_t>(err)),
                            SCMP_SYS(io_uring_setup), 0);
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  return rc == 0 ? "blocked" : "seccomp rule/load failed: " + std::to_string(rc);
}

class SeccompBlocksIoUring : public ::testing::TestWithParam<int> {};

TEST_P(SeccompBlocksIoUring, EveryIoUringMethodIsUnsupportedWithTheReason) {
  const int err = GetParam();
  const auto out = RunInChild([err] {
    std::string text = BlockIoUringSetup(err);
    if (text != "blocked") return text;
    for (Method m : {Method::kUringSend, Method::kUringSendZc, Method::kUringSendZcFixed}) {
      const Support support = CheckSupport(m);
      text += "\n" + std::string(support.supported ? "supported" : "unsupported") + "|" +
              support.reason;
      text += "\n" + Describe(ProbeInThisProcess(m, 16384));
    }
    // The copying methods do not need io_uring.
    text += "\n" + Describe(ProbeInThisProcess(Method::kCopy, 16384));
    return text;
  });
  ASSERT_TRUE(out.has_value()) << "the child crashed";
  if (out->rfind("blocked", 0) != 0) GTEST_SKIP() << "cannot install a seccomp filter: " << *out;
  const std::string name = err == EPERM ? "EPERM" : "ENOSYS";
  const std::vector<std::string> lines = Lines(*out);
  ASSERT_EQ(lines.size(), 8u) << *out;
  for (std::size_t i = 1; i <= 6; ++i) {
    EXPECT_EQ(lines[i].rfind("unsupported|", 0), 0u) << lines[i];
    EXPECT_NE(lines[i].find("io_uring_setup failed with " + name), std::string::npos)
        << lines[i];
    EXPECT_NE(lines[i].find("seccomp"), std::string::npos) << lines[i];
  }
  EXPECT_EQ(lines[7], "ok|");
}

INSTANTIATE_TEST_SUITE_P(Errors, SeccompBlocksIoUring, ::testing::Values(EPERM, ENOSYS),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == EPERM ? "EPERM" : "ENOSYS");
                         });

// "limited" once the child lacks CAP_IPC_LOCK and has a 64 KiB limit.
std::string LimitLockedMemory() {
  cap_t caps = cap_get_proc();
  if (caps == nullptr) return "cap_get_proc failed";
  const cap_value_t lock[] = {CAP_IPC_LOCK};
  int rc = cap_set_flag(caps, CAP_EFFECTIVE, 1, lock, CAP_CLEAR);
  if (rc == 0) rc = cap_set_flag(caps, CAP_PERMITTED, 1, lock, CAP_CLEAR);
  if (rc == 0) rc = cap_set_proc(caps);
  cap_free(caps);
  if (rc != 0) return "cannot drop CAP_IPC_LOCK";
  const rlimit limit{64 * 1024, 64 * 1024};
  if (::setrlimit(RLIMIT_MEMLOCK, &limit) != 0) return "cannot lower RLIMIT_MEMLOCK";
  return "limited";
}

TEST(LockedMemoryLimit, RegisteredBuffersBeyondItAreUnsupported) {
  if (!CheckSupport(Method::kUringSendZcFixed).supported) {
    GTEST_SKIP() << CheckSupport(Method::kUringSendZcFixed).reason;
  }
  const auto out = RunInChild([] {
    std::string text = LimitLockedMemory();
    if (text != "limited") return text;
    text += "\n" + Describe(ProbeInThisProcess(Method::kUringSendZcFixed, 65536));
    // Without registered buffers the kernel still charges the pages pinned
    // by zerocopy sends in flight to the same limit.
    text += "\n" + Describe(ProbeInThisProcess(Method::kUringSendZc, 65536));
    // Copying sends pin nothing.
    text += "\n" + Describe(ProbeInThisProcess(Method::kUringSend, 65536));
    return text;
  });
  ASSERT_TRUE(out.has_value()) << "the child crashed";
  if (out->rfind("limited", 0) != 0) GTEST_SKIP() << *out;
  const std::vector<std::string> lines = Lines(*out);
  ASSERT_EQ(lines.size(), 4u) << *out;
  for (const std::string& zerocopy : {lines[1], lines[2]}) {
    EXPECT_EQ(zerocopy.rfind("unsupported|", 0), 0u) << zerocopy;
    EXPECT_NE(zerocopy.find("ENOMEM"), std::string::npos) << zerocopy;
    EXPECT_NE(zerocopy.find("RLIMIT_MEMLOCK 64 KiB"), std::string::npos) << zerocopy;
    EXPECT_NE(zerocopy.find("CAP_IPC_LOCK"), std::string::npos) << zerocopy;
  }
  EXPECT_NE(lines[1].find("registering"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[3], "ok|");
}

}  // namespace
}  // namespace zcal::probes::fallback_test

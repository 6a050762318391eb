#include "zcal/probes/send/capabilities.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "zcal/testing/test_data.h"

namespace zcal::probes::capabilities_test {
namespace {

using calibrator::Method;

std::string FakeRoot() {
  return (zcal::testing::TestData() / "sysfs" / "pci-host").string();
}

TEST(Capabilities, CopyIsAlwaysSupported) {
  EXPECT_TRUE(CheckSupport(Method::kCopy).supported);
  EXPECT_TRUE(CheckSupport(Method::kCopy, {FakeRoot()}).supported);
}

TEST(Capabilities, IoUringDisabledBySysctlIsUnsupportedWithTheSysctlName) {
  // The fake tree has kernel.io_uring_disabled = 2.
  for (Method m : {Method::kUringSend, Method::kUringSendZc, Method::kUringSendZcFixed}) {
    const Support support = CheckSupport(m, {FakeRoot()});
    EXPECT_FALSE(support.supported);
    EXPECT_NE(support.reason.find("kernel.io_uring_disabled = 2"), std::string::npos)
        << support.reason;
    EXPECT_EQ(support.reason.rfind(std::string(calibrator::MethodName(m)) + ":", 0), 0u)
        << support.reason;
  }
  // msg_zerocopy does not depend on io_uring.
  EXPECT_TRUE(CheckSupport(Method::kMsgZerocopy, {FakeRoot()}).supported);
}

TEST(Capabilities, EveryMethodIsSupportedOnThisKernel) {
  // Linux 6.18: SO_ZEROCOPY (4.14), IORING_OP_SEND (5.6), SEND_ZC (6.0).
  for (Method m : calibrator::kAllMethods) {
    const Support support = CheckSupport(m);
    if (!support.supported && support.reason.find("io_uring_setup") != std::string::npos) {
      GTEST_SKIP() << support.reason;
    }
    EXPECT_TRUE(support.supported) << support.reason;
    EXPECT_TRUE(support.reason.empty());
  }
}

}  // namespace
}  // namespace zcal::probes::capabilities_test

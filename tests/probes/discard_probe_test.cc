// The five senders on the discard path: UDP datagrams to 127.0.0.2 in a
// private namespace whose lo drops them in a blackhole qdisc. Proof that
// zerocopy is real there: no completion is flagged copied.
#include <chrono>
#include <cstdio>
#include <map>

#include <gtest/gtest.h>

#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/method.h"
#include "zcal/probes/discard/discard.h"
#include "zcal/probes/send/capabilities.h"

namespace zcal::probes::discard_probe_test {
namespace {

using namespace std::chrono_literals;
using calibrator::Method;
using calibrator::Sample;

class ProbeOnDiscard : public ::testing::TestWithParam<Method> {
 protected:
  void SetUp() override {
    const Support support = CheckSupport(GetParam());
    if (!support.supported) GTEST_SKIP() << support.reason;
    auto discard = DiscardNamespace::Create();
    if (!discard && discard.error().code == Errc::kUnsupported) {
      GTEST_SKIP() << discard.error().message;
    }
    ASSERT_TRUE(discard) << discard.error().message;
    discard_ = std::move(*discard);
  }

  ProbeOptions Options(std::uint64_t size) const {
    ProbeOptions options;
    options.method = GetParam();
    options.size_bytes = size;
    options.path = "discard";
    options.duration = 100ms;
    return options;
  }

  std::unique_ptr<DiscardNamespace> discard_;
};

TEST_P(ProbeOnDiscard, SendsWholeDatagramsThatTheKernelNeverCopies) {
  for (std::uint64_t size : {std::uint64_t{1000}, std::uint64_t{16384}, kMaxUdpPayloadBytes}) {
    const Sample sample = RunDiscardProbe(*discard_, Options(size));
    ASSERT_TRUE(sample.ok()) << sample.error;
    EXPECT_EQ(sample.path, "discard");
    EXPECT_EQ(sample.size_bytes, size);
    EXPECT_GT(sample.bytes, size);
    EXPECT_EQ(sample.bytes % size, 0u) << "a datagram is sent whole or not at all";
    EXPECT_GE(sample.wall_ns, 100'000'000u);
    EXPECT_LT(sample.wall_ns, 2'000'000'000u);
    EXPECT_GT(sample.cpu_ns, 0u);
    if (calibrator::IsZerocopy(GetParam())) {
      EXPECT_EQ(sample.zc_completions, sample.bytes / size) << "one per datagram";
      EXPECT_EQ(sample.zc_copied, 0u) << "size " << size;
    } else {
      EXPECT_EQ(sample.zc_completions, 0u);
    }
  }
}

TEST_P(ProbeOnDiscard, StopsAtTheByteCap) {
  ProbeOptions options = Options(4096);
  options.duration = 5s;
  options.max_bytes = 1'000'000;
  const Sample sample = RunDiscardProbe(*discard_, options);
  ASSERT_TRUE(sample.ok()) << sample.error;
  EXPECT_GE(sample.bytes, 1'000'000u);
  EXPECT_LT(sample.bytes, 1'000'000u + 4096u);
}

TEST_P(ProbeOnDiscard, RefusesADatagramAboveTheUdpLimit) {
  const Sample sample = RunDiscardProbe(*discard_, Options(kMaxUdpPayloadBytes + 1));
  EXPECT_EQ(sample.status, calibrator::SampleStatus::kFailed);
  EXPECT_NE(sample.error.find("65507"), std::string::npos) << sample.error;
}

INSTANTIATE_TEST_SUITE_P(
    AllMethods, ProbeOnDiscard, ::testing::ValuesIn(calibrator::kAllMethods),
    [](const ::testing::TestParamInfo<Method>& info) {
      return std::string(calibrator::MethodName(info.param));
    });

}  // namespace
}  // namespace zcal::probes::discard_probe_test

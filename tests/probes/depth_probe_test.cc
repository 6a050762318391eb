// A zerocopy sender at depth D never has more than D sends in flight, and
// a probe's sample says which depth it ran at.
#include <chrono>

#include <gtest/gtest.h>

#include "zcal/calibrator/depth.h"
#include "zcal/probes/send/buffer_pool.h"
#include "zcal/probes/send/capabilities.h"
#include "zcal/probes/send/connect.h"
#include "zcal/probes/send/probe.h"
#include "zcal/probes/send/sender.h"
#include "zcal/probes/sink/sink.h"

namespace zcal::probes::depth_probe_test {
namespace {

using namespace std::chrono_literals;
using calibrator::kStreamDepth;
using calibrator::Method;

using Factory = Result<std::unique_ptr<Sender>> (*)(int, const BufferPool&, std::uint32_t);

struct DepthCase {
  Method method;
  Factory make;
  std::uint32_t depth;
};

class SenderAtDepth : public ::testing::TestWithParam<DepthCase> {};

TEST_P(SenderAtDepth, KeepsAtMostDepthSendsInFlight) {
  const DepthCase c = GetParam();
  if (const Support support = CheckSupport(c.method); !support.supported) {
    GTEST_SKIP() << support.reason;
  }
  auto sink = Sink::Start({});
  ASSERT_TRUE(sink) << sink.error().message;
  constexpr std::uint32_t kBuffers = 16;
  auto pool = BufferPool::Allocate(kBuffers, 16 * 1024);
  ASSERT_TRUE(pool) << pool.error().message;
  auto fd = ConnectTcp((*sink)->endpoint());
  ASSERT_TRUE(fd) << fd.error().message;
  auto sender = c.make(fd->get(), **pool, c.depth);
  ASSERT_TRUE(sender) << sender.error().message;
  const StopCondition stop(std::chrono::steady_clock::now() + 100ms, 0, nullptr);
  auto counters = (*sender)->Run(stop);
  ASSERT_TRUE(counters) << counters.error().message;
  EXPECT_GT(counters->bytes, 0u);
  EXPECT_GE(counters->max_in_flight, 1u);
  if (c.depth != kStreamDepth) {
    EXPECT_LE(counters->max_in_flight, c.depth) << "depth " << calibrator::DepthName(c.depth);
  } else if (c.method != Method::kMsgZerocopy) {
    // io_uring sends whole messages: one per buffer at most. (MSG_ZEROCOPY
    // on TCP may take a message in several sends, each in flight.)
    EXPECT_LE(counters->max_in_flight, kBuffers);
  }
  // Every send's completion was reaped before the sender returned.
  EXPECT_GT(counters->zc_completions, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Depths, SenderAtDepth,
    ::testing::Values(DepthCase{Method::kMsgZerocopy, MakeMsgZerocopySender, 1},
                      DepthCase{Method::kMsgZerocopy, MakeMsgZerocopySender, 4},
                      DepthCase{Method::kMsgZerocopy, MakeMsgZerocopySender, kStreamDepth},
                      DepthCase{Method::kUringSendZc, MakeUringSendZcSender, 1},
                      DepthCase{Method::kUringSendZc, MakeUringSendZcSender, 4},
                      DepthCase{Method::kUringSendZcFixed, MakeUringSendZcFixedSender, 1},
                      DepthCase{Method::kUringSendZcFixed, MakeUringSendZcFixedSender,
                                kStreamDepth}));

TEST(ProbeAtDepth, ZerocopySamplesCarryTheirDepthAndBaselinesStream) {
  auto sink = Sink::Start({});
  ASSERT_TRUE(sink) << sink.error().message;
  ProbeOptions options;
  options.size_bytes = 32 * 1024;
  options.sink = (*sink)->endpoint();
  options.duration = 30ms;
  options.depth = 4;
  options.method = Method::kMsgZerocopy;
  const calibrator::Sample zc = RunProbe(options);
  ASSERT_TRUE(zc.ok()) << zc.error;
  EXPECT_EQ(zc.depth, 4u);
  options.method = Method::kCopy;
  const calibrator::Sample copy = RunProbe(options);
  ASSERT_TRUE(copy.ok()) << copy.error;
  EXPECT_EQ(copy.depth, kStreamDepth);
}

TEST(ProbeAtDepth, ADepthBeyondTheDeepestPoolFailsTheProbeNamingIt) {
  ProbeOptions options;
  options.method = Method::kMsgZerocopy;
  options.depth = calibrator::kMaxDepth + 1;
  const calibrator::Sample sample = RunProbe(options);
  EXPECT_FALSE(sample.ok());
  EXPECT_NE(sample.error.find("depth 129"), std::string::npos) << sample.error;
}

}  // namespace
}  // namespace zcal::probes::depth_probe_test

// The sink under concurrent senders and concurrent readers of its counters
// (also run under ThreadSanitizer, suite tsan).
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "zcal/probes/send/probe.h"
#include "zcal/probes/sink/sink.h"

namespace zcal::probes::sink_concurrency_test {
namespace {

using namespace std::chrono_literals;
using calibrator::Method;

TEST(SinkConcurrency, CountsEveryByteOfConcurrentProbesWhileStatsAreRead) {
  auto sink = Sink::Start({});
  ASSERT_TRUE(sink) << sink.error().message;
  constexpr int kSenders = 3;
  constexpr int kProbesEach = 4;
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> sent{0};
  std::atomic<int> failures{0};
  std::thread reader([&] {
    SinkStats last;
    while (!done.load()) {
      const SinkStats now = (*sink)->Stats();
      // Counters only grow, and never more connections open than accepted.
      EXPECT_GE(now.bytes_received, last.bytes_received);
      EXPECT_GE(now.connections_accepted, last.connections_accepted);
      EXPECT_LE(now.connections_open, now.connections_accepted);
      last = now;
    }
  });
  std::vector<std::thread> senders;
  for (int t = 0; t < kSenders; ++t) {
    senders.emplace_back([&, t] {
      for (int i = 0; i < kProbesEach; ++i) {
        ProbeOptions options;
        options.method = (t + i) % 2 == 0 ? Method::kCopy : Method::kMsgZerocopy;
        options.size_bytes = 4096u << (i % 3);
        options.sink = (*sink)->endpoint();
        options.duration = 30ms;
        const calibrator::Sample sample = RunProbe(options);
        if (!sample.ok()) {
          failures.fetch_add(1);
          continue;
        }
        sent.fetch_add(sample.bytes);
      }
    });
  }
  for (std::thread& s : senders) s.join();
  ASSERT_TRUE((*sink)->WaitIdle(kSenders * kProbesEach, 10s));
  done.store(true);
  reader.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ((*sink)->Stats().bytes_received, sent.load());
  EXPECT_EQ((*sink)->Stats().connections_accepted,
            static_cast<std::uint64_t>(kSenders * kProbesEach));
}

TEST(SinkConcurrency, StopWhileSendersAreConnectedEndsTheirProbes) {
  auto sink = Sink::Start({});
  ASSERT_TRUE(sink) << sink.error().message;
  std::thread sender([endpoint = (*sink)->endpoint()] {
    ProbeOptions options;
    options.sink = endpoint;
    options.duration = 5s;
    const calibrator::Sample sample = RunProbe(options);
    // The sink went away mid-probe: a failure with the reason, not a hang.
    EXPECT_FALSE(sample.ok());
    EXPECT_FALSE(sample.error.empty());
  });
  // Stopped once the probe is sending: a condition, not a guess at how
  // long its setup takes.
  while ((*sink)->Stats().bytes_received == 0) std::this_thread::yield();
  (*sink)->Stop();
  sender.join();
}

}  // namespace
}  // namespace zcal::probes::sink_concurrency_test

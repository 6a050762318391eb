// zcal_sink_*: read from a real PeerSink at each scrape, every outcome
// present from the start, totals carried over when a reload replaces it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "zcal/agent/metrics/metrics.h"
#include "zcal/probes/peer/peer_sink.h"

namespace zcal::agent::metrics_sink_test {
namespace {

using std::chrono::milliseconds;

std::shared_ptr<probes::PeerSink> LoopbackSink() {
  auto sink = probes::PeerSink::Start(probes::PeerSinkOptions{});
  EXPECT_TRUE(sink) << sink.error().message;
  return sink ? std::shared_ptr<probes::PeerSink>(std::move(*sink)) : nullptr;
}

// Opens a connection, sends bytes that are no hello, and closes it: the
// sink counts one outcome for it.
void SendGarbage(const common::HostPort& at) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(at.port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const std::string garbage(128, 'x');
  EXPECT_EQ(write(fd, garbage.data(), garbage.size()),
            static_cast<ssize_t>(garbage.size()));
  close(fd);
}

double OutcomeSum(const std::string& text) {
  double sum = 0;
  for (std::size_t at = text.find("\nzcal_sink_sessions_total{"); at != std::string::npos;
       at = text.find("\nzcal_sink_sessions_total{", at + 1)) {
    sum += std::stod(text.substr(text.find("} ", at) + 2));
  }
  return sum;
}

TEST(MetricsSink, WithoutASinkThereAreNoSinkSeries) {
  Metrics metrics("test");
  EXPECT_EQ(metrics.Text().find("zcal_sink_"), std::string::npos);
}

TEST(MetricsSink, EveryOutcomeIsThereFromTheStart) {
  Metrics metrics("test");
  auto sink = LoopbackSink();
  ASSERT_TRUE(sink);
  metrics.SetSink(sink);
  const std::string text = metrics.Text();
  for (std::size_t i = 0; i < probes::kSinkOutcomes; ++i) {
    const std::string name(probes::SinkOutcomeName(static_cast<probes::SinkOutcome>(i)));
    EXPECT_NE(text.find("zcal_sink_sessions_total{outcome=\"" + name + "\"} 0\n"),
              std::string::npos)
        << name << "\n" << text;
  }
  EXPECT_NE(text.find("# TYPE zcal_sink_sessions_total counter"), std::string::npos);
  EXPECT_NE(text.find("\nzcal_sink_bytes_received_total 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nzcal_sink_sessions_open 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE zcal_sink_connections_open gauge"), std::string::npos);
  EXPECT_NE(text.find("\nzcal_sink_connections_refused_per_source_total 0\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nzcal_sink_accept_pauses_total 0\n"), std::string::npos) << text;

  metrics.SetSink(nullptr);
  EXPECT_EQ(metrics.Text().find("zcal_sink_"), std::string::npos);
}

TEST(MetricsSink, AScrapeReadsTheSinkAndAReplacementKeepsTheTotals) {
  Metrics metrics("test");
  auto first = LoopbackSink();
  ASSERT_TRUE(first);
  metrics.SetSink(first);
  SendGarbage(first->endpoint());
  ASSERT_TRUE(first->WaitFor(
      [](const probes::PeerSinkStats& s) {
        std::uint64_t ended = 0;
        for (const std::uint64_t n : s.outcomes) ended += n;
        return ended == 1 && s.connections_open == 0;
      },
      milliseconds(10'000)));
  EXPECT_EQ(OutcomeSum(metrics.Text()), 1.0) << metrics.Text();

  auto second = LoopbackSink();
  ASSERT_TRUE(second);
  metrics.SetSink(second);
  first->Stop();
  EXPECT_EQ(OutcomeSum(metrics.Text()), 1.0) << metrics.Text();
}

TEST(MetricsSink, ConnectionsOverThePerSourceCapAreCounted) {
  Metrics metrics("test");
  probes::PeerSinkOptions options;
  options.max_connections_per_source = 4;
  auto started = probes::PeerSink::Start(options);
  ASSERT_TRUE(started) << started.error().message;
  std::shared_ptr<probes::PeerSink> sink = std::move(*started);
  metrics.SetSink(sink);
  std::vector<int> held;
  for (int i = 0; i < 5; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(sink->endpoint().port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    held.push_back(fd);
  }
  ASSERT_TRUE(sink->WaitFor([](const probes::PeerSinkStats& s) { return s.refused_per_source == 1; },
                            milliseconds(10'000)));
  const std::string text = metrics.Text();
  EXPECT_NE(text.find("\nzcal_sink_connections_refused_per_source_total 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("zcal_sink_sessions_total{outcome=\"limit\"} 1\n"), std::string::npos)
      << text;
  for (int fd : held) close(fd);
}

}  // namespace
}  // namespace zcal::agent::metrics_sink_test

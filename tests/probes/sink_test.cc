#include "zcal/probes/sink/sink.h"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include <gtest/gtest.h>

#include "zcal/probes/send/connect.h"
#include "zcal/probes/types/target.h"

namespace zcal::probes::sink_test {
namespace {

using namespace std::chrono_literals;

void SendAll(int fd, std::size_t bytes) {
  std::vector<char> data(64 * 1024, 'x');
  while (bytes > 0) {
    const ssize_t n = ::send(fd, data.data(), std::min(bytes, data.size()), MSG_NOSIGNAL);
    ASSERT_GT(n, 0);
    bytes -= static_cast<std::size_t>(n);
  }
}

TEST(Sink, ReceivesEveryByteAndCountsConnections) {
  auto sink = Sink::Start({});
  ASSERT_TRUE(sink) << sink.error().message;
  EXPECT_NE((*sink)->endpoint().port, 0);
  for (int i = 0; i < 3; ++i) {
    auto fd = ConnectTcp((*sink)->endpoint());
    ASSERT_TRUE(fd) << fd.error().message;
    SendAll(fd->get(), 3'000'000 + static_cast<std::size_t>(i));
  }
  ASSERT_TRUE((*sink)->WaitIdle(3, 5s));
  const SinkStats stats = (*sink)->Stats();
  EXPECT_EQ(stats.bytes_received, 9'000'003u);
  EXPECT_EQ(stats.connections_accepted, 3u);
  EXPECT_EQ(stats.connections_open, 0u);
  EXPECT_EQ(stats.connections_refused, 0u);
}

TEST(Sink, RefusesConnectionsBeyondItsLimit) {
  SinkOptions options;
  options.max_connections = 2;
  auto sink = Sink::Start(options);
  ASSERT_TRUE(sink) << sink.error().message;
  std::vector<common::UniqueFd> fds;
  for (int i = 0; i < 3; ++i) {
    auto fd = ConnectTcp((*sink)->endpoint());
    ASSERT_TRUE(fd) << fd.error().message;
    fds.push_back(std::move(*fd));
  }
  for (int i = 0; i < 500 && (*sink)->Stats().connections_refused == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  const SinkStats stats = (*sink)->Stats();
  EXPECT_EQ(stats.connections_accepted, 2u);
  EXPECT_EQ(stats.connections_refused, 1u);
  // The refused one sees the connection closed.
  char byte = 0;
  EXPECT_EQ(::recv(fds[2].get(), &byte, 1, 0), 0);
}

TEST(Sink, ClosesIdleConnections) {
  SinkOptions options;
  options.idle_timeout = 100ms;
  auto sink = Sink::Start(options);
  ASSERT_TRUE(sink) << sink.error().message;
  auto fd = ConnectTcp((*sink)->endpoint());
  ASSERT_TRUE(fd) << fd.error().message;
  ASSERT_TRUE((*sink)->WaitIdle(1, 5s));
  EXPECT_EQ((*sink)->Stats().connections_timed_out, 1u);

  // Bytes far below half the read buffer wake nobody; they are counted all
  // the same before the silent connection is closed.
  auto quiet = ConnectTcp((*sink)->endpoint());
  ASSERT_TRUE(quiet) << quiet.error().message;
  SendAll(quiet->get(), 1000);
  ASSERT_TRUE((*sink)->WaitIdle(2, 5s));
  EXPECT_EQ((*sink)->Stats().bytes_received, 1000u);
  EXPECT_EQ((*sink)->Stats().connections_timed_out, 2u);
}

TEST(Sink, StopClosesOpenConnections) {
  auto sink = Sink::Start({});
  ASSERT_TRUE(sink) << sink.error().message;
  auto fd = ConnectTcp((*sink)->endpoint());
  ASSERT_TRUE(fd) << fd.error().message;
  for (int i = 0; i < 500 && (*sink)->Stats().connections_open == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  (*sink)->Stop();
  EXPECT_EQ((*sink)->Stats().connections_open, 0u);
  char byte = 0;
  EXPECT_EQ(::recv(fd->get(), &byte, 1, 0), 0);
}

TEST(Sink, RejectsAnAddressOfAnotherHostWithItInTheMessage) {
  SinkOptions options;
  options.listen = *common::ParseHostPort("198.18.0.77:1", common::PortRule::kZeroAllowed);
  auto sink = Sink::Start(options);
  ASSERT_FALSE(sink);
  EXPECT_EQ(sink.error().code, Errc::kIo);
  EXPECT_NE(sink.error().message.find("198.18.0.77"), std::string::npos);
  EXPECT_NE(sink.error().message.find("EADDRNOTAVAIL"), std::string::npos)
      << sink.error().message;
}

TEST(Sink, ReportsAnAddressInUse) {
  auto first = Sink::Start({});
  ASSERT_TRUE(first) << first.error().message;
  SinkOptions options;
  options.listen.port = (*first)->endpoint().port;
  auto second = Sink::Start(options);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, Errc::kIo);
  EXPECT_NE(second.error().message.find("EADDRINUSE"), std::string::npos)
      << second.error().message;
}

}  // namespace
}  // namespace zcal::probes::sink_test

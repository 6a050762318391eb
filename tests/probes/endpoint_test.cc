#include "zcal/probes/endpoint.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include "zcal/probes/sink.h"

namespace zcal::probes {
namespace {

TEST(Endpoint, ParsesIpv4AndBracketedIpv6) {
  auto v4 = ParseEndpoint("10.0.0.2:7070");
  ASSERT_TRUE(v4) << v4.error().message;
  EXPECT_EQ(v4->host, "10.0.0.2");
  EXPECT_EQ(v4->port, 7070);
  auto v6 = ParseEndpoint("[::1]:1");
  ASSERT_TRUE(v6) << v6.error().message;
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(ToString(*v6), "[::1]:1");
  EXPECT_EQ(ToString(*v4), "10.0.0.2:7070");
}

TEST(Endpoint, RejectsWhatIsNotAddressColonPortWithTheText) {
  for (const char* bad : {"", "10.0.0.2", "10.0.0.2:", "10.0.0.2:0", "10.0.0.2:65536",
                          "10.0.0.2:x", "::1:80", "[::1]80", "host.example:80",
                          "300.1.1.1:80"}) {
    auto parsed = ParseEndpoint(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().code, Errc::kInvalidArgument);
    EXPECT_NE(parsed.error().message.find(std::string("\"") + bad + "\""), std::string::npos)
        << parsed.error().message;
  }
}

TEST(Endpoint, ConnectsWithNoDelayToASink) {
  auto sink = Sink::Start({});
  ASSERT_TRUE(sink) << sink.error().message;
  auto fd = ConnectTcp((*sink)->endpoint());
  ASSERT_TRUE(fd) << fd.error().message;
  ::close(*fd);
}

TEST(Endpoint, ConnectToAClosedPortSaysWhereAndWhat) {
  Endpoint closed;
  {
    auto sink = Sink::Start({});
    ASSERT_TRUE(sink) << sink.error().message;
    closed = (*sink)->endpoint();
  }
  auto fd = ConnectTcp(closed);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, Errc::kFailed);
  EXPECT_NE(fd.error().message.find(ToString(closed)), std::string::npos);
  EXPECT_NE(fd.error().message.find("ECONNREFUSED"), std::string::npos) << fd.error().message;
}

}  // namespace
}  // namespace zcal::probes

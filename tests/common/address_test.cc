#include "zcal/common/address.h"

#include <gtest/gtest.h>

namespace zcal::common::address_test {
namespace {

TEST(Address, ParsesIpv4AndBracketedIpv6) {
  const Result<HostPort> v4 = ParseHostPort("10.0.0.2:7070");
  ASSERT_TRUE(v4) << v4.error().message;
  EXPECT_EQ(ToString(v4->address), "10.0.0.2");
  EXPECT_EQ(v4->port, 7070);
  EXPECT_FALSE(v4->address.IsIpv6());
  const Result<HostPort> v6 = ParseHostPort("[::1]:9464");
  ASSERT_TRUE(v6) << v6.error().message;
  EXPECT_TRUE(v6->address.IsIpv6());
  EXPECT_TRUE(v6->address.IsLoopback());
  EXPECT_EQ(ToString(*v6), "[::1]:9464");
  EXPECT_EQ(ToString(*v4), "10.0.0.2:7070");
  // The canonical spelling.
  EXPECT_EQ(ToString(*ParseHostPort("[2001:DB8:0::0001]:1")), "[2001:db8::1]:1");
}

TEST(Address, PortZeroOnlyWhereAListenerAsksForIt) {
  EXPECT_FALSE(ParseHostPort("127.0.0.1:0"));
  const Result<HostPort> any = ParseHostPort("127.0.0.1:0", PortRule::kZeroAllowed);
  ASSERT_TRUE(any);
  EXPECT_EQ(any->port, 0);
  EXPECT_TRUE(ParseHostPort("[::]:0", PortRule::kZeroAllowed));
}

TEST(Address, RejectsWhatIsNotAddressColonPortWithTheText) {
  for (const char* bad : {"", "10.0.0.2", "10.0.0.2:", "10.0.0.2:65536",
                          "10.0.0.2:x", "10.0.0.2:-1", "::1:80", "[::1]80",
                          "[::1", "[10.0.0.1]:80", "host.example:80",
                          "300.1.1.1:80", "1.2.3:80"}) {
    const Result<HostPort> parsed = ParseHostPort(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().code, Errc::kInvalidArgument);
    EXPECT_NE(parsed.error().message.find(std::string("\"") + bad + "\""),
              std::string::npos)
        << parsed.error().message;
  }
}

TEST(Address, SocketAddressesRoundTrip) {
  for (const char* text : {"198.18.0.1:5201", "[fe80::1]:80", "[::ffff:1.2.3.4]:9"}) {
    const HostPort endpoint = *ParseHostPort(text);
    const SocketAddress address = ToSocketAddress(endpoint);
    const Result<HostPort> back = FromSocketAddress(address.get(), address.length);
    ASSERT_TRUE(back) << text;
    if (std::string(text).find("ffff") != std::string::npos) {
      // A v4-mapped peer of a dual-stack socket is an IPv4 peer.
      EXPECT_EQ(ToString(*back), "1.2.3.4:9");
    } else {
      EXPECT_EQ(*back, endpoint) << text;
    }
  }
}

TEST(Address, PrefixesContainTheirAddresses) {
  const IpPrefix bench = *ParsePrefix("198.18.0.0/15");
  EXPECT_TRUE(bench.Contains(*ParseIpAddress("198.18.0.1")));
  EXPECT_TRUE(bench.Contains(*ParseIpAddress("198.19.255.255")));
  EXPECT_FALSE(bench.Contains(*ParseIpAddress("198.20.0.0")));
  EXPECT_FALSE(bench.Contains(*ParseIpAddress("::1")));
  EXPECT_EQ(ToString(bench), "198.18.0.0/15");
  const IpPrefix host = *ParsePrefix("10.1.2.3");
  EXPECT_EQ(host.length, 32);
  EXPECT_TRUE(host.Contains(*ParseIpAddress("10.1.2.3")));
  EXPECT_FALSE(host.Contains(*ParseIpAddress("10.1.2.4")));
  EXPECT_TRUE(ParsePrefix("0.0.0.0/0")->Contains(*ParseIpAddress("8.8.8.8")));
  const IpPrefix v6 = *ParsePrefix("2001:db8::/32");
  EXPECT_TRUE(v6.Contains(*ParseIpAddress("2001:db8:ffff::1")));
  EXPECT_FALSE(v6.Contains(*ParseIpAddress("2001:db9::1")));
  EXPECT_EQ(ParsePrefix("::1")->length, 128);
}

TEST(Address, RejectsBadPrefixesSayingWhatToWrite) {
  for (const char* bad : {"10.0.0.0/33", "10.0.0.0/", "10.0.0.0/x", "::/129",
                          "name/8", "/8"}) {
    EXPECT_FALSE(ParsePrefix(bad)) << bad;
  }
  const Result<IpPrefix> host_bits = ParsePrefix("10.0.0.1/8");
  ASSERT_FALSE(host_bits);
  EXPECT_NE(host_bits.error().message.find("10.0.0.0/8"), std::string::npos)
      << host_bits.error().message;
}

}  // namespace
}  // namespace zcal::common::address_test

// Peer discovery: the peers.dns name's syntax, the merge of static and DNS
// peers (duplicates, own addresses, order), real lookups through the host's
// resolver, and the egress interface on loopback and inside private network
// namespaces that the test creates (and that vanish with their process).
#include "zcal/agent/peers/peer_discovery.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"
#include "zcal/probes/host/host_facts.h"

namespace zcal::agent::peer_discovery_test {
namespace {

using probes::testing::InPrivateNetwork;

common::HostPort Endpoint(const std::string& text) {
  auto endpoint = common::ParseHostPort(text);
  EXPECT_TRUE(endpoint) << text;
  return endpoint ? *endpoint : common::HostPort{};
}

common::IpAddress Address(const std::string& text) {
  auto address = common::ParseIpAddress(text);
  EXPECT_TRUE(address) << text;
  return address ? *address : common::IpAddress{};
}

std::vector<std::string> Spelled(const std::vector<common::HostPort>& peers) {
  std::vector<std::string> out;
  for (const auto& peer : peers) out.push_back(common::ToString(peer));
  return out;
}

// One line that the parent can check: the interface's name, or the error
// class and message.
std::string Describe(const Result<std::string>& egress) {
  if (egress) return "interface " + *egress;
  return std::string(egress.error().code == Errc::kNotFound ? "not_found: " : "other: ") +
         egress.error().message;
}

TEST(PeerDiscovery, StaticPeersAreDeduplicatedSortedAndOwnAddressesExcluded) {
  std::vector<common::HostPort> peers = {
      Endpoint("[2001:db8::1]:7070"),   Endpoint("198.18.0.3:7070"),
      Endpoint("198.18.0.1:7071"),      Endpoint("198.18.0.1:7070"),
      Endpoint("198.18.0.1:7070"),      Endpoint("[::ffff:198.18.0.3]:7070"),
      Endpoint("198.18.0.9:7070"),      Endpoint("[::ffff:198.18.0.9]:7071"),
      Endpoint("[2001:db8::2]:7070"),
  };
  const std::vector<common::IpAddress> own = {Address("198.18.0.9"), Address("2001:db8::2")};
  const std::vector<std::string> expected = {"198.18.0.1:7070", "198.18.0.1:7071",
                                             "198.18.0.3:7070", "[2001:db8::1]:7070"};

  const Discovery discovery = DiscoverPeers(peers, DnsPeerName{}, own);
  EXPECT_EQ(Spelled(discovery.peers), expected);
  EXPECT_EQ(discovery.own_excluded, 3U) << "two endpoints of 198.18.0.9, one of 2001:db8::2";
  EXPECT_EQ(discovery.dns_failure, DnsFailure::kNone);
  EXPECT_TRUE(discovery.dns_error.empty());

  std::reverse(peers.begin(), peers.end());
  EXPECT_EQ(Spelled(DiscoverPeers(peers, DnsPeerName{}, own).peers), expected)
      << "the order does not depend on the configuration's";

  // An own address given in its IPv4-mapped spelling excludes the IPv4 peer.
  const Discovery mapped = DiscoverPeers(peers, DnsPeerName{}, {Address("::ffff:198.18.0.1")});
  EXPECT_EQ(Spelled(mapped.peers),
            (std::vector<std::string>{"198.18.0.3:7070", "198.18.0.9:7070", "198.18.0.9:7071",
                                      "[2001:db8::1]:7070", "[2001:db8::2]:7070"}));
  EXPECT_EQ(mapped.own_excluded, 2U);

  EXPECT_TRUE(DiscoverPeers({}, DnsPeerName{}, own).peers.empty());
}

TEST(PeerDiscovery, ParsesDnsNamesWithAPort) {
  const std::string label63(63, 'a');
  // 4 labels of 63 bytes and 3 dots = 255; trim to exactly 253.
  std::string name253 = label63 + "." + label63 + "." + label63 + "." + label63;
  name253.resize(253);
  const struct {
    std::string text;
    DnsPeerName expected;
  } cases[] = {
      {"zcal-agents.zcal.svc.cluster.local:7070", {"zcal-agents.zcal.svc.cluster.local", 7070}},
      {"localhost:1", {"localhost", 1}},
      {"_sink.Example-1.test:65535", {"_sink.Example-1.test", 65535}},
      {"absolute.example.:7070", {"absolute.example.", 7070}},
      {label63 + ".test:7070", {label63 + ".test", 7070}},
      {name253 + ":7070", {name253, 7070}},
      {name253 + ".:7070", {name253 + ".", 7070}},
  };
  for (const auto& c : cases) {
    auto parsed = ParseDnsPeerName(c.text);
    ASSERT_TRUE(parsed) << c.text << ": " << parsed.error().message;
    EXPECT_EQ(*parsed, c.expected) << c.text;
  }
}

TEST(PeerDiscovery, RejectsDnsNamesSayingWhatIsWrongAndWhatIsExpected) {
  const std::string label64(64, 'b');
  const std::string name254 = std::string(63, 'a') + "." + std::string(63, 'a') + "." +
                              std::string(63, 'a') + "." + std::string(62, 'a');
  ASSERT_EQ(name254.size(), 254U);
  const struct {
    std::string text;
    std::string why;
  } cases[] = {
      {"10.0.0.1:7070", "is a numeric address: list it under peers.static"},
      {"[::1]:7070", "is a numeric address: list it under peers.static"},
      {"[2001:db8::1]:7070", "is a numeric address"},
      {"fe80::1:7070", "is a numeric address"},
      {"::1", "is a numeric address"},
      {"10.0.0.1", "is a numeric address: list it under peers.static as ADDRESS:PORT"},
      {"127.1:7070", "is a numeric address"},       // inet_aton's short form
      {"2130706433:7070", "is a numeric address"},  // and its single number
      {"0x7f000001:7070", "is a numeric address"},
      {":7070", "the name is empty"},
      {"zcal.svc", "has no :PORT"},
      {"", "has no :PORT"},
      {"zcal svc:7070", "the name holds \" \""},
      {"zcal/svc:7070", "the name holds \"/\""},
      {"zcal.svc:7070:7071", "the name holds \":\""},
      {"a..b:7070", "empty label"},
      {".a:7070", "empty label"},
      {".:7070", "empty label"},
      {label64 + ".test:7070", "has 64 bytes, more than 63"},
      {name254 + ":7070", "the name has 254 bytes, more than 253"},
      {"zcal.svc:0", "the port must be a number from 1 to 65535"},
      {"zcal.svc:65536", "the port must be a number from 1 to 65535"},
      {"zcal.svc:http", "the port must be a number from 1 to 65535"},
      {"zcal.svc:", "the port must be a number from 1 to 65535"},
      {"zcal.svc:-1", "the port must be a number from 1 to 65535"},
      {"zcal.svc:+1", "the port must be a number from 1 to 65535"},
      {"zcal.svc:70x", "the port must be a number from 1 to 65535"},
  };
  for (const auto& c : cases) {
    auto parsed = ParseDnsPeerName(c.text);
    ASSERT_FALSE(parsed) << c.text << " was accepted";
    EXPECT_EQ(parsed.error().code, Errc::kInvalidArgument) << c.text;
    const std::string& message = parsed.error().message;
    EXPECT_NE(message.find(c.why), std::string::npos) << c.text << ": " << message;
    EXPECT_NE(message.find("\"" + c.text + "\""), std::string::npos) << message;
    EXPECT_NE(message.find("expected NAME:PORT"), std::string::npos) << message;
  }
}

TEST(PeerDiscovery, NamesFailuresWithMetricLabels) {
  EXPECT_EQ(DnsFailureName(DnsFailure::kNone), "");
  EXPECT_EQ(DnsFailureName(DnsFailure::kNxDomain), "nxdomain");
  EXPECT_EQ(DnsFailureName(DnsFailure::kNoAnswer), "no_answer");
  EXPECT_EQ(DnsFailureName(DnsFailure::kTemporary), "temporary");
  EXPECT_EQ(DnsFailureName(DnsFailure::kFailed), "failed");
}

TEST(PeerDiscovery, ResolvesLocalhostToLoopbackAndExcludesItAsOwn) {
  const DnsPeerName dns{"localhost", 7070};
  const Discovery found = DiscoverPeers({}, dns, {});
  ASSERT_EQ(found.dns_failure, DnsFailure::kNone) << found.dns_error;
  EXPECT_TRUE(found.dns_error.empty());
  ASSERT_FALSE(found.peers.empty());
  std::vector<common::IpAddress> addresses;
  for (const auto& peer : found.peers) {
    EXPECT_TRUE(peer.address.IsLoopback()) << common::ToString(peer);
    EXPECT_EQ(peer.port, 7070);
    addresses.push_back(peer.address);
  }
  const bool has_v4 = std::find(addresses.begin(), addresses.end(), Address("127.0.0.1")) !=
                      addresses.end();
  const bool has_v6 =
      std::find(addresses.begin(), addresses.end(), Address("::1")) != addresses.end();
  EXPECT_TRUE(has_v4 || has_v6) << ::testing::PrintToString(Spelled(found.peers));
  // One entry per address, although getaddrinfo may list one per source
  // (/etc/hosts can name localhost twice).
  std::vector<std::string> unique = Spelled(found.peers);
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  EXPECT_EQ(unique, Spelled(found.peers));

  // A static peer that DNS also names appears once.
  const Discovery merged = DiscoverPeers({found.peers.front()}, dns, {});
  EXPECT_EQ(Spelled(merged.peers), Spelled(found.peers));

  const common::HostPort other = Endpoint("198.18.0.1:7070");
  const Discovery own = DiscoverPeers({other}, dns, addresses);
  EXPECT_EQ(own.dns_failure, DnsFailure::kNone);
  EXPECT_EQ(Spelled(own.peers), (std::vector<std::string>{"198.18.0.1:7070"}));
  EXPECT_EQ(own.own_excluded, found.peers.size());
}

TEST(PeerDiscovery, AnUnknownNameLeavesTheStaticPeersAndSaysWhy) {
  // .invalid is reserved (RFC 6761): it never resolves. Without an outside
  // resolver the lookup may also fail for now; both leave the static peers.
  const std::vector<common::HostPort> statics = {Endpoint("198.18.0.2:7070")};
  const Discovery discovery =
      DiscoverPeers(statics, DnsPeerName{"zcal-peers.invalid", 7070}, {});
  EXPECT_TRUE(discovery.dns_failure == DnsFailure::kNxDomain ||
              discovery.dns_failure == DnsFailure::kTemporary)
      << DnsFailureName(discovery.dns_failure) << ": " << discovery.dns_error;
  EXPECT_EQ(discovery.dns_error.rfind("peers.dns zcal-peers.invalid:7070: ", 0), 0U)
      << discovery.dns_error;
  EXPECT_GT(discovery.dns_error.size(), std::string("peers.dns zcal-peers.invalid:7070: ").size());
  EXPECT_EQ(Spelled(discovery.peers), Spelled(statics));
  EXPECT_EQ(discovery.own_excluded, 0U);
}

TEST(PeerDiscovery, OwnAddressesIncludeLoopbackOnceEach) {
  auto own = OwnAddresses();
  ASSERT_TRUE(own) << own.error().message;
  EXPECT_NE(std::find(own->begin(), own->end(), Address("127.0.0.1")), own->end());
  for (std::size_t i = 0; i < own->size(); ++i) {
    for (std::size_t j = i + 1; j < own->size(); ++j) {
      EXPECT_FALSE((*own)[i] == (*own)[j]) << common::ToString((*own)[i]) << " twice";
    }
  }
}

TEST(EgressInterface, NoRouteIsNotFound) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a network namespace";
  const std::string text = InPrivateNetwork("", [] {
    auto own = OwnAddresses();
    return Describe(probes::EgressInterface(*common::ParseIpAddress("198.18.0.1"))) + "\n" +
           (own ? "own " + std::to_string(own->size()) : "own: " + own.error().message);
  });
  if (text.starts_with("skip: ")) GTEST_SKIP() << text;
  EXPECT_NE(text.find("not_found: no route to 198.18.0.1 from this host (RTM_GETROUTE: ENETUNREACH"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ip route get 198.18.0.1"), std::string::npos) << text;
  EXPECT_NE(text.find("\nown 0"), std::string::npos) << "a new namespace holds no address: "
                                                      << text;
}

TEST(EgressInterface, NamesTheInterfaceThatHoldsTheRoute) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a network namespace";
  // A dummy interface is simplest; kernels without the dummy module get a
  // veth pair instead.
  const std::string setup =
      "{ ip link add zd0 type dummy || "
      "ip link add zd0 type veth peer name zd1 && ip link set zd1 up; } && "
      "ip addr add 198.18.5.1/24 dev zd0 && ip link set zd0 up";
  const std::string text = InPrivateNetwork(setup, [] {
    std::string out = Describe(probes::EgressInterface(*common::ParseIpAddress("198.18.5.9"))) + "\n" +
                      Describe(probes::EgressInterface(*common::ParseIpAddress("198.18.7.1"))) + "\n";
    auto own = OwnAddresses();
    if (!own) return out + "own: " + own.error().message;
    for (const auto& address : *own) {
      if (!address.IsIpv6()) out += "own " + common::ToString(address) + "\n";
    }
    const Discovery discovery = DiscoverPeers(
        {*common::ParseHostPort("198.18.5.1:7070"), *common::ParseHostPort("198.18.5.9:7070")},
        DnsPeerName{}, *own);
    for (const auto& peer : discovery.peers) out += "peer " + common::ToString(peer) + "\n";
    return out + "excluded " + std::to_string(discovery.own_excluded) + "\n";
  });
  if (text.starts_with("skip: ")) GTEST_SKIP() << text;
  EXPECT_EQ(text,
            "interface zd0\n"
            "not_found: no route to 198.18.7.1 from this host (RTM_GETROUTE: ENETUNREACH (Network "
            "is unreachable)); check `ip route get 198.18.7.1`\n"
            "own 198.18.5.1\n"
            "peer 198.18.5.9:7070\n"
            "excluded 1\n");
}

}  // namespace
}  // namespace zcal::agent::peer_discovery_test

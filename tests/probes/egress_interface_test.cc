// The egress interface as the kernel routes, in network namespaces of the
// test's own: two interfaces and a policy rule (ip rule) that sends some
// traffic through the one that /proc/net/route (the main table) does not
// name.
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "child_process.h"
#include "zcal/probes/host/host_facts.h"

namespace zcal::probes::egress_interface_test {
namespace {

using testing::InPrivateNetwork;

std::string Describe(const Result<std::string>& result) {
  if (result) return "interface " + *result;
  return (result.error().code == Errc::kNotFound ? "not_found: " : "error: ") +
         result.error().message;
}

common::IpAddress Address(const char* text) { return *common::ParseIpAddress(text); }

// The interface of the main table's default route in /proc/net/route: what
// a reader of that file would name.
std::string MainTableDefault() {
  std::ifstream route("/proc/net/route");
  std::string line;
  std::getline(route, line);  // header
  while (std::getline(route, line)) {
    std::istringstream fields(line);
    std::string name, destination, gateway, flags, refcnt, use, metric, mask;
    fields >> name >> destination >> gateway >> flags >> refcnt >> use >> metric >> mask;
    if (destination == "00000000" && mask == "00000000") return name;
  }
  return "";
}

// Two interfaces (dummy, or veth where the kernel lacks the dummy module):
// the main table's default route leaves through zcal-a, table 100's
// through zcal-b. Addresses in 198.18.0.0/15 only.
const std::string kTwoInterfaces =
    "ip link set lo up && "
    "for n in a b; do "
    "  { ip link add zcal-$n type dummy || "
    "    { ip link add zcal-$n type veth peer name zcal-$n-peer && ip link set zcal-$n-peer up; }; } "
    "  && ip link set zcal-$n up || exit 1; "
    "done && "
    "ip addr add 198.18.1.1/24 dev zcal-a && ip addr add 198.18.2.1/24 dev zcal-b && "
    "ip route add default via 198.18.1.254 dev zcal-a && "
    "ip route add default via 198.18.2.254 dev zcal-b table 100";

TEST(EgressInterface, APolicyRuleSendsAPeerThroughTheInterfaceItsTableNames) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a network namespace";
  const std::string text =
      InPrivateNetwork(kTwoInterfaces + " && ip rule add to 198.19.0.0/16 lookup 100 priority 100",
                       [] {
                         return "main " + MainTableDefault() + "\n" +
                                Describe(EgressInterface(Address("198.19.5.5"))) + "\n" +
                                Describe(EgressInterface(Address("198.18.9.9"))) + "\n" +
                                Describe(EgressInterface(Address("::ffff:198.19.5.5"))) + "\n" +
                                Describe(DefaultRouteInterface()) + "\n";
                       });
  if (text.starts_with("skip: ")) GTEST_SKIP() << text;
  EXPECT_EQ(text,
            "main zcal-a\n"           // what /proc/net/route would answer for every peer
            "interface zcal-b\n"      // the rule's table
            "interface zcal-a\n"      // no rule: the main table
            "interface zcal-b\n"      // IPv4-mapped: routed as IPv4
            "interface zcal-a\n");    // the default route
}

TEST(EgressInterface, TheDefaultRouteIsWhereTheRulesSendOtherHostsTraffic) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a network namespace";
  // Every destination looks up table 100 first: the main table's default
  // (which /proc/net/route shows) is never used.
  const std::string text = InPrivateNetwork(kTwoInterfaces + " && ip rule add lookup 100 priority 100",
                                            [] {
                                              return "main " + MainTableDefault() + "\n" +
                                                     Describe(DefaultRouteInterface()) + "\n";
                                            });
  if (text.starts_with("skip: ")) GTEST_SKIP() << text;
  EXPECT_EQ(text, "main zcal-a\ninterface zcal-b\n");
}

TEST(EgressInterface, NoRouteIsNotFoundNamingTheAddressAndTheCheck) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a network namespace";
  const std::string text = InPrivateNetwork(
      "ip link set lo up && ip route add unreachable 198.18.9.0/24", [] {
        return Describe(EgressInterface(Address("198.18.7.1"))) + "\n" +
               Describe(EgressInterface(Address("198.18.9.1"))) + "\n" +
               Describe(EgressInterface(Address("127.0.0.1"))) + "\n" +
               Describe(DefaultRouteInterface()) + "\n";
      });
  if (text.starts_with("skip: ")) GTEST_SKIP() << text;
  EXPECT_NE(text.find("not_found: no route to 198.18.7.1 from this host (RTM_GETROUTE: "
                      "ENETUNREACH"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("check `ip route get 198.18.7.1`"), std::string::npos) << text;
  EXPECT_NE(text.find("not_found: no route to 198.18.9.1 from this host (RTM_GETROUTE: "
                      "EHOSTUNREACH"),
            std::string::npos)
      << "an unreachable route: " << text;
  EXPECT_NE(text.find("interface lo\n"), std::string::npos) << "a local address: " << text;
  EXPECT_NE(text.find("not_found: no default route: IPv4: no route to 203.0.113.1"),
            std::string::npos)
      << text;
}

TEST(EgressInterface, HostFactsNotePeersWithoutRoute) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a network namespace";
  const std::string text = InPrivateNetwork("ip link set lo up", [] {
    const PathFacts facts = CollectPathFacts({"/", "", *ParseTarget("198.18.7.1:7070")});
    std::string out = "name " + facts.interface.name + "\n";
    for (const std::string& note : facts.host.notes) out += note + "\n";
    return out;
  });
  if (text.starts_with("skip: ")) GTEST_SKIP() << text;
  EXPECT_TRUE(text.starts_with("name \n")) << text;
  EXPECT_NE(text.find("egress interface of 198.18.7.1:7070 unknown: no route to 198.18.7.1"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace zcal::probes::egress_interface_test

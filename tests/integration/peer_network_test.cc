// The network the fleet and fault tests stand on (netns.h), checked with
// the real programs: dnsmasq answers one name with every member's address
// in every member, an agent in one member serves its sink to a calibration
// from another across the bridge, and everything is gone afterwards.
#include <signal.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "netns.h"
#include "peer_fleet.h"
#include "test_util.h"

namespace zcal::agent::testing::peer_network_test {
namespace {

using std::chrono::milliseconds;

class PeerNetwork : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = NetnsUnavailable(); !why.empty()) GTEST_SKIP() << why;
    SweepLeftoverNamespaces();
  }
};

std::vector<std::string> Records(const std::string& name, int members) {
  std::vector<std::string> records;
  for (int i = 1; i <= members; ++i) records.push_back(name + "," + BridgedNetwork::Address(i));
  return records;
}

TEST_F(PeerNetwork, DnsmasqAnswersEveryAddressOfTheNameInEveryMember) {
  TempDir dir;
  std::vector<std::string> created;
  {
    BridgedNetwork net;
    ASSERT_EQ(net.Build(5), "");
    std::string error;
    auto dns = StartDnsmasq(
        net.hub(),
        DnsmasqArgv(BridgedNetwork::kDnsAddress, "zcal.test", Records("fleet.zcal.test", 5),
                    {"empty.zcal.test"}),
        dir.path() / "dnsmasq.log", &error);
    ASSERT_TRUE(dns) << error;
    for (int i = 1; i <= net.size(); ++i) {
      const Netns& member = net.member(i);
      created.push_back(member.name());
      member.WriteResolvConf(std::string("nameserver ") + BridgedNetwork::kDnsAddress +
                             "\noptions timeout:1 attempts:1\n");
      const CommandResult found =
          RunCommand(member.Exec({"/usr/bin/getent", "ahostsv4", "fleet.zcal.test"}));
      ASSERT_EQ(found.status, 0) << member.name() << "\n" << dns->Log();
      for (int j = 1; j <= net.size(); ++j) {
        EXPECT_NE(found.out.find(BridgedNetwork::Address(j) + " "), std::string::npos)
            << member.name() << " lacks " << BridgedNetwork::Address(j) << ":\n" << found.out;
      }
      // getent exits 2 for a name without an address: NXDOMAIN and a name
      // with only a TXT record alike.
      for (const char* name : {"missing.zcal.test", "empty.zcal.test"}) {
        EXPECT_EQ(RunCommand(member.Exec({"/usr/bin/getent", "ahosts", name})).status, 2)
            << name;
      }
    }
    created.push_back(net.hub().name());
    EXPECT_NE(dns->Log().find("query[A] fleet.zcal.test"), std::string::npos) << dns->Log();
  }
  for (const std::string& name : created) {
    EXPECT_FALSE(std::filesystem::exists("/run/netns/" + name)) << name;
    EXPECT_FALSE(std::filesystem::exists("/etc/netns/" + name)) << name;
  }
}

TEST_F(PeerNetwork, AnAgentServesItsSinkToACalibrationFromAnotherMember) {
  TempDir dir;
  const std::filesystem::path keys = MakeKeyFile(dir.path());
  BridgedNetwork net;
  ASSERT_EQ(net.Build(2), "");
  PeerAgentSettings settings;
  settings.segment = UniqueSegment();
  settings.state = dir.path() / "state.json";
  settings.at_startup = false;
  settings.sink_listen = BridgedNetwork::Address(2) + ":" + std::to_string(kSinkPort);
  settings.key_file = keys.string();
  NsAgent agent(net.member(2), settings, dir.path(), "agent");
  std::string error;
  ASSERT_TRUE(agent.Started(milliseconds(20'000), &error)) << error;

  const CommandResult calibrate = RunCommand(net.member(1).Exec(
      {ZcalBinary(), "calibrate", "--path", settings.sink_listen, "--key-file", keys.string(),
       "--budget", "1", "--methods", "copy,msg_zerocopy", "--max", "64K", "--json"}));
  ASSERT_EQ(calibrate.status, 0) << calibrate.err << agent.Log();
  const auto doc = nlohmann::json::parse(calibrate.out);
  // Delivered within this host, the veth path's zerocopy sends are copied.
  const auto& zerocopy = doc.at("paths").at(settings.sink_listen).at("methods").at("msg_zerocopy");
  EXPECT_EQ(zerocopy.at("verdict"), "never") << zerocopy.dump();
  EXPECT_EQ(zerocopy.at("reason"), "kernel_copied") << zerocopy.dump();

  const auto metrics = agent.Scrape();
  ASSERT_TRUE(metrics) << agent.Log();
  EXPECT_EQ(SumOf(*metrics, "zcal_sink_sessions_total", {{"outcome", "served"}}), 1.0);
  EXPECT_EQ(SumOf(*metrics, "zcal_sink_sessions_open"), 0.0);
  EXPECT_GT(SumOf(*metrics, "zcal_sink_bytes_received_total").value_or(0), 0.0);

  agent.process().Signal(SIGTERM);
  EXPECT_EQ(agent.process().WaitExit(milliseconds(10'000)), 0) << agent.Log();
}

}  // namespace
}  // namespace zcal::agent::testing::peer_network_test

// The fleet: five hosts, each a network namespace on one bridge
// running the real `zcal agent` with its own segment, state and metrics,
// finding each other through one DNS name that a real dnsmasq answers with
// five A records. Within a bounded time every agent publishes at least K
// peer entries; no sink is ever seen serving two sessions; the veth paths
// are kernel_copied and never the source of the host default.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "netns.h"
#include "peer_fleet.h"
#include "test_util.h"

namespace zcal::agent::testing::fleet_test {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

constexpr int kHosts = 5;
constexpr std::size_t kPerCalibration = 2;  // K
constexpr const char* kName = "fleet.zcal.test";

// Scrapes every agent every 100 ms on a thread of its own, and keeps the
// most sessions each sink was seen serving at once.
class Sampler {
 public:
  struct Seen {
    int scrapes = 0;
    int unreachable = 0;
    double max_open = 0;
  };
  explicit Sampler(const std::vector<std::unique_ptr<NsAgent>>& agents)
      : agents_(agents), seen_(agents.size()), thread_([this] { Loop(); }) {}
  ~Sampler() { Stop(); }
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  std::vector<Seen> Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return seen_;
  }

 private:
  void Loop() {
    while (!stop_) {
      for (std::size_t i = 0; i < agents_.size(); ++i) {
        const auto metrics = agents_[i]->Scrape();
        Seen& seen = seen_[i];
        if (!metrics) {
          ++seen.unreachable;
          continue;
        }
        ++seen.scrapes;
        seen.max_open =
            std::max(seen.max_open, SumOf(*metrics, "zcal_sink_sessions_open").value_or(0));
      }
      std::this_thread::sleep_for(100ms);
    }
  }

  const std::vector<std::unique_ptr<NsAgent>>& agents_;
  std::vector<Seen> seen_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string Peer(int i) { return BridgedNetwork::Address(i) + ":" + std::to_string(kSinkPort); }

TEST(PeerFleet, EveryAgentPublishesKPeerEntriesAndNoSinkServesTwoSessionsAtOnce) {
  if (const std::string why = NetnsUnavailable(); !why.empty()) GTEST_SKIP() << why;
  SweepLeftoverNamespaces();
  const auto started = std::chrono::steady_clock::now();
  TempDir dir;
  const std::filesystem::path keys = MakeKeyFile(dir.path());
  BridgedNetwork net;
  ASSERT_EQ(net.Build(kHosts), "");
  std::vector<std::string> records;
  for (int i = 1; i <= kHosts; ++i) {
    records.push_back(std::string(kName) + "," + BridgedNetwork::Address(i));
    net.member(i).WriteResolvConf(std::string("nameserver ") + BridgedNetwork::kDnsAddress +
                                  "\noptions timeout:1 attempts:2\n");
  }
  std::string error;
  auto dns = StartDnsmasq(net.hub(),
                          DnsmasqArgv(BridgedNetwork::kDnsAddress, "zcal.test", records, {}),
                          dir.path() / "dnsmasq.log", &error);
  ASSERT_TRUE(dns) << error;

  std::vector<std::unique_ptr<NsAgent>> agents;
  for (int i = 1; i <= kHosts; ++i) {
    PeerAgentSettings s;
    s.segment = UniqueSegment();
    s.state = dir.path() / ("state-" + std::to_string(i) + ".json");
    s.sink_listen = Peer(i);
    s.key_file = keys.string();
    s.peers_dns = std::string(kName) + ":" + std::to_string(kSinkPort);
    s.per_calibration = static_cast<int>(kPerCalibration);
    s.keep = 4;
    // Short rounds, spread by the jitter so that agents rarely probe in step.
    s.interval = "3s";
    s.jitter = "1s";
    s.budget_seconds = 1.5;
    agents.push_back(std::make_unique<NsAgent>(net.member(i), s, dir.path(),
                                               "agent-" + std::to_string(i)));
  }
  for (auto& agent : agents) ASSERT_TRUE(agent->Started(20s, &error)) << error;

  Sampler sampler(agents);
  std::vector<std::vector<std::string>> peers(kHosts);
  const bool all_published = WaitFor(
      [&] {
        bool all = true;
        for (int i = 0; i < kHosts; ++i) {
          std::string show_error;
          if (auto show = agents[i]->Show(&show_error)) peers[i] = PeerAddresses(*show);
          all = all && peers[i].size() >= kPerCalibration;
        }
        return all;
      },
      60s);
  const std::vector<Sampler::Seen> seen = sampler.Stop();
  for (int i = 0; i < kHosts; ++i) {
    EXPECT_GE(peers[i].size(), kPerCalibration) << "agent " << i + 1 << "\n" << agents[i]->Log();
  }
  ASSERT_TRUE(all_published) << dns->Log();

  double served_total = 0, success_total = 0, busy_total = 0;
  for (int i = 1; i <= kHosts; ++i) {
    NsAgent& agent = *agents[i - 1];
    SCOPED_TRACE("agent " + std::to_string(i) + " in " + net.member(i).name());
    EXPECT_LE(seen[i - 1].max_open, 1.0);
    EXPECT_GT(seen[i - 1].scrapes, 0);
    EXPECT_EQ(seen[i - 1].unreachable, 0);

    const auto show = agent.Show(&error);
    ASSERT_TRUE(show) << error;
    for (const nlohmann::json& e : PeerEntries(*show)) {
      const std::string address = e.at("address");
      EXPECT_NE(address, BridgedNetwork::Address(i)) << "its own address";
      EXPECT_TRUE(address.starts_with("198.18.7.")) << address;
      EXPECT_EQ(e.at("prefix_len"), 32) << e.dump();
      EXPECT_EQ(e.at("verdict"), "never") << e.dump();
      EXPECT_EQ(e.at("reason"), "kernel_copied") << e.dump();
    }
    // Kernel-copied results stand for no NIC: neither the host default
    // (eth0 holds the default route) nor an interface entry comes from them.
    EXPECT_NE(show->at("host_default").at("source"), "peers") << show->dump(2);
    for (const nlohmann::json& e : show->at("entries")) {
      EXPECT_NE(e.at("scope"), "interface") << e.dump();
    }

    const auto metrics = agent.Scrape();
    ASSERT_TRUE(metrics) << agent.Log();
    EXPECT_EQ(SumOf(*metrics, "zcal_peers_discovered"), kHosts - 1);
    // The NIC the peers are reached through is described for the fleet's
    // classes (a veth: no driver, its MTU and no IOMMU group).
    EXPECT_EQ(SumOf(*metrics, "zcal_interface_info",
                    {{"path", "interface/eth0"}, {"interface", "eth0"}, {"mtu_bytes", "1500"},
                     {"iommu_group", ""}}),
              1.0);
    const double success =
        SumOf(*metrics, "zcal_peer_probes_total", {{"outcome", "success"}}).value_or(0);
    EXPECT_GE(success, static_cast<double>(kPerCalibration));
    // The veth paths were measured: their copied share is the kernel's.
    for (const std::string& address : peers[i - 1]) {
      const auto copied =
          SumOf(*metrics, "zcal_copied_ratio",
                {{"path", "peer/" + address + ":" + std::to_string(kSinkPort)},
                 {"method", "msg_zerocopy"}});
      ASSERT_TRUE(copied) << address;
      EXPECT_GE(*copied, 0.5) << address;
    }
    const double served =
        SumOf(*metrics, "zcal_sink_sessions_total", {{"outcome", "served"}}).value_or(0);
    const double busy =
        SumOf(*metrics, "zcal_peer_probes_total", {{"outcome", "busy"}}).value_or(0);
    std::printf("agent %d: %zu peer entries, %.0f probes succeeded, %.0f busy; its sink served "
                "%.0f, at most %.0f at once in %d scrapes\n",
                i, peers[i - 1].size(), success, busy, served, seen[i - 1].max_open,
                seen[i - 1].scrapes);
    served_total += served;
    success_total += success;
    busy_total += busy;
  }
  // Every probe that succeeded was a session some sink served: the sinks,
  // scraped after the probers, have served at least as many (an agent
  // counts its round's outcomes once the round is over).
  double served_after = 0;
  for (const auto& agent : agents) {
    const auto metrics = agent->Scrape();
    ASSERT_TRUE(metrics) << agent->Log();
    served_after +=
        SumOf(*metrics, "zcal_sink_sessions_total", {{"outcome", "served"}}).value_or(0);
  }
  EXPECT_GE(served_after, success_total);
  std::printf("fleet of %d: %.0f peer probes succeeded, %.0f answered busy, %.0f sessions "
              "served, in %.1f s\n",
              kHosts, success_total, busy_total, served_total,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());

  for (auto& agent : agents) agent->process().Signal(SIGTERM);
  for (auto& agent : agents) EXPECT_EQ(agent->process().WaitExit(10s), 0) << agent->Log();
}

}  // namespace
}  // namespace zcal::agent::testing::fleet_test

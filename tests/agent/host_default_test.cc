// The host-default rule against the fake sysfs trees of the host-facts
// tests: an estimate from the discard path only where the NIC's IOMMU does
// not translate; otherwise none, with the reason.
#include "zcal/agent/publish/host_default.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "zcal/agent/service/host_snapshot.h"
#include "zcal/probes/host/host_facts.h"
#include "zcal/agent/publish/results.h"
#include "zcal/testing/test_data.h"
#include "zcal/testing/path_ids.h"

namespace zcal::agent::host_default_test {
namespace {

using zcal::testing::ConfiguredPath;
using zcal::testing::PeerPath;

using calibrator::Method;
using calibrator::MethodResult;
using calibrator::Reason;
using calibrator::Verdict;

std::string FakeRoot() { return (zcal::testing::TestData() / "sysfs" / "pci-host").string(); }

MethodState Published(Verdict verdict, std::optional<std::uint64_t> threshold,
                      Reason reason = Reason::kNone, double confidence = 0.8) {
  MethodState s;
  s.published.verdict = verdict;
  s.published.threshold_bytes = threshold;
  s.published.reason = reason;
  s.published.confidence = confidence;
  s.measured_at_ns = 7;
  return s;
}

// A state with loopback (kernel-copied) and discard (a real crossover).
AgentState LoopbackAndDiscard() {
  AgentState state;
  state.paths[ConfiguredPath("loopback")][Method::kMsgZerocopy] =
      Published(Verdict::kNever, std::nullopt, Reason::kKernelCopied);
  state.paths[ConfiguredPath("discard")][Method::kMsgZerocopy] =
      Published(Verdict::kThreshold, 24576);
  state.paths[ConfiguredPath("discard")][Method::kUringSendZcFixed] =
      Published(Verdict::kThreshold, 8192);
  state.paths[ConfiguredPath("discard")][Method::kUringSendZc] =
      Published(Verdict::kInconclusive, std::nullopt, Reason::kNoisy);
  return state;
}

// The snapshot of the fake host with the host-default NIC named.
HostInfo On(const std::string& interface, Config& config) {
  config.host_root = FakeRoot();
  config.host_default.interface = interface;
  return CollectHostSnapshot(config);
}

TEST(HostDefault, TheDefaultRouteNamesTheNic) {
  Config config;
  const HostInfo host = On("", config);  // 0.0.0.0/0 via eth0
  ASSERT_TRUE(host.host_default_nic.facts) << host.host_default_nic.why_unknown;
  EXPECT_EQ(host.host_default_nic.facts->name, "eth0");
}

// A NIC that only peers leave by (eth1, not the default route's) is
// described under "interface/eth1", for the fleet's per-interface classes;
// one no kept peer uses any more goes, and an unknown name gets nothing.
TEST(HostDefault, ThePeersNicsAreDescribedToo) {
  Config config;
  HostInfo host = On("", config);
  const auto peer_nics = [&] {
    std::vector<PathInterface> found;
    for (const PathInterface& i : host.interfaces) {
      if (i.role == InterfaceRole::kPeers) found.push_back(i);
    }
    return found;
  };
  EXPECT_TRUE(peer_nics().empty());
  EXPECT_TRUE(DescribePeerInterfaces(host, config, {"eth1", "eth9", ""}));
  ASSERT_EQ(peer_nics().size(), 1U);
  EXPECT_EQ(peer_nics()[0].path, "interface/eth1");
  EXPECT_EQ(peer_nics()[0].facts.name, "eth1");
  EXPECT_EQ(peer_nics()[0].facts.iommu_type, "DMA");
  EXPECT_EQ(peer_nics()[0].facts.speed_mbps, 25000);
  EXPECT_FALSE(DescribePeerInterfaces(host, config, {"eth1"}));  // unchanged
  EXPECT_TRUE(DescribePeerInterfaces(host, config, {"eth2"}));
  ASSERT_EQ(peer_nics().size(), 1U);
  EXPECT_EQ(peer_nics()[0].facts.name, "eth2");
  EXPECT_TRUE(DescribePeerInterfaces(host, config, {}));
  EXPECT_TRUE(peer_nics().empty());
  // The host default's own entry is not a peer NIC's and stays.
  EXPECT_TRUE(std::any_of(host.interfaces.begin(), host.interfaces.end(),
                          [](const PathInterface& i) {
                            return i.role == InterfaceRole::kHostDefault && i.path == "host_default";
                          }));
}

// An agent configured with peers only still keeps the host's facts: its
// fingerprint is what brings a calibration forward when the kernel, the
// CPU or the IOMMU change (it was 0 for such a configuration once).
TEST(HostDefault, APeersOnlyConfigurationKeepsTheHostsFingerprint) {
  Config config;
  config.paths.clear();
  const HostInfo host = On("", config);
  EXPECT_NE(host.facts.fingerprint, 0u);
  EXPECT_EQ(host.facts.fingerprint, probes::CollectHostFacts(FakeRoot()).fingerprint);
  EXPECT_FALSE(host.facts.kernel_release.empty());
  Config other;
  other.paths.clear();
  other.host_root = (zcal::testing::TestData() / "sysfs" / "userns-off").string();
  EXPECT_NE(CollectHostSnapshot(other).facts.fingerprint, host.facts.fingerprint)
      << "another host's facts, another fingerprint";
}

TEST(HostDefault, EstimatesFromDiscardWhereNoIommuTranslates) {
  for (const char* nic : {"eth3", "eth2"}) {  // virtio without group; identity
    Config config;
    const HostInfo host = On(nic, config);
    const HostDefaultChoice choice =
        ChooseHostDefault(LoopbackAndDiscard(), config, host.host_default_nic);
    EXPECT_EQ(choice.source, HostDefaultSource::kEstimated) << nic << ": " << choice.explanation;
    EXPECT_TRUE(choice.estimated);
    // Usable results only: the inconclusive uring_send_zc is left out.
    ASSERT_EQ(choice.methods.size(), 2u) << nic;
    const MethodState& zc = choice.methods.at(Method::kMsgZerocopy);
    EXPECT_EQ(zc.published.threshold_bytes, 24576u);
    EXPECT_DOUBLE_EQ(*zc.published.confidence, 0.4) << "half the discard confidence";
    EXPECT_NE(choice.explanation.find(nic), std::string::npos) << choice.explanation;
  }
}

TEST(HostDefault, NoneWhereTheIommuTranslates) {
  for (const char* nic : {"eth0", "eth1"}) {  // DMA-FQ, DMA
    Config config;
    const HostInfo host = On(nic, config);
    const HostDefaultChoice choice =
        ChooseHostDefault(LoopbackAndDiscard(), config, host.host_default_nic);
    EXPECT_EQ(choice.source, HostDefaultSource::kIommuTranslates) << nic;
    EXPECT_TRUE(choice.methods.empty());
    EXPECT_NE(choice.explanation.find("translates"), std::string::npos) << choice.explanation;
    EXPECT_NE(choice.explanation.find("peer"), std::string::npos) << choice.explanation;
  }
}

TEST(HostDefault, NoneWhereTheIommuModeIsUnknown) {
  Config config;
  // eth4's group type cannot be read; eth9 does not exist; lo is virtual.
  for (const char* nic : {"eth4", "eth9", "lo"}) {
    const HostInfo host = On(nic, config);
    const HostDefaultChoice choice =
        ChooseHostDefault(LoopbackAndDiscard(), config, host.host_default_nic);
    EXPECT_EQ(choice.source, HostDefaultSource::kIommuUnknown) << nic << ": " << choice.explanation;
    EXPECT_TRUE(choice.methods.empty());
  }
}

TEST(HostDefault, PeerResultsReplaceTheEstimate) {
  Config config;
  const HostInfo host = On("eth0", config);  // translating: no estimate
  MethodStates peers;
  peers[Method::kMsgZerocopy] = Published(Verdict::kThreshold, 12288);
  peers[Method::kUringSendZc] = Published(Verdict::kNever, std::nullopt, Reason::kSlower);
  peers[Method::kUringSendZcFixed] =
      Published(Verdict::kNever, std::nullopt, Reason::kKernelCopied);
  const HostDefaultChoice choice =
      ChooseHostDefault(LoopbackAndDiscard(), config, host.host_default_nic, peers);
  EXPECT_EQ(choice.source, HostDefaultSource::kPeers);
  EXPECT_FALSE(choice.estimated);
  // A measured loss counts; a kernel-copied result never does.
  ASSERT_EQ(choice.methods.size(), 2u);
  EXPECT_EQ(choice.methods.at(Method::kMsgZerocopy).published.threshold_bytes, 12288u);
  EXPECT_DOUBLE_EQ(*choice.methods.at(Method::kMsgZerocopy).published.confidence, 0.8);
}

TEST(HostDefault, LoopbackAloneIsNeverTheSource) {
  AgentState state;
  state.paths[ConfiguredPath("loopback")][Method::kMsgZerocopy] =
      Published(Verdict::kThreshold, 4096);
  Config config;
  config.paths = {PathConfig{}};  // loopback only
  const HostInfo host = On("eth3", config);
  const HostDefaultChoice choice = ChooseHostDefault(state, config, host.host_default_nic);
  EXPECT_EQ(choice.source, HostDefaultSource::kNoPath);
  EXPECT_TRUE(choice.methods.empty());
}

TEST(HostDefault, TheConfigurationCanTurnItOffOrForbidTheEstimate) {
  Config config;
  const HostInfo host = On("eth3", config);
  config.host_default.estimate = false;
  EXPECT_EQ(ChooseHostDefault(LoopbackAndDiscard(), config, host.host_default_nic).source,
            HostDefaultSource::kNoPath);
  config.host_default.enabled = false;
  EXPECT_EQ(ChooseHostDefault(LoopbackAndDiscard(), config, host.host_default_nic).source,
            HostDefaultSource::kDisabled);
}

TEST(HostDefault, EntriesCarryTheEstimatedFlag) {
  Config config;
  const HostInfo host = On("eth3", config);
  const PublishedTable table = BuildEntries(LoopbackAndDiscard(), config, host.host_default_nic, 0);
  EXPECT_EQ(table.host_default.source, HostDefaultSource::kEstimated);
  std::size_t defaults = 0;
  for (const PublishedEntry& e : table.entries) {
    if (e.scope == ScopeKind::kHostDefault) {
      ++defaults;
      EXPECT_TRUE(e.estimated);
    } else {
      EXPECT_FALSE(e.estimated);
    }
  }
  EXPECT_EQ(defaults, 2u);
}

}  // namespace
}  // namespace zcal::agent::host_default_test

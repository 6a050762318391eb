#include "zcal/probes/host/host_facts.h"
#include "zcal/probes/host/host_facts_json.h"

#include <sys/utsname.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "scratch_dir.h"
#include "zcal/testing/test_data.h"

namespace zcal::probes::host_facts_test {
namespace {

namespace fs = std::filesystem;

std::string FakeRoot() {
  return (zcal::testing::TestData() / "sysfs" / "pci-host").string();
}

PathFacts Collect(const std::string& interface, const std::string& path = "loopback") {
  return CollectPathFacts({FakeRoot(), interface, *ParseTarget(path)});
}

bool NoteMentions(const PathFacts& facts, const std::string& text) {
  for (const std::string& note : facts.host.notes) {
    if (note.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(HostFacts, ReadsKernelCpuAndIommuFlags) {
  const HostFacts facts = Collect("eth0").host;
  EXPECT_EQ(facts.kernel_release, "6.1.0-27-amd64");
  EXPECT_EQ(facts.cpu_model, "AMD EPYC 7763 64-Core Processor");
  EXPECT_EQ(facts.iommu_cmdline,
            (std::vector<std::string>{"amd_iommu=on", "iommu.strict=1"}));
}

TEST(HostFacts, DescribesAPciNicInALazyDmaIommuGroup) {
  const PathFacts facts = Collect("eth0");
  const InterfaceFacts& i = facts.interface;
  EXPECT_EQ(i.name, "eth0");
  EXPECT_EQ(i.driver, "mlx5_core");
  EXPECT_EQ(i.pci_device, "0000:3b:00.0");
  EXPECT_EQ(i.speed_mbps, 100000);
  EXPECT_EQ(i.mtu, 9000u);
  EXPECT_EQ(i.iommu_group, "20");
  EXPECT_EQ(i.iommu_type, "DMA-FQ");
  // A fake tree has no live interface to ask ethtool about.
  EXPECT_FALSE(i.sg.has_value());
  EXPECT_FALSE(i.tso.has_value());
  EXPECT_TRUE(facts.host.notes.empty()) << facts.host.notes.front();
}

TEST(HostFacts, DescribesAStrictDmaIommuGroup) {
  const InterfaceFacts i = Collect("eth1").interface;
  EXPECT_EQ(i.pci_device, "0000:3b:00.1");
  EXPECT_EQ(i.iommu_group, "21");
  EXPECT_EQ(i.iommu_type, "DMA");
  EXPECT_EQ(i.speed_mbps, 25000);
  EXPECT_EQ(i.mtu, 1500u);
}

TEST(HostFacts, DescribesAPassthroughIommuGroup) {
  const InterfaceFacts i = Collect("eth2").interface;
  EXPECT_EQ(i.driver, "ice");
  EXPECT_EQ(i.iommu_group, "30");
  EXPECT_EQ(i.iommu_type, "identity");
}

TEST(HostFacts, FollowsAVirtioNicUpToItsPciDeviceWithoutIommu) {
  const PathFacts facts = Collect("eth3");
  const InterfaceFacts& i = facts.interface;
  EXPECT_EQ(i.driver, "virtio_net");
  EXPECT_EQ(i.pci_device, "0000:00:03.0");
  EXPECT_EQ(i.iommu_group, "");
  EXPECT_EQ(i.iommu_type, "");
  EXPECT_FALSE(i.speed_mbps.has_value());  // virtio reports -1
  EXPECT_EQ(i.mtu, 1500u);
  EXPECT_TRUE(facts.host.notes.empty()) << facts.host.notes.front();
}

TEST(HostFacts, LeavesMissingAndUnreadableFilesUnknownWithANote) {
  const PathFacts facts = Collect("eth4");
  const InterfaceFacts& i = facts.interface;
  EXPECT_EQ(i.driver, "ixgbe");
  EXPECT_FALSE(i.mtu.has_value());
  EXPECT_FALSE(i.speed_mbps.has_value());
  EXPECT_EQ(i.iommu_group, "40");
  EXPECT_EQ(i.iommu_type, "");
  EXPECT_TRUE(NoteMentions(facts, "eth4/mtu")) << ToJson(facts).dump();
  EXPECT_TRUE(NoteMentions(facts, "eth4/speed: read failed: EISDIR (Is a directory)"))
      << ToJson(facts).dump();
  EXPECT_TRUE(NoteMentions(facts, "iommu_groups/40/type")) << ToJson(facts).dump();
}

TEST(HostFacts, NotesAnUnknownInterface) {
  const PathFacts facts = Collect("eth9");
  EXPECT_EQ(facts.interface.name, "eth9");
  EXPECT_TRUE(NoteMentions(facts, "interface eth9 not found")) << ToJson(facts).dump();
  EXPECT_EQ(facts.host.kernel_release, "6.1.0-27-amd64");
}

// The kernel answers for a peer whatever the root (policy routing in
// egress_interface_test): a local address leaves through lo.
TEST(HostFacts, AsksTheKernelForAPeersEgressInterface) {
  EXPECT_EQ(Collect("", "loopback").interface.name, "lo");
  const PathFacts local = Collect("", "127.0.0.1:7070");
  EXPECT_EQ(local.interface.name, "lo") << ToJson(local).dump();
  EXPECT_EQ(Collect("", "[::ffff:127.0.0.1]:7070").interface.name, "lo");
}

TEST(HostFacts, LoopbackHasNoDevice) {
  const PathFacts facts = Collect("", "loopback");
  EXPECT_EQ(facts.interface.mtu, 65536u);
  EXPECT_EQ(facts.interface.driver, "");
  EXPECT_EQ(facts.interface.pci_device, "");
  EXPECT_TRUE(facts.host.notes.empty()) << facts.host.notes.front();
}

TEST(HostFacts, NotesEverythingWhenTheRootIsEmpty) {
  const testing::ScratchDir empty("empty-root");
  const PathFacts facts = CollectPathFacts({empty.path().string(), "", Target::Loopback()});
  EXPECT_EQ(facts.host.kernel_release, "");
  EXPECT_EQ(facts.host.cpu_model, "");
  EXPECT_TRUE(NoteMentions(facts, "kernel release unknown"));
  EXPECT_TRUE(NoteMentions(facts, "cpu model unknown"));
  EXPECT_TRUE(NoteMentions(facts, "interface lo not found"));
}

// The agent reads the host once and each path's interface beside it: an
// interface's reading names what could not be read of it, not of the host.
TEST(HostFacts, AnInterfaceReadAloneNotesOnlyWhatConcernsIt) {
  const testing::ScratchDir empty("empty-root");
  std::vector<std::string> notes;
  const InterfaceFacts lo =
      CollectInterfaceFacts({empty.path().string(), "", Target::Loopback()}, notes);
  EXPECT_EQ(lo.name, "lo");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("interface lo not found"), std::string::npos) << notes[0];
  // A path's reading: the host's notes, then its interface's.
  std::vector<std::string> both = CollectHostFacts(empty.path().string()).notes;
  EXPECT_FALSE(both.empty());
  both.insert(both.end(), notes.begin(), notes.end());
  EXPECT_EQ(CollectPathFacts({empty.path().string(), "", Target::Loopback()}).host.notes, both);
}

class FingerprintOfACopy : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::copy(FakeRoot(), root_, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    before_ = Now();
  }

  std::uint64_t Now() const {
    return CollectHostFacts(root_.string()).fingerprint;
  }
  void Write(const std::string& relative, const std::string& text) {
    fs::remove(root_ / relative);
    std::ofstream(root_ / relative) << text;
  }

  const testing::ScratchDir scratch_{"facts"};
  const fs::path& root_ = scratch_.path();
  std::uint64_t before_ = 0;
};

TEST_F(FingerprintOfACopy, IsStableWhenNothingChanges) { EXPECT_EQ(Now(), before_); }

TEST_F(FingerprintOfACopy, ChangesWithTheKernel) {
  Write("proc/sys/kernel/osrelease", "6.2.0\n");
  EXPECT_NE(Now(), before_);
}

TEST_F(FingerprintOfACopy, ChangesWithTheIommuMode) {
  Write("sys/kernel/iommu_groups/20/type", "identity\n");
  EXPECT_NE(Now(), before_);
}

TEST_F(FingerprintOfACopy, ChangesWithTheCommandLine) {
  Write("proc/cmdline", "ro iommu=pt\n");
  EXPECT_NE(Now(), before_);
}

TEST_F(FingerprintOfACopy, ChangesWithTheMtuAndSpeed) {
  const std::string nic = "sys/devices/pci0000:00/0000:3b:00.0/net/eth0/";
  Write(nic + "mtu", "1500\n");
  const std::uint64_t after_mtu = Now();
  EXPECT_NE(after_mtu, before_);
  Write(nic + "speed", "25000\n");
  EXPECT_NE(Now(), after_mtu);
}

TEST_F(FingerprintOfACopy, ChangesWithTheDriver) {
  const fs::path link = root_ / "sys/devices/pci0000:00/0000:3b:00.0/driver";
  fs::remove(link);
  fs::create_directory_symlink("../../../bus/pci/drivers/ice", link);
  EXPECT_NE(Now(), before_);
}

TEST_F(FingerprintOfACopy, ChangesWhenANicAppearsButNotForAVeth) {
  // A container's veth: no device behind it.
  fs::create_directories(root_ / "sys/class/net/veth1234");
  Write("sys/class/net/veth1234/mtu", "1500\n");
  EXPECT_EQ(Now(), before_);
  fs::create_directories(root_ / "sys/devices/pci0000:00/0000:d8:00.0/net/eth9");
  fs::create_directory_symlink("../../devices/pci0000:00/0000:d8:00.0/net/eth9",
                               root_ / "sys/class/net/eth9");
  fs::create_directory_symlink("../../../0000:d8:00.0",
                               root_ / "sys/devices/pci0000:00/0000:d8:00.0/net/eth9/device");
  EXPECT_NE(Now(), before_);
}

TEST_F(FingerprintOfACopy, IsTheSameWhateverThePath) {
  // One host fingerprint: `zcal calibrate --path X --json` and the agent
  // (whatever paths it calibrates) print the same value.
  for (const char* path : {"loopback", "10.1.0.7:7070", "[2001:db8::5]:1"}) {
    EXPECT_EQ(CollectPathFacts({root_.string(), "", *ParseTarget(path)}).host.fingerprint,
              before_)
        << path;
  }
}

TEST(HostFacts, ToJsonHasEveryFieldAndTheFingerprint) {
  const PathFacts facts = Collect("eth3");
  const nlohmann::json json = ToJson(facts);
  EXPECT_EQ(json["kernel_release"], "6.1.0-27-amd64");
  EXPECT_EQ(json["interface"]["driver"], "virtio_net");
  EXPECT_TRUE(json["interface"]["speed_mbps"].is_null());
  EXPECT_TRUE(json["interface"]["iommu_group"].is_null());
  EXPECT_TRUE(json["interface"]["iommu_type"].is_null());
  // lo and the five NICs, not virtual interfaces.
  ASSERT_EQ(json["devices"].size(), 6u);
  EXPECT_EQ(json["devices"][0]["name"], "eth0");
  EXPECT_EQ(json["devices"][5]["name"], "lo");
  EXPECT_EQ(json["interface"]["mtu"], 1500);
  EXPECT_EQ(json["fingerprint"].get<std::string>().size(), 16u);
  EXPECT_TRUE(json["notes"].is_array());
}

TEST(HostFacts, DescribesThisMachine) {
  utsname name{};
  ASSERT_EQ(::uname(&name), 0);
  const PathFacts facts = CollectPathFacts({});
  EXPECT_EQ(facts.host.kernel_release, name.release);
  EXPECT_FALSE(facts.host.cpu_model.empty());
  EXPECT_EQ(facts.interface.name, "lo");
  EXPECT_EQ(facts.interface.mtu, 65536u);
  // The live ethtool ioctl answers for lo.
  EXPECT_TRUE(facts.interface.sg.has_value());
  EXPECT_TRUE(facts.interface.tso.has_value());
  EXPECT_EQ(facts.interface.iommu_group, "");
  EXPECT_EQ(facts.host.fingerprint, CollectHostFacts().fingerprint);
}

}  // namespace
}  // namespace zcal::probes::host_facts_test

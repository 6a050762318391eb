// The JSON of interface facts, both ways.
#include "zcal/probes/host/host_facts_json.h"

#include <gtest/gtest.h>

namespace zcal::probes::host_facts_json_test {
namespace {

InterfaceFacts Nic() {
  InterfaceFacts nic;
  nic.name = "eth0";
  nic.driver = "mlx5_core";
  nic.pci_device = "0000:3b:00.0";
  nic.speed_mbps = 100000;
  nic.mtu = 9000;
  nic.sg = true;
  nic.tso = false;
  nic.iommu_group = "17";
  nic.iommu_type = "DMA-FQ";
  return nic;
}

void ExpectSame(const InterfaceFacts& a, const InterfaceFacts& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.driver, b.driver);
  EXPECT_EQ(a.pci_device, b.pci_device);
  EXPECT_EQ(a.speed_mbps, b.speed_mbps);
  EXPECT_EQ(a.mtu, b.mtu);
  EXPECT_EQ(a.sg, b.sg);
  EXPECT_EQ(a.tso, b.tso);
  EXPECT_EQ(a.iommu_group, b.iommu_group);
  EXPECT_EQ(a.iommu_type, b.iommu_type);
}

TEST(InterfaceFactsJson, RoundTripsEveryField) {
  ExpectSame(InterfaceFactsFromJson(InterfaceFactsToJson(Nic())), Nic());
}

TEST(InterfaceFactsJson, UnknownFieldsAreNullAndReadBackUnknown) {
  const nlohmann::json json = InterfaceFactsToJson(InterfaceFacts{});
  for (const char* key : {"name", "driver", "pci_device", "speed_mbps", "mtu", "sg",
                          "tso", "iommu_group", "iommu_type"}) {
    ASSERT_TRUE(json.contains(key)) << key;
    EXPECT_TRUE(json.at(key).is_null()) << key;
  }
  ExpectSame(InterfaceFactsFromJson(json), InterfaceFacts{});
}

TEST(InterfaceFactsJson, MistypedOrOutOfRangeValuesStayUnknown) {
  const nlohmann::json json = {{"name", 7},        {"mtu", -1},
                               {"speed_mbps", "fast"}, {"sg", "yes"},
                               {"iommu_type", nullptr}, {"mtu_extra", 1}};
  ExpectSame(InterfaceFactsFromJson(json), InterfaceFacts{});
  ExpectSame(InterfaceFactsFromJson(nlohmann::json::array()), InterfaceFacts{});
  ExpectSame(InterfaceFactsFromJson(nlohmann::json({{"mtu", 1ULL << 40}})), InterfaceFacts{});
}

TEST(InterfaceFactsJson, HostFactsWriteTheirInterfaceAndDevicesThisWay) {
  PathFacts facts;
  facts.interface = Nic();
  facts.host.devices = {Nic()};
  const nlohmann::json json = ToJson(facts);
  ExpectSame(InterfaceFactsFromJson(json.at("interface")), Nic());
  ExpectSame(InterfaceFactsFromJson(json.at("devices").at(0)), Nic());
}

}  // namespace
}  // namespace zcal::probes::host_facts_json_test

#include "zcal/probes/host/host_facts_json.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

namespace zcal::probes {
namespace {

using nlohmann::json;

template <typename T>
json OrNull(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

json OrNull(const std::string& value) { return value.empty() ? json(nullptr) : json(value); }

std::string Text(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<bool> Flag(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

template <typename T>
std::optional<T> Number(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  if constexpr (std::is_unsigned_v<T>) {
    if (it->get<std::int64_t>() < 0) return std::nullopt;
    const auto value = it->get<std::uint64_t>();
    if (value > std::numeric_limits<T>::max()) return std::nullopt;
    return static_cast<T>(value);
  } else {
    return it->get<T>();
  }
}

}  // namespace

json InterfaceFactsToJson(const InterfaceFacts& i) {
  return {{"name", OrNull(i.name)},
          {"driver", OrNull(i.driver)},
          {"pci_device", OrNull(i.pci_device)},
          {"speed_mbps", OrNull(i.speed_mbps)},
          {"mtu", OrNull(i.mtu)},
          {"sg", OrNull(i.sg)},
          {"tso", OrNull(i.tso)},
          {"iommu_group", OrNull(i.iommu_group)},
          {"iommu_type", OrNull(i.iommu_type)}};
}

InterfaceFacts InterfaceFactsFromJson(const json& object) {
  InterfaceFacts i;
  if (!object.is_object()) return i;
  i.name = Text(object, "name");
  i.driver = Text(object, "driver");
  i.pci_device = Text(object, "pci_device");
  i.speed_mbps = Number<std::int64_t>(object, "speed_mbps");
  i.mtu = Number<std::uint32_t>(object, "mtu");
  i.sg = Flag(object, "sg");
  i.tso = Flag(object, "tso");
  i.iommu_group = Text(object, "iommu_group");
  i.iommu_type = Text(object, "iommu_type");
  return i;
}

}  // namespace zcal::probes

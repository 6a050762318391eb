#include "zcal/agent/state/host_json.h"

#include <utility>

#include "zcal/common/text.h"
#include "zcal/probes/host/host_facts_json.h"

namespace zcal::agent {
namespace {

using nlohmann::json;

std::string Text(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<std::string> TextList(const json& object, const char* key) {
  std::vector<std::string> list;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return list;
  for (const json& item : *it) {
    if (item.is_string()) list.push_back(item.get<std::string>());
  }
  return list;
}

std::uint64_t Fingerprint(const json& object) {
  const std::string hex = Text(object, "fingerprint");
  const std::optional<std::uint64_t> value = common::ParseHex64(hex);
  return value.value_or(0);
}

// Takes one path's facts into `host`. Host-wide facts are the same under
// every path; a path that lacks one (written by another version) does not
// blank it.
void AddFacts(HostInfo& host, const json& facts, std::string path) {
  probes::HostFacts& h = host.facts;
  if (h.kernel_release.empty()) h.kernel_release = Text(facts, "kernel_release");
  if (h.cpu_model.empty()) h.cpu_model = Text(facts, "cpu_model");
  if (h.iommu_cmdline.empty()) h.iommu_cmdline = TextList(facts, "iommu_cmdline");
  if (const auto devices = facts.find("devices");
      h.devices.empty() && devices != facts.end() && devices->is_array()) {
    for (const json& d : *devices) h.devices.push_back(probes::InterfaceFactsFromJson(d));
  }
  const auto it = facts.find("interface");
  AddInterface(host,
               InterfaceOfLabel(std::move(path), it == facts.end()
                                                     ? probes::InterfaceFacts{}
                                                     : probes::InterfaceFactsFromJson(*it)),
               TextList(facts, "notes"));
}

}  // namespace

json HostToStateJson(const HostInfo& host) {
  const probes::HostFacts& h = host.facts;
  json devices = json::array();
  for (const probes::InterfaceFacts& d : h.devices) {
    devices.push_back(probes::InterfaceFactsToJson(d));
  }
  json paths = json::object();
  for (const PathInterface& i : host.interfaces) {
    paths[i.path] = {{"kernel_release", h.kernel_release},
                     {"cpu_model", h.cpu_model},
                     {"iommu_cmdline", h.iommu_cmdline},
                     {"devices", devices},
                     {"interface", probes::InterfaceFactsToJson(i.facts)},
                     {"notes", h.notes}};
  }
  return {{"fingerprint", common::Hex64(h.fingerprint)}, {"paths", std::move(paths)}};
}

std::optional<HostInfo> HostFromStateJson(const json& object) {
  if (!object.is_object()) return std::nullopt;
  const auto paths = object.find("paths");
  if (paths == object.end() || !paths->is_object() || paths->empty()) return std::nullopt;
  std::optional<HostInfo> host;
  for (const auto& [path, facts] : paths->items()) {
    if (!facts.is_object()) continue;
    if (!host) host.emplace();
    AddFacts(*host, facts, path);
  }
  if (host) host->facts.fingerprint = Fingerprint(object);
  return host;
}

std::optional<HostInfo> HostFromFactsJson(const json& facts, std::string path) {
  if (!facts.is_object()) return std::nullopt;
  HostInfo host;
  AddFacts(host, facts, std::move(path));
  host.facts.fingerprint = Fingerprint(facts);
  return host;
}

}  // namespace zcal::agent

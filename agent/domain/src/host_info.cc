#include "zcal/agent/domain/host_info.h"

#include <algorithm>
#include <utility>

namespace zcal::agent {

HostInfo HostInfoOf(const probes::HostFacts& facts, std::string path) {
  HostInfo host;
  host.kernel_release = facts.kernel_release;
  host.cpu_model = facts.cpu_model;
  host.iommu_cmdline = facts.iommu_cmdline;
  host.fingerprint = facts.Fingerprint();
  host.devices = facts.devices;
  AddPath(host, facts, std::move(path));
  return host;
}

void AddPath(HostInfo& host, const probes::HostFacts& facts, std::string path) {
  host.interfaces.push_back(PathInterface{std::move(path), facts.interface});
  for (const std::string& note : facts.notes) {
    if (std::find(host.notes.begin(), host.notes.end(), note) == host.notes.end()) {
      host.notes.push_back(note);
    }
  }
}

}  // namespace zcal::agent

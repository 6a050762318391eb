#include "ethtool.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "zcal/common/errno_text.h"
#include "zcal/common/result.h"
#include "zcal/common/unique_fd.h"

namespace zcal::probes {

namespace {

std::optional<bool> Query(int fd, const std::string& interface, std::uint32_t command,
                          std::string& error) {
  ethtool_value value{};
  value.cmd = command;
  ifreq request{};
  std::strncpy(request.ifr_name, interface.c_str(), IFNAMSIZ - 1);
  request.ifr_data = reinterpret_cast<char*>(&value);
  if (::ioctl(fd, SIOCETHTOOL, &request) != 0) {
    if (error.empty()) {
      error = "ethtool ioctl on " + interface + " failed with " + common::ErrnoText(errno);
    }
    return std::nullopt;
  }
  return value.data != 0;
}

}  // namespace

OffloadFeatures QueryOffloads(const std::string& interface) {
  OffloadFeatures features;
  if (interface.empty() || interface.size() >= IFNAMSIZ) {
    features.error = "no valid interface name to ask ethtool about";
    return features;
  }
  const common::UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) {
    features.error = "cannot open a socket for ethtool: " + common::ErrnoText(errno);
    return features;
  }
  features.sg = Query(fd.get(), interface, ETHTOOL_GSG, features.error);
  features.tso = Query(fd.get(), interface, ETHTOOL_GTSO, features.error);
  return features;
}

}  // namespace zcal::probes

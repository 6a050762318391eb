// The sections of the configuration that say where the agent publishes and
// how it runs (segment, metrics, state, log, host), read by config.cc's
// ParseConfig; split from the sections that say what to measure, which stay
// in config.cc.
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include "config_sections.h"
#include "zcal/agent/domain/segment_name.h"
#include "zcal/common/address.h"
#include "zcal/common/identity.h"
#include "zcal/common/text.h"

namespace zcal::agent {

using std::chrono::milliseconds;

namespace {

std::optional<mode_t> ParseMode(std::string_view text) {
  if (text.starts_with("0o")) text.remove_prefix(2);
  if (text.empty() || text.size() > 4) return std::nullopt;
  unsigned value = 0;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value, 8);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return static_cast<mode_t>(value);
}

}  // namespace

void ReadSegment(ConfigReader& reader, const YAML::Node& node,
                 Config& config) {
  static constexpr std::array<std::string_view, 5> kKeys = {
      "name", "mode", "group", "heartbeat", "capacity"};
  const auto fields = reader.Map(node, "segment", kKeys);
  if (!fields) return;
  SegmentConfig& s = config.segment;
  if (const auto it = fields->find("name"); it != fields->end()) {
    if (reader.String(it->second, "segment.name", s.name)) {
      if (const Result<void> valid = ValidateSegmentName(s.name); !valid) {
        reader.Error(it->second, "segment.name", valid.error().message);
      }
    }
  }
  if (const auto it = fields->find("mode"); it != fields->end()) {
    std::string text;
    if (reader.String(it->second, "segment.mode", text)) {
      const auto mode = ParseMode(text);
      if (!mode || (*mode & ~0777U) != 0) {
        reader.Error(it->second, "segment.mode",
                     "'" + text +
                         "' is not a permission mode; write octal digits "
                         "such as \"0644\" (no setuid, setgid or sticky bits)");
      } else if ((*mode & 0600U) != 0600U) {
        reader.Error(it->second, "segment.mode",
                     "'" + text +
                         "' denies the owner read or write; the mode must "
                         "include 0600");
      } else {
        s.mode = *mode;
      }
    }
  }
  if (const auto it = fields->find("group"); it != fields->end()) {
    if (!it->second.IsNull() &&
        reader.String(it->second, "segment.group", s.group) &&
        !s.group.empty()) {
      if (const Result<gid_t> gid = common::ResolveGroup(s.group); !gid) {
        reader.Error(it->second, "segment.group",
                     gid.error().message + " (\"\" keeps the agent's group)");
      }
    }
  }
  if (const auto it = fields->find("heartbeat"); it != fields->end()) {
    reader.Duration(it->second, "segment.heartbeat", milliseconds(100),
                    std::chrono::seconds(60), false, s.heartbeat);
  }
  if (const auto it = fields->find("capacity"); it != fields->end()) {
    double value = 0;
    // 65536: ZCAL_MAX_CAPACITY of the segment ABI (ShmWriter checks it too).
    if (reader.Number(it->second, "segment.capacity", 1, 65536, value)) {
      if (value != static_cast<double>(static_cast<std::uint32_t>(value))) {
        reader.Error(it->second, "segment.capacity", "expected a whole number of entries");
      } else {
        s.capacity = static_cast<std::uint32_t>(value);
      }
    }
  }
}

void ReadMetrics(ConfigReader& reader, const YAML::Node& node,
                 Config& config) {
  static constexpr std::array<std::string_view, 1> kKeys = {"listen"};
  const auto fields = reader.Map(node, "metrics", kKeys);
  if (!fields) return;
  if (const auto it = fields->find("listen"); it != fields->end()) {
    std::string listen;
    if (it->second.IsNull()) {
      config.metrics.listen.clear();
    } else if (reader.String(it->second, "metrics.listen", listen)) {
      const auto address =
          common::ParseHostPort(listen, common::PortRule::kZeroAllowed);
      if (!listen.empty() && !address) {
        reader.Error(it->second, "metrics.listen",
                     address.error().message +
                         "; write ADDRESS:PORT with a port from 0 to 65535, "
                         "e.g. 127.0.0.1:9464 or [::1]:9464, or \"\" to "
                         "disable metrics");
      } else {
        config.metrics.listen = listen;
      }
    }
  }
}

void ReadState(ConfigReader& reader, const YAML::Node& node, Config& config) {
  static constexpr std::array<std::string_view, 1> kKeys = {"path"};
  const auto fields = reader.Map(node, "state", kKeys);
  if (!fields) return;
  if (const auto it = fields->find("path"); it != fields->end()) {
    if (reader.String(it->second, "state.path", config.state_path) &&
        (config.state_path.empty() || config.state_path.front() != '/' ||
         config.state_path.back() == '/')) {
      reader.Error(it->second, "state.path",
                   "'" + config.state_path +
                       "' is not an absolute file path; write one such as "
                       "/var/lib/zcal/state.json");
    }
  }
}

void ReadLog(ConfigReader& reader, const YAML::Node& node, Config& config) {
  static constexpr std::array<std::string_view, 1> kKeys = {"level"};
  const auto fields = reader.Map(node, "log", kKeys);
  if (!fields) return;
  if (const auto it = fields->find("level"); it != fields->end()) {
    static constexpr std::array<std::string_view, 7> kLevels = {
        "trace", "debug", "info", "warn", "error", "critical", "off"};
    std::string level;
    if (reader.String(it->second, "log.level", level)) {
      if (std::find(kLevels.begin(), kLevels.end(), level) == kLevels.end()) {
        reader.Error(it->second, "log.level",
                     "unknown level '" + level + "'; allowed: " +
                         common::Join(kLevels));
      } else {
        config.log_level = level;
      }
    }
  }
}

void ReadHost(ConfigReader& reader, const YAML::Node& node, Config& config) {
  static constexpr std::array<std::string_view, 1> kKeys = {"root"};
  const auto fields = reader.Map(node, "host", kKeys);
  if (!fields) return;
  if (const auto it = fields->find("root"); it != fields->end()) {
    if (!reader.String(it->second, "host.root", config.host_root)) return;
    struct stat st {};
    if (config.host_root.empty() || config.host_root.front() != '/') {
      reader.Error(it->second, "host.root",
                   "'" + config.host_root +
                       "' is not an absolute path; write / or the root of a "
                       "tree holding sys/ and proc/");
    } else if (stat(config.host_root.c_str(), &st) != 0 ||
               !S_ISDIR(st.st_mode)) {
      reader.Error(it->second, "host.root",
                   "'" + config.host_root +
                       "' is not a directory; write / or the root of a tree "
                       "holding sys/ and proc/");
    }
  }
}

}  // namespace zcal::agent

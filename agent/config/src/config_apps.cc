// The `apps:` section (docs/config.md): how the agent reads the
// applications' report objects, and what it learns from them.
#include <array>
#include <string>

#include "config_sections.h"

namespace zcal::agent {
namespace {

constexpr std::uint64_t kMaxObjects = 65536;
constexpr std::uint64_t kMaxNames = 1024;
constexpr std::uint64_t kMaxCount = std::uint64_t{1} << 40;

void ReadDirectory(ConfigReader& reader, const YAML::Node& value, AppsSettings& apps) {
  std::string directory;
  if (!reader.String(value, "apps.directory", directory)) return;
  if (directory.empty() || directory.front() != '/') {
    reader.Error(value, "apps.directory",
                 "'" + directory + "' is not an absolute directory; write one such as /dev/shm");
    return;
  }
  while (directory.size() > 1 && directory.back() == '/') directory.pop_back();
  apps.directory = directory;
}

void ReadUids(ConfigReader& reader, const YAML::Node& value, AppsSettings& apps) {
  if (value.IsNull()) {
    apps.uids.clear();
    return;
  }
  if (!reader.ExpectSequence(value, "apps.uids")) return;
  std::vector<std::uint32_t> uids;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string key = "apps.uids[" + std::to_string(i) + "]";
    std::uint64_t uid = 0;
    // 2^32 - 1 is (uid_t)-1, no user's.
    if (reader.Whole(value[i], key, 0, 0xfffffffeu, uid)) {
      uids.push_back(static_cast<std::uint32_t>(uid));
    }
  }
  apps.uids = std::move(uids);
}

void ReadOwnerCheck(ConfigReader& reader, const YAML::Node& value, AppsSettings& apps) {
  std::string text;
  if (!reader.String(value, "apps.owner_check", text)) return;
  if (text == "auto") {
    apps.owner_check = AppsOwnerCheck::kAuto;
  } else if (text == "on") {
    apps.owner_check = AppsOwnerCheck::kOn;
  } else if (text == "off") {
    apps.owner_check = AppsOwnerCheck::kOff;
  } else {
    reader.Error(value, "apps.owner_check",
                 "'" + text + "' is not one of auto, on, off");
  }
}

void ReadLimits(ConfigReader& reader, const Fields& fields, AppsSettings& apps) {
  std::uint64_t n = 0;
  if (const YAML::Node* value = FieldOf(fields, "max_objects");
      value && reader.Whole(*value, "apps.max_objects", 1, kMaxObjects, n)) {
    apps.max_objects = static_cast<std::uint32_t>(n);
  }
  if (const YAML::Node* value = FieldOf(fields, "max_names");
      value && reader.Whole(*value, "apps.max_names", 1, kMaxNames, n)) {
    apps.max_names = static_cast<std::uint32_t>(n);
  }
  if (const YAML::Node* value = FieldOf(fields, "contradiction_min_completions")) {
    reader.Whole(*value, "apps.contradiction_min_completions", 1, kMaxCount,
                 apps.contradiction_min_completions);
  }
  if (const YAML::Node* value = FieldOf(fields, "mix_min_sends")) {
    reader.Whole(*value, "apps.mix_min_sends", 1, kMaxCount, apps.mix_min_sends);
  }
  if (const YAML::Node* value = FieldOf(fields, "contradiction_share")) {
    double share = 0;
    if (reader.Number(*value, "apps.contradiction_share", 0, 1, share)) {
      if (share <= 0) {
        reader.Error(*value, "apps.contradiction_share",
                     "0 would flag every scope; write a share above 0 and at most 1");
      } else {
        apps.contradiction_share = share;
      }
    }
  }
}

}  // namespace

void ReadApps(ConfigReader& reader, const YAML::Node& node, Config& config) {
  static constexpr std::array<std::string_view, 11> kKeys = {
      "enabled",   "directory",           "max_objects",
      "max_names", "uids",                "window",
      "mix",       "contradiction_share", "contradiction_min_completions",
      "mix_min_sends", "owner_check"};
  if (node.IsNull()) return;  // `apps:` alone: the defaults
  const auto fields = reader.Map(node, "apps", kKeys);
  if (!fields) return;
  AppsSettings& apps = config.apps;
  if (const YAML::Node* value = FieldOf(*fields, "enabled")) {
    reader.Bool(*value, "apps.enabled", apps.enabled);
  }
  if (const YAML::Node* value = FieldOf(*fields, "mix")) reader.Bool(*value, "apps.mix", apps.mix);
  if (const YAML::Node* value = FieldOf(*fields, "directory")) ReadDirectory(reader, *value, apps);
  if (const YAML::Node* value = FieldOf(*fields, "uids")) ReadUids(reader, *value, apps);
  if (const YAML::Node* value = FieldOf(*fields, "owner_check")) ReadOwnerCheck(reader, *value, apps);
  if (const YAML::Node* value = FieldOf(*fields, "window")) {
    std::chrono::milliseconds window{};
    if (reader.Duration(*value, "apps.window", std::chrono::minutes(1),
                        std::chrono::hours(24 * 7), false, window)) {
      if (window % std::chrono::seconds(1) != std::chrono::milliseconds(0)) {
        reader.Error(*value, "apps.window", "write whole seconds, such as 90s or 1h");
      } else {
        apps.window = std::chrono::duration_cast<std::chrono::seconds>(window);
      }
    }
  }
  ReadLimits(reader, *fields, apps);
}

}  // namespace zcal::agent

#include "zcal/agent/config/config.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "config_reader.h"
#include "config_sections.h"
#include "default_config_yaml.h"
#include "zcal/common/address.h"
#include "zcal/common/bounded_read.h"
#include "zcal/common/text.h"
#include "zcal/common/units.h"

namespace zcal::agent {
namespace {

using calibrator::Method;
using std::chrono::milliseconds;

constexpr std::uint64_t kMinSizeBytes = 64;
constexpr std::uint64_t kMaxSizeBytes = 16ULL << 20;

bool ValidPathName(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
  });
}

void ReadPaths(ConfigReader& reader, const YAML::Node& node, Config& config) {
  if (!reader.ExpectSequence(node, "paths")) return;
  if (node.size() == 0) {
    reader.Error(node, "paths", "empty list; at least one path is needed");
    return;
  }
  std::vector<PathConfig> paths;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string key = "paths[" + std::to_string(i) + "]";
    static constexpr std::array<std::string_view, 2> kKeys = {"name", "type"};
    const auto fields = reader.Map(node[i], key, kKeys);
    if (!fields) continue;
    PathConfig path;
    const auto name = fields->find("name");
    if (name == fields->end()) {
      reader.Error(node[i], key, "missing 'name'; give each path a name");
    } else if (reader.String(name->second, key + ".name", path.name) &&
               !ValidPathName(path.name)) {
      reader.Error(name->second, key + ".name",
                   "'" + path.name +
                       "' is not a valid name; use 1 to 32 letters, digits, "
                       "'_', '-' or '.'");
    } else if (std::any_of(paths.begin(), paths.end(),
                           [&](const PathConfig& p) {
                             return p.name == path.name;
                           })) {
      reader.Error(name->second, key + ".name",
                   "duplicate path name '" + path.name +
                       "'; path names must be unique");
    }
    const auto type = fields->find("type");
    std::string type_name;
    if (type == fields->end()) {
      reader.Error(node[i], key, "missing 'type'; allowed: loopback, discard");
    } else if (reader.String(type->second, key + ".type", type_name)) {
      const std::optional<probes::TargetKind> parsed = probes::ParseTargetKind(type_name);
      if (parsed && *parsed != probes::TargetKind::kPeer) {
        path.type = *parsed;
        if (std::any_of(paths.begin(), paths.end(), [&](const PathConfig& p) {
              return p.type == *parsed;
            })) {
          reader.Error(type->second, key + ".type",
                       "a second " + type_name + " path; each of loopback "
                       "and discard can be calibrated only once");
        }
      } else if (parsed) {
        reader.Error(type->second, key + ".type",
                     "peers are not paths: list them under peers.static or "
                     "peers.dns; allowed here: loopback, discard");
      } else {
        reader.Error(type->second, key + ".type",
                     "unknown path type '" + type_name +
                         "'; allowed: loopback, discard");
      }
    }
    paths.push_back(path);
  }
  config.paths = std::move(paths);
}

void ReadHostDefault(ConfigReader& reader, const YAML::Node& node,
                     Config& config) {
  HostDefaultConfig& h = config.host_default;
  if (node.IsNull() || (node.IsScalar() && node.Scalar().empty())) {
    h.enabled = false;  // `host_default: ""`: no host default
    return;
  }
  if (node.IsScalar()) {
    // A scalar here is the form of a path name ("host_default: loopback"):
    // say why no path's result is copied, rather than "expected a map".
    reader.Error(node, "host_default",
                 "'" + node.Scalar() +
                     "' names a path, but the host default is no longer "
                     "copied from a path (loopback's result says nothing of "
                     "traffic through a NIC); write a mapping such as "
                     "{interface: \"\", estimate: true} or \"\" for none "
                     "(docs/config.md)");
    return;
  }
  static constexpr std::array<std::string_view, 3> kKeys = {"enabled", "interface",
                                                            "estimate"};
  const auto fields = reader.Map(node, "host_default", kKeys);
  if (!fields) return;
  if (const auto it = fields->find("enabled"); it != fields->end()) {
    reader.Bool(it->second, "host_default.enabled", h.enabled);
  }
  if (const auto it = fields->find("interface"); it != fields->end()) {
    if (reader.String(it->second, "host_default.interface", h.interface) &&
        (h.interface.size() > 15 || h.interface.find('/') != std::string::npos ||
         h.interface == "." || h.interface == "..")) {
      reader.Error(it->second, "host_default.interface",
                   "'" + h.interface +
                       "' is not an interface name (1 to 15 bytes, no '/'); "
                       "\"\" is the interface of the default route");
    }
  }
  if (const auto it = fields->find("estimate"); it != fields->end()) {
    reader.Bool(it->second, "host_default.estimate", h.estimate);
  }
}

void ReadMethods(ConfigReader& reader, const YAML::Node& node,
                 Config& config) {
  if (!reader.ExpectSequence(node, "methods")) return;
  std::vector<Method> methods;
  bool any_zerocopy = false;
  bool any_baseline = false;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string key = "methods[" + std::to_string(i) + "]";
    std::string name;
    if (!reader.String(node[i], key, name)) continue;
    const auto method = calibrator::ParseMethod(name);
    if (!method) {
      reader.Error(node[i], key,
                   "unknown method '" + name + "'; allowed: " + calibrator::MethodNames());
      continue;
    }
    if (std::find(methods.begin(), methods.end(), *method) != methods.end()) {
      reader.Error(node[i], key, "method '" + name + "' is listed twice");
      continue;
    }
    methods.push_back(*method);
    any_zerocopy = any_zerocopy || calibrator::IsZerocopy(*method);
    any_baseline = any_baseline || !calibrator::IsZerocopy(*method);
  }
  if (reader.ok() && !any_zerocopy) {
    reader.Error(node, "methods",
                 "no zerocopy method; list at least one of " +
                     calibrator::MethodNames(calibrator::kZerocopyMethods));
  } else if (reader.ok() && !any_baseline) {
    reader.Error(node, "methods",
                 "no copying send to compare against; add copy (and "
                 "uring_send for the io_uring methods)");
  }
  config.methods = std::move(methods);
}

// One item of `depths:`, a number or "stream"; nullopt (recorded) when it
// is not a class the segment publishes.
std::optional<std::uint32_t> ReadDepthClass(ConfigReader& reader, const YAML::Node& node,
                                            const std::string& key, std::string_view text) {
  const Result<std::uint32_t> depth = calibrator::ParseDepth(text);
  if (!depth || !DepthClassOf(*depth)) {
    reader.Error(node, key,
                 "'" + std::string(text) + "' is not a class the segment publishes: " +
                     std::string(kDepthClassNames) +
                     "; `zcal calibrate --depth` measures any depth");
    return std::nullopt;
  }
  return *depth;
}

void ReadDepths(ConfigReader& reader, const YAML::Node& node, Config& config) {
  // Each item with the node its error is reported at: a list's items, or
  // the one scalar of the comma form ("1,4,stream").
  std::vector<std::pair<YAML::Node, std::string>> items;
  if (node.IsScalar()) {
    const std::string& text = node.Scalar();
    for (std::size_t start = 0; start <= text.size();) {
      const std::size_t comma = std::min(text.find(',', start), text.size());
      items.emplace_back(node, std::string(common::Trim(text.substr(start, comma - start))));
      start = comma + 1;
    }
  } else if (reader.ExpectSequence(node, "depths")) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      std::string text;
      if (reader.String(node[i], "depths[" + std::to_string(i) + "]", text)) {
        items.emplace_back(node[i], std::move(text));
      }
    }
  } else {
    return;
  }
  if (items.size() > calibrator::kMaxDepthClasses) {
    reader.Error(node, "depths",
                 std::to_string(items.size()) + " classes; at most " +
                     std::to_string(calibrator::kMaxDepthClasses) + " (" +
                     std::string(kDepthClassNames) + ")");
    return;
  }
  std::vector<std::uint32_t> depths;
  bool ok = true;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& [item, text] = items[i];
    const std::string key = node.IsScalar() ? "depths" : "depths[" + std::to_string(i) + "]";
    const std::optional<std::uint32_t> depth = ReadDepthClass(reader, item, key, text);
    if (!depth) {
      ok = false;
    } else if (std::find(depths.begin(), depths.end(), *depth) != depths.end()) {
      reader.Error(item, key, "class " + calibrator::DepthName(*depth) +
                                  " is listed twice; name each class once");
      ok = false;
    } else {
      depths.push_back(*depth);
    }
  }
  if (!ok) return;
  if (std::find(depths.begin(), depths.end(), calibrator::kStreamDepth) == depths.end()) {
    reader.Error(node, "depths",
                 "stream is missing; every method has a stream entry that readers fall "
                 "back to, so list stream among the classes (e.g. [1, 4, 16, stream])");
    return;
  }
  Result<std::vector<std::uint32_t>> normalized = calibrator::NormalizeDepthClasses(depths);
  if (!normalized) {
    reader.Error(node, "depths", normalized.error().message);
    return;
  }
  config.depths = std::move(*normalized);
}

void ReadSizes(ConfigReader& reader, const YAML::Node& node, Config& config) {
  static constexpr std::array<std::string_view, 2> kKeys = {"min", "max"};
  const auto fields = reader.Map(node, "sizes", kKeys);
  if (!fields) return;
  if (const auto it = fields->find("min"); it != fields->end()) {
    reader.Size(it->second, "sizes.min", kMinSizeBytes, kMaxSizeBytes,
                config.min_size_bytes);
  }
  if (const auto it = fields->find("max"); it != fields->end()) {
    if (reader.Size(it->second, "sizes.max", kMinSizeBytes, kMaxSizeBytes,
                    config.max_size_bytes) &&
        config.max_size_bytes < config.min_size_bytes) {
      reader.Error(it->second, "sizes.max",
                   common::FormatSize(config.max_size_bytes) +
                       " is below sizes.min (" +
                       common::FormatSize(config.min_size_bytes) +
                       "); max must be at least min");
    }
  }
}

void ReadDecision(ConfigReader& reader, const YAML::Node& node,
                  Config& config) {
  static constexpr std::array<std::string_view, 5> kKeys = {
      "objective", "tolerance", "margin", "kernel_copied_fraction", "traffic"};
  const auto fields = reader.Map(node, "decision", kKeys);
  if (!fields) return;
  calibrator::DecisionOptions& d = config.decision;
  if (const auto it = fields->find("objective"); it != fields->end()) {
    std::string name;
    if (reader.String(it->second, "decision.objective", name)) {
      const auto objective = calibrator::ParseObjective(name);
      if (objective) {
        d.objective = *objective;
      } else {
        reader.Error(it->second, "decision.objective",
                     "unknown objective '" + name +
                         "'; allowed: efficiency, throughput, cpu");
      }
    }
  }
  if (const auto it = fields->find("tolerance"); it != fields->end()) {
    reader.Number(it->second, "decision.tolerance", 0, 0.5, d.tolerance);
  }
  if (const auto it = fields->find("margin"); it != fields->end()) {
    reader.Number(it->second, "decision.margin", 0, 1, d.margin);
  }
  if (const auto it = fields->find("kernel_copied_fraction");
      it != fields->end()) {
    reader.Number(it->second, "decision.kernel_copied_fraction", 0.01, 1,
                  d.kernel_copied_fraction);
  }
  // Set, it wins over the applications' mix (docs/calibrator.md).
  if (const auto it = fields->find("traffic"); it != fields->end()) {
    std::string text;
    if (reader.String(it->second, "decision.traffic", text) && !text.empty()) {
      auto bins = calibrator::ParseTraffic(text);
      if (bins) {
        d.traffic = std::move(*bins);
      } else {
        reader.Error(it->second, "decision.traffic",
                     bins.error().message + "; write SIZE:WEIGHT pairs such as "
                                            "\"4KiB:30,64KiB:70\", or \"\" for none");
      }
    }
  }
}

void ReadHysteresis(ConfigReader& reader, const YAML::Node& node,
                    Config& config) {
  static constexpr std::array<std::string_view, 2> kKeys = {
      "threshold_tolerance", "high_confidence"};
  const auto fields = reader.Map(node, "hysteresis", kKeys);
  if (!fields) return;
  if (const auto it = fields->find("threshold_tolerance");
      it != fields->end()) {
    reader.Number(it->second, "hysteresis.threshold_tolerance", 0, 1,
                  config.hysteresis.threshold_tolerance);
  }
  if (const auto it = fields->find("high_confidence"); it != fields->end()) {
    reader.Number(it->second, "hysteresis.high_confidence", 0, 1,
                  config.hysteresis.high_confidence);
  }
}

void ReadSchedule(ConfigReader& reader, const YAML::Node& node,
                  Config& config) {
  static constexpr std::array<std::string_view, 5> kKeys = {
      "at_startup", "interval", "jitter", "retry_after_failure",
      "fingerprint_poll"};
  const auto fields = reader.Map(node, "schedule", kKeys);
  if (!fields) return;
  ScheduleConfig& s = config.schedule;
  using std::chrono::days;
  using std::chrono::seconds;
  if (const auto it = fields->find("at_startup"); it != fields->end()) {
    reader.Bool(it->second, "schedule.at_startup", s.at_startup);
  }
  if (const auto it = fields->find("interval"); it != fields->end()) {
    reader.Duration(it->second, "schedule.interval", seconds(1), days(30),
                    false, s.interval);
  }
  if (const auto it = fields->find("jitter"); it != fields->end()) {
    if (reader.Duration(it->second, "schedule.jitter", milliseconds(0),
                        days(15), true, s.jitter) &&
        s.jitter * 2 > s.interval) {
      reader.Error(it->second, "schedule.jitter",
                   common::FormatDuration(s.jitter) +
                       " is more than half of schedule.interval (" +
                       common::FormatDuration(s.interval) +
                       "); allowed: 0 to " + common::FormatDuration(s.interval / 2));
    }
  }
  if (const auto it = fields->find("retry_after_failure");
      it != fields->end()) {
    reader.Duration(it->second, "schedule.retry_after_failure", seconds(1),
                    days(1), false, s.retry_after_failure);
  }
  if (const auto it = fields->find("fingerprint_poll"); it != fields->end()) {
    reader.Duration(it->second, "schedule.fingerprint_poll",
                    milliseconds(200), days(1), true, s.fingerprint_poll);
  }
}

void ReadBudget(ConfigReader& reader, const YAML::Node& node,
                Config& config) {
  static constexpr std::array<std::string_view, 3> kKeys = {
      "seconds_per_calibration", "seconds_per_hour", "bytes_per_second"};
  const auto fields = reader.Map(node, "budget", kKeys);
  if (!fields) return;
  BudgetConfig& b = config.budget;
  if (const auto it = fields->find("seconds_per_calibration");
      it != fields->end()) {
    reader.Number(it->second, "budget.seconds_per_calibration", 0.5, 600,
                  b.seconds_per_calibration);
  }
  if (const auto it = fields->find("seconds_per_hour"); it != fields->end()) {
    if (reader.Number(it->second, "budget.seconds_per_hour", 0.5, 3600,
                      b.seconds_per_hour) &&
        b.seconds_per_hour < b.seconds_per_calibration) {
      std::ostringstream text;
      text << b.seconds_per_hour
           << " is below budget.seconds_per_calibration ("
           << b.seconds_per_calibration
           << "); a calibration would never fit in the hour";
      reader.Error(it->second, "budget.seconds_per_hour", text.str());
    }
  }
  if (const auto it = fields->find("bytes_per_second"); it != fields->end()) {
    if (reader.Rate(it->second, "budget.bytes_per_second", 0,
                    std::uint64_t{1} << 40, b.bytes_per_second) &&
        b.bytes_per_second != 0 && b.bytes_per_second < 1000 * 1000) {
      reader.Error(it->second, "budget.bytes_per_second",
                   std::to_string(b.bytes_per_second) +
                       " is too low to measure anything; allowed: 0 "
                       "(unlimited) or at least 1MB");
    }
  }
}

}  // namespace

std::vector<std::uint32_t> CalibratedDepths(const Config& config, probes::TargetKind type) {
  if (probes::TraitsOf(type).kernel_copies_every_send) return {calibrator::kStreamDepth};
  return config.depths;
}

bool EqualInEffect(const Config& a, const Config& b) {
  Config same_source = b;
  same_source.source = a.source;
  return a == same_source;
}

std::string_view DefaultConfigYaml() { return kDefaultConfigYaml; }

Result<Config> ParseConfig(std::string_view yaml_text,
                           std::string_view source) {
  ConfigReader reader(source);
  const std::optional<YAML::Node> root = reader.Load(yaml_text);
  if (!root) return Fail(Errc::kParse, reader.Message());

  static constexpr std::array<std::string_view, 18> kKeys = {
      "paths",    "host_default", "methods",  "depths",  "sizes",
      "decision", "hysteresis",   "schedule", "budget",  "segment",
      "metrics",  "sink",         "peers",    "state",   "log",
      "host",     "exports",      "apps"};
  const auto fields = reader.Map(*root, "", kKeys);
  if (!fields) return Fail(Errc::kParse, reader.Message());

  Config config;
  config.source = std::string(source);
  // Read in this order: later checks compare against earlier values
  // (sizes.max against sizes.min, jitter against interval).
  const auto read = [&](std::string_view key, auto&& fn) {
    if (const auto it = fields->find(std::string(key)); it != fields->end()) {
      fn(reader, it->second, config);
    }
  };
  read("paths", ReadPaths);
  read("methods", ReadMethods);
  read("depths", ReadDepths);
  read("sizes", ReadSizes);
  read("decision", ReadDecision);
  read("hysteresis", ReadHysteresis);
  read("schedule", ReadSchedule);
  read("budget", ReadBudget);
  read("segment", ReadSegment);
  read("metrics", ReadMetrics);
  read("sink", ReadSink);
  read("peers", ReadPeers);
  read("state", ReadState);
  read("log", ReadLog);
  read("host", ReadHost);
  read("exports", ReadExports);
  read("apps", ReadApps);

  if (const auto it = fields->find("host_default"); it != fields->end()) {
    ReadHostDefault(reader, it->second, config);
  }

  if (!reader.ok()) return Fail(Errc::kParse, reader.Message());
  return config;
}

Result<Config> LoadConfigFile(const std::string& path) {
  Result<std::string> text = common::ReadBounded(
      path, common::kMaxConfigBytes, common::InputKind::kRegular,
      "configuration");
  if (!text) {
    return Fail(text.error().code == Errc::kInvalidArgument ? Errc::kParse
                                                            : Errc::kIo,
                text.error().message);
  }
  return ParseConfig(*text, path);
}

Config DefaultConfig() {
  Result<Config> config = ParseConfig(DefaultConfigYaml(), "<embedded default>");
  // configs/default.yaml is validated by a test; a failure here is a build
  // that embedded a broken file.
  if (!config) std::abort();
  return *config;
}

}  // namespace zcal::agent

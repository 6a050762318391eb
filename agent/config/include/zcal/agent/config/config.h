// The agent's configuration: the YAML schema of configs/default.yaml, its
// parsing and validation. docs/config.md documents every key.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/agent/domain/apps_settings.h"
#include "zcal/agent/domain/depth_class.h"
#include "zcal/agent/domain/export_formats.h"
#include "zcal/agent/peers/peers_config.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/depth.h"
#include "zcal/calibrator/hysteresis.h"
#include "zcal/calibrator/method.h"
#include "zcal/common/result.h"
#include "zcal/probes/peer/peer_sink.h"
#include "zcal/probes/types/target.h"

namespace zcal::agent {

struct PathConfig {
  std::string name = "loopback";  ///< metric label and calibration path
  /// kLoopback or kDiscard: peers are not paths of the configuration
  /// (they come from `peers:`), and the reader refuses kPeer here.
  probes::TargetKind type = probes::TargetKind::kLoopback;

  bool operator==(const PathConfig&) const = default;
};

/// Which results become the host default, the entry a transport falls back
/// to for destinations without an entry of their own (docs/config.md).
struct HostDefaultConfig {
  /// false: publish no host default.
  bool enabled = true;
  /// The NIC whose results become the host default; "" = the interface of
  /// the default route.
  std::string interface;
  /// Without a peer result, publish an estimate from the discard path, but
  /// only where that NIC's IOMMU does not translate.
  bool estimate = true;

  bool operator==(const HostDefaultConfig&) const = default;
};

struct ScheduleConfig {
  bool at_startup = true;
  std::chrono::milliseconds interval = std::chrono::hours(6);
  std::chrono::milliseconds jitter = std::chrono::minutes(10);  ///< +/-
  std::chrono::milliseconds retry_after_failure = std::chrono::minutes(5);
  /// How often host facts are re-read; 0 disables.
  std::chrono::milliseconds fingerprint_poll = std::chrono::seconds(30);

  bool operator==(const ScheduleConfig&) const = default;
};

struct BudgetConfig {
  double seconds_per_calibration = 6;
  double seconds_per_hour = 60;
  std::uint64_t bytes_per_second = 0;  ///< 0 = unlimited

  bool operator==(const BudgetConfig&) const = default;
};

struct SegmentConfig {
  std::string name = "/zcal";
  mode_t mode = 0644;
  std::string group;  ///< empty: the agent's own group
  std::chrono::milliseconds heartbeat = std::chrono::seconds(2);
  /// Entries the segment has room for when created; a larger table grows
  /// it (doubling), so this only saves the growth.
  std::uint32_t capacity = 256;

  bool operator==(const SegmentConfig&) const = default;
};

/// The peer sink the agent serves (section `sink:`), parsed and checked
/// when the file is read, through the one conversion that `zcal sink`'s
/// options go through too (ToPeerSinkOptions, config/sink_settings.h), its
/// key file's keys loaded: what the sink runs with, read once.
struct SinkConfig {
  /// nullopt: no sink (sink.listen is "").
  std::optional<probes::PeerSinkOptions> options;
  /// sink.key_file; "" = none. Peers are shown its first key when
  /// peers.key_file is "".
  std::string key_file;
  /// For the log when the sink starts: a key file others may read, `auth:
  /// none` off loopback.
  std::vector<std::string> warnings;

  bool operator==(const SinkConfig&) const = default;
};

struct MetricsConfig {
  std::string listen = "127.0.0.1:9464";  ///< empty: no endpoint

  bool operator==(const MetricsConfig&) const = default;
};

/// One file the agent keeps current in a consumer's format (section
/// `exports:`, docs/export.md): rewritten atomically after a publish that
/// changed its content, never otherwise. Exactly one of for_address,
/// interface and scope is set, as zcal export's --for, --interface and
/// --scope.
struct ExportConfig {
  ExportFormat format = ExportFormat::kEnv;
  std::string path;  ///< absolute; its directory existed when checked
  std::string for_address;  ///< a numeric IPv4 or IPv6 address
  std::string interface;
  std::string scope;     ///< "host_default" or "loopback"
  std::string fallback;  ///< "" (none), "never", "always" or a size
  /// The methods the consumer reads, as zcal export's --methods (checked
  /// against the format with PlanExport); empty: the format's default.
  std::vector<calibrator::Method> methods;
  /// The depth the consumer sends at, as zcal export's --depth; nullopt:
  /// the format's default class (ExportFormatDefaultDepth).
  std::optional<ExportDepth> depth;
  /// As zcal export's --strict-depth: no stream entry in place of the
  /// depth's class.
  bool strict_depth = false;

  bool operator==(const ExportConfig&) const = default;
};

/// A validated configuration. The member defaults equal
/// configs/default.yaml (a test checks that they agree).
struct Config {
  std::vector<PathConfig> paths = {PathConfig{},
                                   PathConfig{"discard", probes::TargetKind::kDiscard}};
  HostDefaultConfig host_default;
  std::vector<calibrator::Method> methods = {calibrator::kAllMethods.begin(),
                                             calibrator::kAllMethods.end()};
  /// The depth classes calibrated on the discard path and toward peers
  /// (calibrator/depth.h; ParseDepthClasses order: numeric ascending,
  /// stream last). Only classes the segment publishes (DepthClassOf), and
  /// always stream. Loopback is calibrated at stream only (CalibratedDepths).
  std::vector<std::uint32_t> depths = calibrator::DefaultDepthClasses();
  std::uint64_t min_size_bytes = 1024;
  std::uint64_t max_size_bytes = 256 * 1024;
  calibrator::DecisionOptions decision;
  calibrator::HysteresisOptions hysteresis;
  ScheduleConfig schedule;
  BudgetConfig budget;
  SegmentConfig segment;
  MetricsConfig metrics;
  SinkConfig sink;
  PeersConfig peers;
  std::vector<ExportConfig> exports;  ///< empty in the embedded default
  /// The applications' report objects (`apps:`).
  AppsSettings apps;
  std::string state_path = "/run/zcal/state.json";
  std::string log_level = "info";
  std::string host_root = "/";
  /// Where the configuration came from ("<embedded default>" or a path).
  std::string source = "<embedded default>";

  bool operator==(const Config&) const = default;
};

/// The depth classes a path of `type` is calibrated at: config.depths, but
/// stream alone on loopback, where the kernel copies every zerocopy send at
/// every depth (what would a class add to "never (kernel_copied)"?).
std::vector<std::uint32_t> CalibratedDepths(const Config& config, probes::TargetKind type);

/// True when the two configurations differ at most in `source`.
bool EqualInEffect(const Config& a, const Config& b);

/// configs/default.yaml, as embedded at build time.
std::string_view DefaultConfigYaml();

/// Parses and validates YAML text. Keys omitted keep the defaults above.
/// `source` names the text in messages. On failure the error (kParse) lists
/// every problem found, one per line, each as
/// "SOURCE:LINE:COLUMN: KEY: what was wrong; what is allowed".
Result<Config> ParseConfig(std::string_view yaml_text, std::string_view source);

/// Reads and parses a file; kIo when it cannot be read.
Result<Config> LoadConfigFile(const std::string& path);

/// The embedded default, parsed. Never fails in a correct build.
Config DefaultConfig();

}  // namespace zcal::agent

// Agents that probe each other, for the fleet and fault tests of the
// `peers:` section: their configuration, the real `zcal agent`
// started in a network namespace, its metrics scraped there, and its
// segment read with the real `zcal show --json`.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_harness.h"
#include "netns.h"

namespace zcal::agent::testing {

/// The sink's port on every member.
inline constexpr int kSinkPort = 7070;

/// What the fleet and fault tests vary; everything else is short and small.
struct PeerAgentSettings {
  std::string segment;            ///< "/zcal-it-..."
  std::filesystem::path state;    ///< state file
  std::string sink_listen;        ///< "" = no sink
  std::string key_file;           ///< sink.key_file (peers use it too)
  std::string peers_dns;          ///< "NAME:PORT"; "" = none
  std::vector<std::string> peers_static;  ///< "ADDR:PORT"
  int per_calibration = 2;        ///< K
  int keep = 4;                   ///< M
  std::string refresh = "1s";
  bool at_startup = true;
  std::string interval = "1h";
  std::string jitter = "0";
  double budget_seconds = 1.5;
  std::string methods = "[copy, msg_zerocopy, uring_send, uring_send_zc]";
  std::string sizes = "{min: 4KiB, max: 64KiB}";
};

/// The YAML of a configuration with these settings: the loopback path,
/// metrics on 127.0.0.1:0, a heartbeat every 200 ms.
std::string PeerAgentConfig(const PeerAgentSettings& settings);

/// One line of the exposition format: name, labels, value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
std::vector<Sample> ParseMetrics(const std::string& text);

/// The sum of the samples named `name` whose labels include `labels`;
/// nullopt when there is none.
std::optional<double> SumOf(const std::vector<Sample>& samples, const std::string& name,
                            const std::map<std::string, std::string>& labels = {});

/// `zcal show --json --segment NAME`, parsed; nullopt with *error when it
/// fails.
std::optional<nlohmann::json> ShowSegment(const std::string& segment, std::string* error);

/// The entries of scope "peer" of a `zcal show --json` document.
std::vector<nlohmann::json> PeerEntries(const nlohmann::json& show);

/// The distinct addresses of those entries.
std::vector<std::string> PeerAddresses(const nlohmann::json& show);

/// A new key file made by the real `zcal keygen`, mode 0600.
std::filesystem::path MakeKeyFile(const std::filesystem::path& dir);

/// A real `zcal agent` in a network namespace, its segment removed when
/// destroyed.
class NsAgent {
 public:
  /// Writes DIR/NAME.yaml from `settings` and starts the agent, its log in
  /// DIR/NAME.log. Check Started().
  NsAgent(const Netns& ns, const PeerAgentSettings& settings, const std::filesystem::path& dir,
          const std::string& name);
  NsAgent(const NsAgent&) = delete;
  NsAgent& operator=(const NsAgent&) = delete;

  /// Waits until the agent serves its metrics (and its sink, when it has
  /// one); false with the log in *error when it does not.
  bool Started(std::chrono::milliseconds timeout, std::string* error);
  /// The metrics, scraped inside the namespace; nullopt when unreachable.
  std::optional<std::vector<Sample>> Scrape() const;
  /// The segment, read from outside (shared memory is not per namespace).
  std::optional<nlohmann::json> Show(std::string* error) const;

  Child& process() { return *process_; }
  const Child& process() const { return *process_; }
  const PeerAgentSettings& settings() const { return settings_; }
  std::string Log() const { return process_->Log(); }

 private:
  const Netns& ns_;
  PeerAgentSettings settings_;
  SegmentCleanup segment_cleanup_;
  std::unique_ptr<Child> process_;  // destroyed before the segment is removed
  int metrics_port_ = 0;
};

}  // namespace zcal::agent::testing

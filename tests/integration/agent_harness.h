// Starts the real `zcal agent` for integration tests, with a temporary
// segment, state file and an ephemeral metrics port.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zcal/zcal.h"

namespace zcal::agent::testing {

/// The settings the tests vary; everything else is short and local.
struct AgentSettings {
  std::string segment;            ///< "/zcal-it-..."
  std::filesystem::path state;    ///< state file
  std::string metrics = "127.0.0.1:0";
  bool at_startup = true;
  std::string fingerprint_poll = "0";
  std::string host_root = "/";
  /// host_default.interface; "" = the default route's (the kernel's).
  std::string host_default_interface;
  std::string heartbeat = "200ms";
  double budget_seconds = 2;
  /// Calibrate the discard path too (slower; most tests need loopback only).
  bool discard = false;
  /// sink.listen and sink.key_file; "" = no sink section.
  std::string sink_listen;
  std::string sink_key_file;
  /// peers.static ("ADDR:PORT" each); empty = no peers section.
  std::vector<std::string> peers_static;
  /// methods: as YAML ("[copy, msg_zerocopy]"); "" = no methods key (all five).
  std::string methods;
  /// depths: as YAML ("[1, stream]"); "" = no depths key (1, 4, 16, stream).
  std::string depths;
  /// An `apps:` section as YAML ("apps:\n  directory: ...\n"). By
  /// default the agent reads no report objects: in /dev/shm it would fold
  /// and remove those that parallel tests' killed processes leave there.
  std::string apps = "apps:\n  enabled: false\n";
};

/// The YAML of a configuration with these settings.
std::string AgentConfig(const AgentSettings& settings);

/// A unique segment name for this process: "/zcal-it-PID-N".
std::string UniqueSegment();

/// Removes the segment and its lock file when destroyed.
class SegmentCleanup {
 public:
  explicit SegmentCleanup(std::string name) : name_(std::move(name)) {}
  ~SegmentCleanup();
  SegmentCleanup(const SegmentCleanup&) = delete;
  SegmentCleanup& operator=(const SegmentCleanup&) = delete;

 private:
  std::string name_;
};

class AgentProcess {
 public:
  /// Starts `$ZCAL agent --config CONFIG` with stderr to LOG.
  static std::unique_ptr<AgentProcess> Start(
      const std::filesystem::path& config, const std::filesystem::path& log);
  /// Starts any program (argv[0] a path) the same way.
  static std::unique_ptr<AgentProcess> StartProgram(
      const std::vector<std::string>& argv, const std::filesystem::path& log);
  ~AgentProcess();  ///< SIGKILLs and reaps it if still running
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string Log() const;
  /// Waits until the log holds `fragment` at least `count` times.
  bool WaitForLog(const std::string& fragment, std::chrono::milliseconds timeout,
                  std::size_t count = 1) const;
  /// The port from "serving metrics at http://127.0.0.1:PORT/metrics"
  /// (the last one logged); 0 when there is none yet.
  int MetricsPort() const;
  void Signal(int signal) const;
  /// The exit status (or 128 + signal) once it exits within `timeout`.
  std::optional<int> WaitExit(std::chrono::milliseconds timeout);

 private:
  AgentProcess(pid_t pid, std::filesystem::path log)
      : pid_(pid), log_(std::move(log)) {}
  pid_t pid_;
  std::filesystem::path log_;
  bool reaped_ = false;
};

/// $ZCAL, the binary under test.
std::string ZcalBinary();

/// Counts occurrences of `fragment` in `text`.
std::size_t CountOf(const std::string& text, const std::string& fragment);

/// Whether `text` contains `fragment`.
bool Contains(const std::string& text, const std::string& fragment);

/// The body of /metrics on 127.0.0.1:`port`; "" unless it answered 200.
std::string Scrape(int port);

/// The value of one series (name and labels as /metrics prints them) on
/// `port`; -1 when there is no such series or no answer.
double Series(int port, const std::string& series);

/// The header of `segment` as libzcal reads it; nullopt when it cannot be
/// opened or read.
std::optional<zcal_info> ReadInfo(const std::string& segment);

/// A fake sysfs/procfs tree that a test edits (host facts of the loopback
/// path come from it).
void MakeFakeRoot(const std::filesystem::path& root);
/// A fake host whose NIC eth0 is a PCI virtio NIC; `iommu_type` "" puts it
/// in no IOMMU group, else in group 7 of that type. Routes are the
/// kernel's, not the fake tree's: tests name eth0 as host_default.interface.
void MakeFakeNic(const std::filesystem::path& root, const std::string& iommu_type);
/// A state file with the discard path's results (msg_zerocopy 24576,
/// uring_send_zc_fixed 8192, measured in 2023): republished at start, they
/// go through the host-default rule without waiting for a probe. With the
/// host's own `fingerprint` (16 hex digits, as the agent logs it) the agent
/// finds no change of host and does not calibrate at start.
void SaveDiscardState(const std::filesystem::path& path,
                      const std::string& fingerprint = "0000000000000001");

}  // namespace zcal::agent::testing

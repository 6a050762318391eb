// The `apps:` settings: how the agent reads the applications' report
// objects (docs/config.md) and what it learns from them.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace zcal::agent {

/// When a report whose owner_pid no longer runs (kill(pid, 0): ESRCH)
/// counts as its process's exit (apps.owner_check).
enum class AppsOwnerCheck : std::uint8_t {
  /// Only when the agent runs in the host's initial pid namespace, where
  /// the writers' pids (as they wrote them) are most likely its own.
  kAuto,
  kOn,   ///< always: the agent shares the writers' pid namespace
  kOff,  ///< never: only CLOSED objects and vanished files count as exits
};

struct AppsSettings {
  /// Read the report objects at all (each heartbeat).
  bool enabled = true;
  /// Where the objects are: POSIX shared memory's directory.
  std::string directory = "/dev/shm";
  /// Objects read per heartbeat at most; more are counted as refused.
  std::uint32_t max_objects = 256;
  /// Application names with series of their own; more are summed under
  /// "other".
  std::uint32_t max_names = 32;
  /// Owners (file uid) whose objects are read; empty: any user's.
  std::vector<std::uint32_t> uids;
  /// Whether a gone owner pid means an exited process (whose object is
  /// folded and removed).
  AppsOwnerCheck owner_check = AppsOwnerCheck::kAuto;
  /// What "recent" means for the field-contradiction rule and the traffic
  /// mix.
  std::chrono::seconds window = std::chrono::hours(1);
  /// A scope is contradicted when, within the window, its applications'
  /// zerocopy completions number at least `contradiction_min_completions`
  /// and at least this share of them came back copied.
  double contradiction_share = 0.5;
  std::uint64_t contradiction_min_completions = 1000;
  /// Decide thresholds for the applications' size mix where, within the
  /// window, at least `mix_min_sends` sends of the scope were reported.
  bool mix = true;
  std::uint64_t mix_min_sends = 1000;

  bool operator==(const AppsSettings&) const = default;
};

}  // namespace zcal::agent

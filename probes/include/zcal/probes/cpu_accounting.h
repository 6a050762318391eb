// CPU accounting for probes: the sending thread's own time and the host's
// busy time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace zcal::probes {

/// User + system CPU time of the calling thread, in nanoseconds
/// (CLOCK_THREAD_CPUTIME_ID: the scheduler's runtime of the thread, exact to
/// the context switch; getrusage can be a scheduler tick off).
std::uint64_t ThreadCpuNs();

/// Busy time of all CPUs since boot, in nanoseconds: user + nice + system +
/// irq + softirq + steal of the "cpu" line of ROOT/proc/stat (clock-tick
/// resolution, usually 10 ms). nullopt when the file is missing or
/// malformed.
std::optional<std::uint64_t> HostBusyCpuNs(const std::string& root);

/// Both clocks, read one after the other at one instant.
struct CpuSnapshot {
  std::uint64_t thread_ns = 0;
  std::optional<std::uint64_t> host_busy_ns;

  static CpuSnapshot Take(const std::string& root);
};

}  // namespace zcal::probes

// CPU accounting for probes: the sending thread's own time, the host's
// busy time, and the load of the whole host while a calibration probes.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

/// Both clocks, read one after the other around a measured window. Reading
/// /proc/stat costs the thread 20-100 us of CPU, so it stays outside the
/// window on both ends: Before reads the host's clock, then the thread's;
/// After the thread's, then the host's.
struct CpuSnapshot {
  std::uint64_t thread_ns = 0;
  std::optional<std::uint64_t> host_busy_ns;

  static CpuSnapshot Before(const std::string& root);
  static CpuSnapshot After(const std::string& root);
};

/// The host-wide counters of /proc/stat that say how loaded the host is.
/// Ticks are USER_HZ (sysconf(_SC_CLK_TCK)) summed over all CPUs.
struct HostCpuCounters {
  /// user + nice + system + irq + softirq + steal of the "cpu" line
  /// (guest time is already in user and nice).
  std::uint64_t busy_ticks = 0;
  std::uint64_t steal_ticks = 0;  ///< taken by the hypervisor for others
  std::uint64_t total_ticks = 0;  ///< busy + idle + iowait
  /// procs_running: tasks runnable at the instant of the read, the reader
  /// included.
  std::uint32_t procs_running = 0;
};

/// Parses the text of /proc/stat: the "cpu" line (at least its eight
/// fields user..steal) and the procs_running line. nullopt when either is
/// missing or malformed.
std::optional<HostCpuCounters> ParseProcStat(std::string_view text);

/// ParseProcStat of ROOT/proc/stat; nullopt when unreadable or malformed.
std::optional<HostCpuCounters> ReadHostCpuCounters(const std::string& root);

/// The load of the whole host over a calibration's probes (from before its
/// first probe to after its last): what its result was measured under.
struct HostLoad {
  /// Share of all CPUs' time that was busy, in [0, 1]: every process of
  /// the host, the calibration's own included.
  double busy_share = 0;
  /// Share of all CPUs' time a hypervisor gave to other guests, in [0, 1]
  /// (part of busy_share).
  double steal_share = 0;
  /// Share of all CPUs' time this process used (the probes' senders, a
  /// loopback sink), in [0, 1]: busy_share - own_share is the rest of the
  /// host's load.
  double own_share = 0;
  /// procs_running read before each probe: mean and maximum. Counts the
  /// calibrating thread itself (1 on an otherwise idle host).
  double runnable_mean = 0;
  std::uint32_t runnable_max = 0;
  /// How long the window was, seconds, and how many reads of procs_running
  /// the means are of.
  double window_seconds = 0;
  std::uint32_t runnable_reads = 0;
};

/// The load between two readings of the counters, of which `own_cpu_ns`
/// was this process's CPU time, with `runnable` the procs_running reads in
/// between. nullopt when the counters did not advance (a window shorter
/// than a tick) or went backwards.
std::optional<HostLoad> LoadBetween(const HostCpuCounters& before, const HostCpuCounters& after,
                                    std::uint64_t own_cpu_ns, double window_seconds,
                                    const std::vector<std::uint32_t>& runnable);

/// Measures the host's load over a calibration: Start before the first
/// probe, Sample before each, Finish after the last. Reads ROOT/proc/stat
/// (about 50 us each, outside the probes' measured windows) and this
/// process's CPU clock. Not thread-safe.
class HostLoadMeter {
 public:
  explicit HostLoadMeter(std::string root) : root_(std::move(root)) {}
  void Start();
  void Sample();
  /// nullopt when /proc/stat could not be read or the window was shorter
  /// than a clock tick.
  std::optional<HostLoad> Finish() const;

 private:
  std::string root_;
  std::optional<HostCpuCounters> start_;
  std::uint64_t start_own_ns_ = 0;
  std::chrono::steady_clock::time_point start_time_{};
  std::vector<std::uint32_t> runnable_;
};

}  // namespace zcal::probes

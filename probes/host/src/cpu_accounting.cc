#include "zcal/probes/host/cpu_accounting.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <sstream>

#include "zcal/probes/host/sysfs.h"

namespace zcal::probes {

std::uint64_t ThreadCpuNs() {
  // The scheduler's own runtime of the thread, in nanoseconds. Not
  // getrusage(RUSAGE_THREAD): on tick-based kernels that is off by up to a
  // tick (~2 ms measured here), which is 10 % of a 20 ms probe.
  timespec ts{};
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

namespace {

// The "cpu" line of /proc/stat: user nice system idle iowait irq softirq
// steal (guest time is already part of user and nice).
std::optional<HostCpuCounters> ParseCpuLine(const std::string& line) {
  std::istringstream fields(line);
  std::string label;
  fields >> label;
  if (label != "cpu") return std::nullopt;
  std::uint64_t f[8] = {};
  for (auto& value : f) {
    if (!(fields >> value)) return std::nullopt;
  }
  HostCpuCounters c;
  c.busy_ticks = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
  c.steal_ticks = f[7];
  c.total_ticks = c.busy_ticks + f[3] + f[4];
  return c;
}

std::uint64_t ProcessCpuNs() {
  timespec ts{};
  if (::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

std::optional<std::uint64_t> HostBusyCpuNs(const std::string& root) {
  const auto text = ReadFirstLine(UnderRoot(root, "proc/stat"));
  if (!text) return std::nullopt;
  const auto counters = ParseCpuLine(*text);
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (!counters || hz <= 0) return std::nullopt;
  return counters->busy_ticks * (1000000000ULL / static_cast<std::uint64_t>(hz));
}

CpuSnapshot CpuSnapshot::Before(const std::string& root) {
  CpuSnapshot snapshot;
  snapshot.host_busy_ns = HostBusyCpuNs(root);
  snapshot.thread_ns = ThreadCpuNs();
  return snapshot;
}

CpuSnapshot CpuSnapshot::After(const std::string& root) {
  CpuSnapshot snapshot;
  snapshot.thread_ns = ThreadCpuNs();
  snapshot.host_busy_ns = HostBusyCpuNs(root);
  return snapshot;
}

std::optional<HostCpuCounters> ParseProcStat(std::string_view text) {
  std::optional<HostCpuCounters> counters;
  std::optional<std::uint32_t> running;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string label;
    fields >> label;
    if (label == "cpu" && !counters) {
      counters = ParseCpuLine(line);
      if (!counters) return std::nullopt;
    } else if (label == "procs_running") {
      std::uint32_t value = 0;
      if (!(fields >> value)) return std::nullopt;
      running = value;
    }
  }
  if (!counters || !running) return std::nullopt;
  counters->procs_running = *running;
  return counters;
}

std::optional<HostCpuCounters> ReadHostCpuCounters(const std::string& root) {
  const auto text = ReadSmallFile(UnderRoot(root, "proc/stat"));
  if (!text) return std::nullopt;
  return ParseProcStat(*text);
}

std::optional<HostLoad> LoadBetween(const HostCpuCounters& before, const HostCpuCounters& after,
                                    std::uint64_t own_cpu_ns, double window_seconds,
                                    const std::vector<std::uint32_t>& runnable) {
  if (after.total_ticks <= before.total_ticks || after.busy_ticks < before.busy_ticks ||
      after.steal_ticks < before.steal_ticks) {
    return std::nullopt;
  }
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (hz <= 0) return std::nullopt;
  const auto total = static_cast<double>(after.total_ticks - before.total_ticks);
  HostLoad load;
  load.busy_share = std::min(1.0, static_cast<double>(after.busy_ticks - before.busy_ticks) / total);
  load.steal_share =
      std::min(1.0, static_cast<double>(after.steal_ticks - before.steal_ticks) / total);
  const double total_ns = total * 1e9 / static_cast<double>(hz);
  load.own_share = std::min(1.0, static_cast<double>(own_cpu_ns) / total_ns);
  load.window_seconds = window_seconds;
  load.runnable_reads = static_cast<std::uint32_t>(runnable.size());
  if (!runnable.empty()) {
    load.runnable_mean = std::accumulate(runnable.begin(), runnable.end(), 0.0) /
                         static_cast<double>(runnable.size());
    load.runnable_max = *std::max_element(runnable.begin(), runnable.end());
  }
  return load;
}

void HostLoadMeter::Start() {
  start_ = ReadHostCpuCounters(root_);
  start_own_ns_ = ProcessCpuNs();
  start_time_ = std::chrono::steady_clock::now();
  runnable_.clear();
}

void HostLoadMeter::Sample() {
  if (const auto counters = ReadHostCpuCounters(root_)) {
    runnable_.push_back(counters->procs_running);
  }
}

std::optional<HostLoad> HostLoadMeter::Finish() const {
  if (!start_) return std::nullopt;
  const auto end = ReadHostCpuCounters(root_);
  if (!end) return std::nullopt;
  const std::uint64_t own = ProcessCpuNs() - start_own_ns_;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time_).count();
  return LoadBetween(*start_, *end, own, seconds, runnable_);
}

}  // namespace zcal::probes

// Clock readings in the units zcal stores and publishes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace zcal::common {

/// CLOCK_REALTIME in nanoseconds since the Unix epoch: the time stamps of
/// the segment, the state file and the metrics.
std::uint64_t RealtimeNs();

/// CLOCK_REALTIME in seconds since the Unix epoch, with a fraction.
double RealtimeSeconds();

/// A realtime stamp (ns since the epoch) as UTC text: `format` is for
/// strftime(3) ("%Y-%m-%dT%H:%M:%SZ"); `zero` is the text for 0 (no time,
/// "never" or "unknown").
std::string FormatUtc(std::uint64_t ns, const char* format, std::string_view zero);

/// The clocks a long-running part reads, taken as a dependency so that a
/// test can step the wall clock. The rule that makes a step of the wall
/// clock harmless: every interval (timers, schedules, budgets, ages of what
/// this process measured) comes from Steady(); Wall() is only a stamp that
/// is written (segment, state file, metrics) or compared with a stamp
/// written by another process or an earlier run.
/// Thread safety: implementations are safe to read from any thread.
class Clock {
 public:
  virtual ~Clock() = default;
  /// CLOCK_REALTIME in nanoseconds since the Unix epoch; may jump.
  virtual std::uint64_t Wall() const = 0;
  /// CLOCK_MONOTONIC: never jumps.
  virtual std::chrono::steady_clock::time_point Steady() const = 0;
  /// Wall() in seconds, with a fraction.
  double WallSeconds() const;
};

/// The system's clocks (RealtimeNs, steady_clock); one shared instance.
std::shared_ptr<const Clock> SystemClock();

/// A wall clock stepped relative to the steady one by more than this
/// between two checks is reported as a step; slewing (NTP: at most
/// 500 ppm) stays far below it between two heartbeats of a minute.
inline constexpr std::chrono::seconds kWallStepThreshold{2};

/// Watches the offset of the wall clock to the steady clock (wall minus
/// steady), which only a step (settimeofday, an NTP step, a suspend that
/// stops CLOCK_MONOTONIC) changes by more than kWallStepThreshold.
/// Not thread-safe: one caller checks.
class WallStepDetector {
 public:
  /// The step since the previous call, in nanoseconds (positive: the wall
  /// clock went forward), when it exceeds kWallStepThreshold; nullopt
  /// otherwise and on the first call, which only takes the offset.
  std::optional<std::int64_t> Check(const Clock& clock);

 private:
  std::optional<std::int64_t> offset_ns_;
};

/// Clock::Steady() as nanoseconds of CLOCK_MONOTONIC, for stamps kept in
/// integers.
inline std::int64_t SteadyNs(const Clock& clock) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             clock.Steady().time_since_epoch())
      .count();
}

/// Nanoseconds as seconds.
inline double NsToSeconds(std::uint64_t ns) {
  return static_cast<double>(ns) * 1e-9;
}

}  // namespace zcal::common

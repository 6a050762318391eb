// A Clock for tests: both clocks stand still until moved; StepWall moves
// the wall clock alone, as settimeofday or an NTP step does.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "zcal/common/clock.h"

namespace zcal::common {

class FakeClock final : public Clock {
 public:
  /// Starts at `wall_ns` on the wall clock and at an arbitrary steady time.
  explicit FakeClock(std::uint64_t wall_ns = 1'800'000'000'000'000'000ULL)
      : wall_ns_(wall_ns) {}

  std::uint64_t Wall() const override { return wall_ns_.load(); }
  std::chrono::steady_clock::time_point Steady() const override {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(steady_ns_.load()));
  }

  /// Time passes: both clocks move by `d`.
  void Advance(std::chrono::nanoseconds d) {
    wall_ns_ += static_cast<std::uint64_t>(d.count());
    steady_ns_ += d.count();
  }
  /// The wall clock alone jumps by `d` (negative: back).
  void StepWall(std::chrono::nanoseconds d) {
    wall_ns_ += static_cast<std::uint64_t>(d.count());  // wraps as intended for d < 0
  }

 private:
  std::atomic<std::uint64_t> wall_ns_;
  std::atomic<std::int64_t> steady_ns_{1'000'000'000'000};
};

}  // namespace zcal::common

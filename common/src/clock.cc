#include "zcal/common/clock.h"

#include <time.h>

#include <ctime>

namespace zcal::common {
namespace {

std::uint64_t Read(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

std::uint64_t RealtimeNs() { return Read(CLOCK_REALTIME); }
double RealtimeSeconds() { return NsToSeconds(RealtimeNs()); }

double Clock::WallSeconds() const { return NsToSeconds(Wall()); }

namespace {

class System final : public Clock {
 public:
  std::uint64_t Wall() const override { return RealtimeNs(); }
  std::chrono::steady_clock::time_point Steady() const override {
    return std::chrono::steady_clock::now();
  }
};

}  // namespace

std::shared_ptr<const Clock> SystemClock() {
  static const std::shared_ptr<const Clock> clock = std::make_shared<System>();
  return clock;
}

std::optional<std::int64_t> WallStepDetector::Check(const Clock& clock) {
  const std::int64_t steady = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  clock.Steady().time_since_epoch())
                                  .count();
  const std::int64_t offset = static_cast<std::int64_t>(clock.Wall()) - steady;
  const std::optional<std::int64_t> previous = offset_ns_;
  offset_ns_ = offset;
  if (!previous) return std::nullopt;
  const std::int64_t step = offset - *previous;
  const std::int64_t threshold =
      std::chrono::duration_cast<std::chrono::nanoseconds>(kWallStepThreshold).count();
  if (step > threshold || step < -threshold) return step;
  return std::nullopt;
}

std::string FormatUtc(std::uint64_t ns, const char* format, std::string_view zero) {
  if (ns == 0) return std::string(zero);
  const time_t seconds = static_cast<time_t>(ns / 1'000'000'000U);
  tm parts{};
  gmtime_r(&seconds, &parts);
  char text[64];
  const std::size_t length = std::strftime(text, sizeof text, format, &parts);
  return std::string(text, length);
}

}  // namespace zcal::common

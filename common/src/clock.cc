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
std::uint64_t MonotonicNs() { return Read(CLOCK_MONOTONIC); }

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

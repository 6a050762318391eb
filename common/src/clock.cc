#include "zcal/common/clock.h"

#include <time.h>

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

}  // namespace zcal::common

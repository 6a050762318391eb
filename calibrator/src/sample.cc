#include "zcal/calibrator/sample.h"

namespace zcal::calibrator {

double Sample::ThroughputBytesPerSecond() const {
  if (wall_ns == 0) return 0;
  return static_cast<double>(bytes) * 1e9 / static_cast<double>(wall_ns);
}

double Sample::CpuNsPerByte() const {
  if (bytes == 0) return 0;
  return static_cast<double>(cpu_ns) / static_cast<double>(bytes);
}

std::optional<double> Sample::CopiedFraction() const {
  if (zc_completions == 0) return std::nullopt;
  return static_cast<double>(zc_copied) / static_cast<double>(zc_completions);
}

}  // namespace zcal::calibrator

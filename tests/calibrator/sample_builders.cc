#include "sample_builders.h"

#include <cmath>

namespace zcal::calibrator::testing {

Sample Row(Method method, std::uint64_t size, double mb_per_s, double cpu_pct,
           double copied_pct) {
  Sample s;
  s.method = method;
  s.size_bytes = size;
  s.wall_ns = 1'000'000'000;
  s.bytes = static_cast<std::uint64_t>(std::llround(mb_per_s * 1e6));
  s.cpu_ns = static_cast<std::uint64_t>(std::llround(cpu_pct * 1e7));
  if (copied_pct >= 0) {
    s.zc_completions = 1000;
    s.zc_copied = static_cast<std::uint64_t>(std::llround(copied_pct * 10));
  }
  return s;
}

std::vector<Sample> Table(Method zerocopy, Method baseline,
                          std::initializer_list<Pair> rows) {
  std::vector<Sample> out;
  for (const Pair& p : rows) {
    out.push_back(Row(zerocopy, p.size, p.zc_mbps, p.zc_cpu));
    out.push_back(Row(baseline, p.size, p.base_mbps, p.base_cpu));
  }
  return out;
}

}  // namespace zcal::calibrator::testing

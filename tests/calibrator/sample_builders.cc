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

double CpuBoundCopyNs(double size) { return 500 + 0.10 * size; }

double CpuBoundStreamZcNs(double size) { return 1500 + 0.02 * size; }

Sample CpuBoundProbe(Method method, std::uint64_t size, std::uint32_t depth, double ns_per_send,
                     double cpu_share) {
  Sample s;
  s.path = "discard";
  s.method = method;
  s.size_bytes = size;
  s.depth = depth;
  const double cpu = 1e9 * cpu_share;
  s.cpu_ns = static_cast<std::uint64_t>(cpu);
  s.wall_ns = 1'000'000'000;
  s.bytes = static_cast<std::uint64_t>(std::llround(cpu / ns_per_send)) * size;
  return s;
}

}  // namespace zcal::calibrator::testing

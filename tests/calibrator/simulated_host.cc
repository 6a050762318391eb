#include "simulated_host.h"

#include <algorithm>
#include <cmath>

namespace zcal::calibrator::testing {

double SimulatedHost::CpuPerByte(Method m, std::uint64_t size) const {
  const auto it = costs.find(m);
  const SimCost c = it != costs.end() ? it->second : costs.at(Method::kCopy);
  const double s = static_cast<double>(size);
  double cpu = c.per_byte_ns + (c.per_send_exponent == 1
                                    ? c.per_send_ns / s
                                    : c.per_send_ns * std::pow(s, -c.per_send_exponent));
  if (const auto k = knee.find(m); k != knee.end() && size > k->second.size_bytes) {
    cpu += k->second.extra_per_byte_ns * (s - static_cast<double>(k->second.size_bytes)) / s;
  }
  if (const auto f = local_factor.find({m, size}); f != local_factor.end()) cpu *= f->second;
  if (const auto f = step.find(m); f != step.end() && size >= f->second.first) {
    cpu *= f->second.second;
  }
  return cpu;
}

double SimulatedHost::ThroughputBytesPerNs(Method m, std::uint64_t size) const {
  if (!cpu_bound) return line_rate_bytes_per_ns;
  return std::min(line_rate_bytes_per_ns, 1 / CpuPerByte(m, size));
}

double SimulatedHost::TrueThreshold(Method zerocopy, Method baseline, double margin) const {
  const SimCost z = costs.at(zerocopy);
  const SimCost b = costs.contains(baseline) ? costs.at(baseline) : costs.at(Method::kCopy);
  const double k = 1 - margin;
  return (z.per_send_ns - k * b.per_send_ns) / (k * b.per_byte_ns - z.per_byte_ns);
}

Sample SimulatedHost::Probe(const ProbeRequest& r, std::mt19937_64& rng) const {
  std::uniform_real_distribution<double> jitter(1 - noise, 1 + noise);
  Sample s;
  s.method = r.method;
  s.size_bytes = r.size_bytes;
  s.repeat = r.repeat;
  s.wall_ns = 100'000'000;
  const double rate = ThroughputBytesPerNs(r.method, r.size_bytes);
  s.bytes = static_cast<std::uint64_t>(rate * 1e8 * jitter(rng));
  const double cpu = CpuPerByte(r.method, r.size_bytes) * static_cast<double>(s.bytes);
  s.cpu_ns = static_cast<std::uint64_t>(cpu * jitter(rng));
  if (IsZerocopy(r.method)) {
    s.zc_completions = 1000;
    s.zc_copied = kernel_copies ? 1000 : 0;
  }
  return s;
}

std::vector<Sample> SimulatedHost::Table(const std::vector<Method>& methods,
                                         const std::vector<std::uint64_t>& sizes,
                                         int repeats, std::mt19937_64& rng) const {
  std::vector<Sample> out;
  for (int r = 0; r < repeats; ++r) {
    for (std::uint64_t size : sizes) {
      for (Method m : methods) {
        out.push_back(Probe({m, size, static_cast<std::uint32_t>(r)}, rng));
      }
    }
  }
  return out;
}

std::vector<std::uint64_t> GeometricSizes(std::uint64_t lo, std::uint64_t hi,
                                          int steps_per_octave) {
  std::vector<std::uint64_t> sizes;
  for (int k = 0;; ++k) {
    const double size = static_cast<double>(lo) * std::exp2(double(k) / steps_per_octave);
    if (size > static_cast<double>(hi) * 1.0001) break;
    sizes.push_back(static_cast<std::uint64_t>(std::llround(size)));
  }
  return sizes;
}

Calibration Calibrate(const SimulatedHost& host, PlannerOptions options,
                      std::uint64_t seed, std::optional<std::size_t> clock_probes) {
  std::mt19937_64 rng(seed);
  SweepPlanner planner(std::move(options));
  Calibration run;
  for (;;) {
    if (clock_probes) planner.SetProbesLeft(*clock_probes - run.probes);
    const auto request = planner.Next();
    if (!request) break;
    if (clock_probes && run.probes >= *clock_probes) {
      run.clock_ended = !planner.Unfinished().empty();
      break;
    }
    planner.Record(host.Probe(*request, rng));
    ++run.probes;
  }
  run.analysis = planner.Result();
  run.samples = planner.samples();
  return run;
}

}  // namespace zcal::calibrator::testing

// How short a probe on the discard path may be: runs, interleaved
// in one namespace, ROUNDS rounds of every method at 4 and 16 KiB for each
// probe duration, and prints per duration the scatter of CPU per byte from
// probe to probe (robust relative spread, 1.4826 * MAD / median, over the
// methods and sizes) and the time a probe takes beyond its sending
// (allocation, socket, sender set-up, completions, CPU snapshots), and the
// median CPU per byte against the longest probes' (a short probe must not
// measure another cost: warm-up, the drain of the completions), and what
// decides a threshold: each zerocopy method's median CPU per byte over its
// baseline's, against the same ratio of the longest probes. The probes cut
// their buffers from one arena, as a calibration's do.
//
// The calibration runner's durations follow from it: a shorter probe costs
// less of the budget; it is too short once its scatter grows faster than
// the number of probes the budget then allows (a spread s from n probes
// narrows like s / sqrt(n), so a probe half as long must not scatter more
// than sqrt(2) times as much).
//
//   discard_probe_durations [ROUNDS] [DURATIONS_MS...]   (default 12; 2 5 10 20 50)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "zcal/calibrator/method.h"
#include "zcal/probes/discard/discard.h"
#include "zcal/probes/send/buffer_pool.h"
#include "zcal/probes/send/probe.h"
#include "zcal/probes/send/probe_runner.h"

namespace {

using zcal::calibrator::Method;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double RelativeSpread(const std::vector<double>& v) {
  const double m = Median(v);
  std::vector<double> deviation;
  for (double x : v) deviation.push_back(std::fabs(x - m));
  return 1.4826 * Median(deviation) / m;
}

}  // namespace

int main(int argc, char** argv) {
  namespace probes = zcal::probes;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 12;
  std::vector<double> durations_ms;
  for (int i = 2; i < argc; ++i) durations_ms.push_back(std::strtod(argv[i], nullptr));
  if (durations_ms.empty()) durations_ms = {2, 5, 10, 20, 50};
  if (rounds < 3) {
    std::fprintf(stderr, "usage: discard_probe_durations [ROUNDS >= 3] [DURATIONS_MS...]\n");
    return 2;
  }
  auto discard = probes::DiscardNamespace::Create();
  if (!discard) {
    std::fprintf(stderr, "discard_probe_durations: %s\n", discard.error().message.c_str());
    return 1;
  }
  const std::uint64_t sizes[] = {4096, 16384};
  probes::BufferArena arena;
  // (duration index, method, size) -> CPU per byte of each probe
  std::map<std::tuple<std::size_t, Method, std::uint64_t>, std::vector<double>> cpu;
  std::vector<double> overhead_ms(durations_ms.size(), 0);
  std::vector<int> probes_run(durations_ms.size(), 0);
  for (int r = 0; r < rounds; ++r) {
    for (std::uint64_t size : sizes) {
      for (std::size_t d = 0; d < durations_ms.size(); ++d) {
        for (Method m : zcal::calibrator::kAllMethods) {
          probes::ProbeOptions o;
          o.method = m;
          o.size_bytes = size;
          o.path = "discard";
          o.duration = std::chrono::duration_cast<std::chrono::nanoseconds>(
              std::chrono::duration<double, std::milli>(durations_ms[d]));
          const auto start = std::chrono::steady_clock::now();
          const auto s = probes::DiscardProbeOn(**discard, o, &arena).sample;
          const double took = std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - start).count();
          if (!s.ok()) {
            std::fprintf(stderr, "%s at %llu bytes: %s\n",
                         std::string(zcal::calibrator::MethodName(m)).c_str(),
                         static_cast<unsigned long long>(size), s.error.c_str());
            continue;
          }
          cpu[{d, m, size}].push_back(s.CpuNsPerByte());
          overhead_ms[d] += took - durations_ms[d];
          ++probes_run[d];
        }
      }
    }
  }
  std::printf("%d rounds, 5 methods at 4 and 16 KiB, durations interleaved\n", rounds);
  std::printf("%12s %22s %20s %24s %24s %22s\n", "probe (ms)", "CPU/byte spread (med)",
              "CPU/byte vs longest", "beyond sending (ms)", "spread x sqrt(ms+over)",
              "zc/base vs longest");
  const std::size_t longest = static_cast<std::size_t>(
      std::max_element(durations_ms.begin(), durations_ms.end()) - durations_ms.begin());
  for (std::size_t d = 0; d < durations_ms.size(); ++d) {
    std::vector<double> spreads;
    std::vector<double> bias;  // median CPU per byte over the longest probes'
    for (const auto& [key, values] : cpu) {
      if (std::get<0>(key) != d || values.size() < 3) continue;
      spreads.push_back(RelativeSpread(values));
      const auto reference = cpu.find({longest, std::get<1>(key), std::get<2>(key)});
      if (reference != cpu.end() && !reference->second.empty()) {
        bias.push_back(Median(values) / Median(reference->second));
      }
    }
    if (spreads.empty() || probes_run[d] == 0) continue;
    // Per zerocopy method and size: (zc / baseline at d) / (the same at
    // the longest duration); the range over methods and sizes.
    std::vector<double> ratio_bias;
    for (const auto& [zerocopy, baseline] :
         {std::pair{Method::kMsgZerocopy, Method::kCopy},
          std::pair{Method::kUringSendZc, Method::kUringSend},
          std::pair{Method::kUringSendZcFixed, Method::kUringSend}}) {
      for (std::uint64_t size : sizes) {
        const auto z = cpu.find({d, zerocopy, size}), b = cpu.find({d, baseline, size});
        const auto zl = cpu.find({longest, zerocopy, size}), bl = cpu.find({longest, baseline, size});
        if (z == cpu.end() || b == cpu.end() || zl == cpu.end() || bl == cpu.end()) continue;
        ratio_bias.push_back((Median(z->second) / Median(b->second)) /
                             (Median(zl->second) / Median(bl->second)));
      }
    }
    const double low = ratio_bias.empty() ? NAN : *std::min_element(ratio_bias.begin(), ratio_bias.end());
    const double high = ratio_bias.empty() ? NAN : *std::max_element(ratio_bias.begin(), ratio_bias.end());
    const double over = overhead_ms[d] / probes_run[d];
    const double spread = Median(spreads);
    // Relative width of what a fixed budget buys: spread / sqrt(probes),
    // probes proportional to 1 / (duration + overhead).
    std::printf("%12.1f %21.1f %% %20.3f %24.1f %24.3f %10.3f..%.3f\n", durations_ms[d],
                100 * spread, bias.empty() ? NAN : Median(bias), over,
                spread * std::sqrt(durations_ms[d] + over), low, high);
  }
  return 0;
}

// Does running two discard probes at once bias what a calibration decides
// on? Runs, interleaved in one process, ROUNDS rounds of each zerocopy
// method and its baseline at 4, 16 and 64 KiB (65,507 bytes), 10 ms each,
// two ways: one after the other on one lane (as a calibration with one
// lane does), and at the same time on two lanes, each with a namespace and
// an arena of its own (as a calibration with two lanes does). Prints per
// method and size the median CPU per byte of each way against the other,
// and what decides a threshold: the zerocopy method's median over its
// baseline's, at once against one after the other.
//
//   discard_lanes [ROUNDS]   (default 16)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "zcal/calibrator/method.h"
#include "zcal/probes/discard/discard.h"
#include "zcal/probes/send/buffer_pool.h"
#include "zcal/probes/send/probe_runner.h"

namespace {

using zcal::calibrator::Method;
namespace probes = zcal::probes;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Lane {
  std::unique_ptr<probes::DiscardNamespace> discard;
  probes::BufferArena arena;
};

double CpuPerByte(Lane& lane, Method method, std::uint64_t size) {
  probes::ProbeOptions o;
  o.method = method;
  o.size_bytes = size;
  o.path = "discard";
  o.duration = std::chrono::milliseconds(10);
  const auto s = probes::DiscardProbeOn(*lane.discard, o, &lane.arena).sample;
  if (!s.ok()) {
    std::fprintf(stderr, "%s at %llu bytes: %s\n", std::string(zcal::calibrator::MethodName(method)).c_str(),
                 static_cast<unsigned long long>(size), s.error.c_str());
    return -1;
  }
  return s.CpuNsPerByte();
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 16;
  if (rounds < 3) {
    std::fprintf(stderr, "usage: discard_lanes [ROUNDS >= 3]\n");
    return 2;
  }
  Lane lanes[2];
  for (Lane& lane : lanes) {
    auto created = probes::DiscardNamespace::Create();
    if (!created) {
      std::fprintf(stderr, "discard_lanes: %s\n", created.error().message.c_str());
      return 1;
    }
    lane.discard = std::move(*created);
  }
  const std::pair<Method, Method> pairs[] = {{Method::kMsgZerocopy, Method::kCopy},
                                             {Method::kUringSendZc, Method::kUringSend},
                                             {Method::kUringSendZcFixed, Method::kUringSend}};
  const std::uint64_t sizes[] = {4096, 16384, 65507};
  // (way, zerocopy method, size, method probed) -> CPU per byte; way 0 = one
  // after the other, 1 = at once.
  std::map<std::tuple<int, Method, std::uint64_t, Method>, std::vector<double>> cpu;
  for (int r = 0; r < rounds; ++r) {
    for (const auto& [zerocopy, baseline] : pairs) {
      for (std::uint64_t size : sizes) {
        // Alternate which way goes first, and which method, so that drift
        // hits both alike.
        for (int k = 0; k < 2; ++k) {
          const int way = (r + k) % 2;
          const Method first = (r % 2) ? zerocopy : baseline;
          const Method second = first == zerocopy ? baseline : zerocopy;
          double a = 0, b = 0;
          if (way == 0) {
            a = CpuPerByte(lanes[0], first, size);
            b = CpuPerByte(lanes[0], second, size);
          } else {
            std::thread other([&] { b = CpuPerByte(lanes[1], second, size); });
            a = CpuPerByte(lanes[0], first, size);
            other.join();
          }
          if (a > 0) cpu[{way, zerocopy, size, first}].push_back(a);
          if (b > 0) cpu[{way, zerocopy, size, second}].push_back(b);
        }
      }
    }
  }
  std::printf("%d rounds of 10 ms probes; medians; at once / one after the other\n", rounds);
  std::printf("%-22s %8s %16s %16s %22s\n", "zerocopy method", "size", "zerocopy CPU/B",
              "baseline CPU/B", "zerocopy / baseline");
  for (const auto& pair : pairs) {
    const Method zerocopy = pair.first;
    const Method baseline = pair.second;
    for (std::uint64_t size : sizes) {
      const auto m = [&](int way, Method method) { return Median(cpu[{way, zerocopy, size, method}]); };
      const double ratio_seq = m(0, zerocopy) / m(0, baseline);
      const double ratio_par = m(1, zerocopy) / m(1, baseline);
      std::printf("%-22s %8llu %16.3f %16.3f %10.3f (%.3f -> %.3f)\n",
                  std::string(zcal::calibrator::MethodName(zerocopy)).c_str(),
                  static_cast<unsigned long long>(size), m(1, zerocopy) / m(0, zerocopy),
                  m(1, baseline) / m(0, baseline), ratio_par / ratio_seq, ratio_seq, ratio_par);
    }
  }
  return 0;
}

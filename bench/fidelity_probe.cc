// One probe from the command line, for bench/fidelity.py: prints the sample
// as one JSON line. Sends to a sink in this process unless --sink is given.
//
//   fidelity_probe METHOD SIZE_BYTES SECONDS [--sink ADDR:PORT]
//                  [--in-flight BYTES] [--discard]
//
// --discard: the discard path instead (UDP to 127.0.0.2 in a private
// namespace with a blackhole qdisc, set up before the probe starts).
//   fidelity_probe sink PORT     (a sink on 127.0.0.1:PORT until killed)
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "zcal/calibrator/method.h"
#include "zcal/probes/discard/discard.h"
#include "zcal/probes/send/probe.h"
#include "zcal/probes/sink/sink.h"

int main(int argc, char** argv) {
  namespace probes = zcal::probes;
  if (argc == 3 && std::string(argv[1]) == "sink") {
    probes::SinkOptions options;
    options.listen.port = static_cast<std::uint16_t>(std::atoi(argv[2]));
    auto sink = probes::Sink::Start(options);
    if (!sink) {
      std::cerr << "fidelity_probe: " << sink.error().message << "\n";
      return 1;
    }
    std::cout << zcal::common::ToString((*sink)->endpoint()) << std::endl;
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  if (argc < 4) {
    std::cerr << "usage: fidelity_probe METHOD SIZE_BYTES SECONDS [--sink ADDR:PORT] "
                 "[--in-flight BYTES]\n";
    return 2;
  }
  const auto method = zcal::calibrator::ParseMethod(argv[1]);
  if (!method) {
    std::cerr << "fidelity_probe: unknown method " << argv[1] << "\n";
    return 2;
  }
  probes::ProbeOptions options;
  options.method = *method;
  options.size_bytes = std::strtoull(argv[2], nullptr, 10);
  options.duration = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(std::strtod(argv[3], nullptr)));
  std::unique_ptr<probes::Sink> sink;
  std::unique_ptr<probes::DiscardNamespace> discard;
  for (int i = 4; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--discard") {
      auto created = probes::DiscardNamespace::Create();
      if (!created) {
        std::cerr << "fidelity_probe: " << created.error().message << "\n";
        return 1;
      }
      discard = std::move(*created);
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "fidelity_probe: " << flag << " needs a value\n";
      return 2;
    }
    if (flag == "--sink") {
      auto endpoint = zcal::common::ParseHostPort(argv[i + 1]);
      if (!endpoint) {
        std::cerr << "fidelity_probe: " << endpoint.error().message << "\n";
        return 2;
      }
      options.sink = *endpoint;
    } else if (flag == "--in-flight") {
      options.in_flight_bytes = std::strtoull(argv[i + 1], nullptr, 10);
    } else {
      std::cerr << "fidelity_probe: unknown option " << flag << "\n";
      return 2;
    }
    ++i;
  }
  if (options.sink.port == 0 && discard == nullptr) {
    auto started = probes::Sink::Start({});
    if (!started) {
      std::cerr << "fidelity_probe: " << started.error().message << "\n";
      return 1;
    }
    sink = std::move(*started);
    options.sink = sink->endpoint();
  }
  const zcal::calibrator::Sample s =
      discard ? probes::RunDiscardProbe(*discard, options) : probes::RunProbe(options);
  nlohmann::json out = {
      {"method", argv[1]},
      {"size", s.size_bytes},
      {"ok", s.ok()},
      {"error", s.error},
      {"bytes", s.bytes},
      {"wall_ns", s.wall_ns},
      {"cpu_ns", s.cpu_ns},
      {"host_cpu_ns", s.host_cpu_ns ? nlohmann::json(*s.host_cpu_ns) : nlohmann::json()},
      {"zc_completions", s.zc_completions},
      {"zc_copied", s.zc_copied},
      {"enobufs", s.enobufs},
      {"mb_per_s", s.ThroughputBytesPerSecond() / 1e6},
      {"cpu_ns_per_byte", s.CpuNsPerByte()},
  };
  std::cout << out.dump() << "\n";
  return s.ok() ? 0 : 1;
}

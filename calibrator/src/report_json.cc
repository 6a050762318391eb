#include "zcal/calibrator/report_json.h"

#include <string>

namespace zcal::calibrator {

using nlohmann::json;

json ToJson(const SizeStats& stats) {
  return json{
      {"samples", stats.samples},
      {"throughput_bytes_per_second", stats.throughput_bytes_per_second.median},
      {"throughput_spread", stats.throughput_bytes_per_second.spread},
      {"cpu_ns_per_byte", stats.cpu_ns_per_byte.median},
      {"cpu_ns_per_byte_spread", stats.cpu_ns_per_byte.spread},
      {"copied_fraction", stats.copied_fraction
                              ? json(*stats.copied_fraction)
                              : json(nullptr)},
      {"enobufs", stats.enobufs},
  };
}

json ToJson(const MethodResult& result) {
  json sizes = json::array();
  for (const SizeComparison& c : result.sizes) {
    sizes.push_back(json{
        {"size", c.size_bytes},
        {"zerocopy_wins", c.zerocopy_wins},
        {"decisive", c.decisive},
        {"throughput_ratio", c.throughput_ratio},
        {"cpu_ratio", c.cpu_ratio},
        {"zerocopy", ToJson(c.zerocopy)},
        {"baseline", ToJson(c.baseline)},
    });
  }
  const std::string_view reason = ReasonName(result.reason);
  return json{
      {"verdict", VerdictName(result.verdict)},
      {"threshold_bytes", result.threshold_bytes ? json(*result.threshold_bytes)
                                                 : json(nullptr)},
      {"reason", reason.empty() ? json(nullptr) : json(reason)},
      {"detail", result.detail},
      {"baseline", MethodName(result.baseline)},
      {"baseline_substituted", result.baseline_substituted},
      {"confidence", result.confidence ? json(*result.confidence)
                                       : json(nullptr)},
      {"sizes", std::move(sizes)},
  };
}

json ToJson(const Analysis& analysis) {
  json paths = json::object();
  for (const auto& [name, path] : analysis.paths) {
    json methods = json::object();
    for (const auto& [method, result] : path.methods) {
      methods[std::string(MethodName(method))] = ToJson(result);
    }
    paths[name] = json{{"methods", std::move(methods)}};
  }
  return json{{"paths", std::move(paths)}};
}

}  // namespace zcal::calibrator

#include "zcal/agent/state/load_json.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

namespace zcal::agent {
namespace {

using nlohmann::json;

Result<double> Number(const json& object, const char* key, double high) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) {
    return Fail(Errc::kParse, std::string(key) + ": missing or not a number");
  }
  const double value = it->get<double>();
  if (!std::isfinite(value) || value < 0 || value > high) {
    const std::string range = high == 1 ? "a share in [0, 1]" : "a number >= 0";
    return Fail(Errc::kParse, std::string(key) + ": " + it->dump() + " is not " + range);
  }
  return value;
}

Result<std::uint32_t> Count(const json& object, const char* key) {
  const auto it = object.find(key);
  // A document built in memory holds a signed integer where a parsed one
  // holds an unsigned one.
  if (it == object.end() || !it->is_number_integer() ||
      (!it->is_number_unsigned() && it->get<std::int64_t>() < 0) ||
      it->get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max()) {
    return Fail(Errc::kParse, std::string(key) + ": missing or not a whole number below 2^32");
  }
  return static_cast<std::uint32_t>(it->get<std::uint64_t>());
}

}  // namespace

json HostLoadToJson(const std::optional<probes::HostLoad>& load) {
  if (!load) return nullptr;
  return {{"busy_share", load->busy_share},
          {"steal_share", load->steal_share},
          {"own_share", load->own_share},
          {"runnable_mean", load->runnable_mean},
          {"runnable_max", load->runnable_max},
          {"runnable_reads", load->runnable_reads},
          {"window_seconds", load->window_seconds}};
}

Result<std::optional<probes::HostLoad>> HostLoadFromJson(const json& j) {
  if (j.is_null()) return std::optional<probes::HostLoad>();
  if (!j.is_object()) return Fail(Errc::kParse, "not an object or null");
  constexpr double kAny = std::numeric_limits<double>::max();
  probes::HostLoad load;
  for (const auto& [key, out, high] :
       {std::tuple{"busy_share", &load.busy_share, 1.0},
        std::tuple{"steal_share", &load.steal_share, 1.0},
        std::tuple{"own_share", &load.own_share, 1.0},
        std::tuple{"runnable_mean", &load.runnable_mean, kAny},
        std::tuple{"window_seconds", &load.window_seconds, kAny}}) {
    const Result<double> value = Number(j, key, high);
    if (!value) return tl::unexpected(value.error());
    *out = *value;
  }
  for (const auto& [key, out] : {std::pair{"runnable_max", &load.runnable_max},
                                 std::pair{"runnable_reads", &load.runnable_reads}}) {
    const Result<std::uint32_t> value = Count(j, key);
    if (!value) return tl::unexpected(value.error());
    *out = *value;
  }
  return std::optional<probes::HostLoad>(load);
}

}  // namespace zcal::agent

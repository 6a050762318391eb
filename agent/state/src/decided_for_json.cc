#include "zcal/agent/state/decided_for_json.h"

#include <cmath>

namespace zcal::agent {

using nlohmann::json;

json DecidedForToJson(const DecidedFor& decided_for) {
  json bins = json::array();
  for (const calibrator::TrafficBin& bin : decided_for.mix.bins) {
    bins.push_back({{"size_bytes", bin.size_bytes}, {"weight", bin.weight}});
  }
  json depths = json::object();
  for (const auto& [depth, share] : decided_for.mix.depth_shares) {
    depths[std::string(DepthClassName(depth))] = share;
  }
  return {{"source", MixSourceName(decided_for.source)},
          {"window_seconds", decided_for.mix.window_seconds},
          {"sends", decided_for.mix.sends},
          {"bins", std::move(bins)},
          {"depths", std::move(depths)}};
}

namespace {

Result<void> ReadCount(const json& j, const char* key, std::uint64_t& out) {
  const auto it = j.find(key);
  if (it == j.end()) return {};
  if (!it->is_number_unsigned()) {
    return Fail(Errc::kParse, std::string(key) + ": not a whole number");
  }
  out = it->get<std::uint64_t>();
  return {};
}

Result<void> ReadBins(const json& j, std::vector<calibrator::TrafficBin>& out) {
  const auto it = j.find("bins");
  if (it == j.end()) return {};
  if (!it->is_array()) return Fail(Errc::kParse, "bins: not an array");
  for (const json& bin : *it) {
    const auto size = bin.is_object() ? bin.find("size_bytes") : bin.end();
    const auto weight = bin.is_object() ? bin.find("weight") : bin.end();
    if (size == bin.end() || !size->is_number_unsigned() || size->get<std::uint64_t>() == 0 ||
        weight == bin.end() || !weight->is_number() || !std::isfinite(weight->get<double>()) ||
        weight->get<double>() < 0) {
      return Fail(Errc::kParse,
                  "bins: each must be {\"size_bytes\": >= 1, \"weight\": a number >= 0}");
    }
    out.push_back({size->get<std::uint64_t>(), weight->get<double>()});
  }
  return {};
}

Result<void> ReadDepths(const json& j, std::map<DepthClass, double>& out) {
  const auto it = j.find("depths");
  if (it == j.end()) return {};
  if (!it->is_object()) return Fail(Errc::kParse, "depths: not an object");
  for (const auto& [name, share] : it->items()) {
    const std::optional<DepthClass> depth = ParseDepthClass(name);
    if (!depth || !share.is_number() || !(share.get<double>() >= 0 && share.get<double>() <= 1)) {
      return Fail(Errc::kParse, "depths: '" + name +
                                    "' must be a depth class (1, 4, 16, stream) with a "
                                    "share in [0, 1]");
    }
    out[*depth] = share.get<double>();
  }
  return {};
}

}  // namespace

Result<DecidedFor> DecidedForFromJson(const json& j) {
  if (!j.is_object()) return Fail(Errc::kParse, "not an object");
  const auto source = j.find("source");
  const std::optional<MixSource> parsed =
      source != j.end() && source->is_string() ? ParseMixSource(source->get<std::string>())
                                               : std::nullopt;
  if (!parsed) {
    return Fail(Errc::kParse, "source: " +
                                  (source == j.end() ? std::string("missing")
                                                     : "'" + source->dump() + "'") +
                                  " is not uniform, configured or applications");
  }
  DecidedFor out;
  out.source = *parsed;
  for (const auto& step : {ReadCount(j, "window_seconds", out.mix.window_seconds),
                           ReadCount(j, "sends", out.mix.sends), ReadBins(j, out.mix.bins),
                           ReadDepths(j, out.mix.depth_shares)}) {
    if (!step) return tl::unexpected(step.error());
  }
  return out;
}

std::string DescribeDecidedFor(const DecidedFor& d) {
  std::string text(MixSourceName(d.source));
  const std::size_t n = d.mix.bins.size();
  const std::string sizes = std::to_string(n) + (n == 1 ? " size" : " sizes");
  switch (d.source) {
    case MixSource::kUniform:
      break;
    case MixSource::kConfigured:
      text += " (" + sizes + ")";
      break;
    case MixSource::kApplications:
      text += " (" + std::to_string(d.mix.window_seconds) + " s, " +
              std::to_string(d.mix.sends) + " sends, " + sizes + ")";
      break;
  }
  return text;
}

}  // namespace zcal::agent

#include "zcal/agent/domain/traffic_mix.h"

#include <array>

namespace zcal::agent {

std::uint64_t BucketBytes(std::size_t bucket) {
  if (bucket == 0) return 1;
  if (bucket + 1 >= kAppSizeBuckets) return std::uint64_t{1} << (kAppSizeBuckets - 1);
  return std::uint64_t{3} << (bucket - 1);
}

namespace {

// The sums of one scope: sends per size bucket and per depth index.
struct ScopeSums {
  std::uint64_t sends = 0;
  std::array<std::uint64_t, kAppSizeBuckets> sizes{};
  std::array<std::uint64_t, kAppDepthClasses> depths{};
};

void AddCell(ScopeSums& sums, const AppCounters& c) {
  sums.sends += c.Sends();
  for (std::size_t b = 0; b < kAppSizeBuckets; ++b) sums.sizes[b] += c.sizes[b];
  for (std::size_t d = 0; d < kAppDepthClasses; ++d) {
    for (const auto& by_answer : c.answers[d]) {
      for (const std::uint64_t n : by_answer) sums.depths[d] += n;
    }
  }
}

TrafficMix MixOf(const ScopeSums& sums, std::uint64_t window_seconds) {
  TrafficMix mix;
  mix.window_seconds = window_seconds;
  mix.sends = sums.sends;
  for (std::size_t b = 0; b < kAppSizeBuckets; ++b) {
    if (sums.sizes[b] == 0) continue;
    const std::uint64_t size = BucketBytes(b);
    mix.bins.push_back({size, static_cast<double>(sums.sizes[b]) * static_cast<double>(size)});
  }
  std::uint64_t depth_total = 0;
  for (const std::uint64_t n : sums.depths) depth_total += n;
  for (std::size_t d = 0; d < kAppDepthClasses && depth_total != 0; ++d) {
    if (sums.depths[d] == 0) continue;
    mix.depth_shares[AppDepthClass(d)] =
        static_cast<double>(sums.depths[d]) / static_cast<double>(depth_total);
  }
  return mix;
}

}  // namespace

ScopeMixes MixesOf(const AppsWindow& window, const AppsSettings& settings) {
  ScopeMixes mixes;
  if (!settings.mix) return mixes;
  std::map<AppScope, ScopeSums> sums;
  for (const auto& [name, cells] : window.apps) {
    for (const auto& [key, counters] : cells) {
      if (key.scope == AppScope::kNone) continue;
      AddCell(sums[key.scope], counters);
    }
  }
  const std::uint64_t seconds =
      window.to_ns > window.from_ns ? (window.to_ns - window.from_ns) / 1'000'000'000 : 0;
  for (const auto& [scope, s] : sums) {
    // A mix needs sizes: a scope whose sends were all counted without a
    // size bucket (a forged report) decides as if nothing were reported.
    if (s.sends < settings.mix_min_sends || s.sends == 0) continue;
    TrafficMix mix = MixOf(s, seconds);
    if (!mix.bins.empty()) mixes.emplace(scope, std::move(mix));
  }
  return mixes;
}

std::optional<AppScope> MixScopeOf(probes::TargetKind kind) {
  switch (kind) {
    case probes::TargetKind::kDiscard: return AppScope::kHostDefault;
    case probes::TargetKind::kPeer: return AppScope::kPeer;
    case probes::TargetKind::kLoopback: return std::nullopt;
  }
  return std::nullopt;
}

std::string_view MixSourceName(MixSource source) {
  switch (source) {
    case MixSource::kUniform: return "uniform";
    case MixSource::kConfigured: return "configured";
    case MixSource::kApplications: return "applications";
  }
  return "unknown";
}

std::optional<MixSource> ParseMixSource(std::string_view name) {
  for (const MixSource s :
       {MixSource::kUniform, MixSource::kConfigured, MixSource::kApplications}) {
    if (MixSourceName(s) == name) return s;
  }
  return std::nullopt;
}

std::pair<calibrator::DecisionOptions, DecidedFor> DecisionFor(
    const calibrator::DecisionOptions& configured, std::optional<AppScope> scope,
    const ScopeMixes& mixes) {
  std::pair<calibrator::DecisionOptions, DecidedFor> out{configured, {}};
  if (!configured.traffic.empty()) {
    out.second.source = MixSource::kConfigured;
    out.second.mix.bins = configured.traffic;
    return out;
  }
  const auto it = scope ? mixes.find(*scope) : mixes.end();
  if (it == mixes.end()) return out;
  out.first.traffic = it->second.bins;
  out.second.source = MixSource::kApplications;
  out.second.mix = it->second;
  return out;
}

}  // namespace zcal::agent

// The host's real traffic mix: what the applications sent within the
// window of the `apps:` settings, per scope kind, as the decision rule's
// traffic histogram (calibrator::DecisionOptions::traffic), and which mix
// a path's thresholds were decided for (`decided_for` in the state file,
// `zcal show --state`, the report).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "zcal/agent/domain/app_traffic.h"
#include "zcal/agent/domain/apps_settings.h"
#include "zcal/agent/domain/depth_class.h"
#include "zcal/calibrator/decision_options.h"
#include "zcal/probes/types/target.h"

namespace zcal::agent {

/// What a scope's applications sent within the window.
struct TrafficMix {
  std::uint64_t window_seconds = 0;  ///< the span of the window's reads
  std::uint64_t sends = 0;           ///< sends reported, every method and answer
  /// Per size bucket with sends, in bucket order: its representative size
  /// (BucketBytes) and, as weight, the bytes it stands for (sends x that
  /// size), so that the decision weighs sizes by the bytes sent at them.
  std::vector<calibrator::TrafficBin> bins;
  /// The share of the sends per depth class the guard saw (each in [0, 1],
  /// summing to 1; classes without sends absent).
  std::map<DepthClass, double> depth_shares;

  bool operator==(const TrafficMix&) const = default;
};

/// The mix of each scope kind whose applications reported at least
/// settings.mix_min_sends sends within the window; none for the others,
/// and none at all when settings.mix is false. Scope kNone (sends no entry
/// answered) gets no mix: no calibrated path stands for it.
using ScopeMixes = std::map<AppScope, TrafficMix>;
ScopeMixes MixesOf(const AppsWindow& window, const AppsSettings& settings);

/// The representative size of report size bucket `bucket` (2^b..2^(b+1)-1
/// bytes): the middle of the bucket, 3 x 2^(b-1); 1 for bucket 0; 2^31 for
/// the last, which holds every size from 2^31.
std::uint64_t BucketBytes(std::size_t bucket);

/// The scope whose applications' mix a path's results are decided for: the
/// scope they are published as. The discard path stands for the host
/// default, a peer for the peer scope; loopback for none (it is `never`,
/// kernel_copied: no mix changes that).
std::optional<AppScope> MixScopeOf(probes::TargetKind kind);

/// Where the traffic histogram of a decision came from.
enum class MixSource : std::uint8_t {
  kUniform,       ///< none: uniform in log size over the probed range
  kConfigured,    ///< decision.traffic of the configuration (it wins)
  kApplications,  ///< the applications' reports within the window
};
/// "uniform", "configured", "applications".
std::string_view MixSourceName(MixSource source);
std::optional<MixSource> ParseMixSource(std::string_view name);

/// Which mix a path's thresholds were decided for.
struct DecidedFor {
  MixSource source = MixSource::kUniform;
  /// With kApplications: the mix; with kConfigured: its bins only.
  TrafficMix mix;
  bool operator==(const DecidedFor&) const = default;
};

/// The decision options of a path whose results are published as `scope`
/// (MixScopeOf), and what they are decided for: `configured` as it is
/// when its traffic is set (the configuration wins) or there is no mix of
/// that scope; otherwise with the mix's bins as its traffic.
std::pair<calibrator::DecisionOptions, DecidedFor> DecisionFor(
    const calibrator::DecisionOptions& configured, std::optional<AppScope> scope,
    const ScopeMixes& mixes);

}  // namespace zcal::agent

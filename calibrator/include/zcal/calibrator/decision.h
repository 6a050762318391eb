// The decision rule: from which message size a zerocopy method beats the
// copying send of its transport (docs/calibrator.md; docs/architecture.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "zcal/calibrator/decision_options.h"
#include "zcal/calibrator/depth.h"
#include "zcal/calibrator/method.h"
#include "zcal/calibrator/method_result.h"
#include "zcal/calibrator/sample.h"

namespace zcal::calibrator {

/// Index of the first size of the winning tail: every size from it on is a
/// win. nullopt when the largest size loses (or there are no sizes).
std::optional<std::size_t> WinningTailStart(
    std::span<const SizeComparison> sizes);

/// The expected excess cost (fraction) of using zerocopy at the compared
/// sizes >= threshold (nullopt: nowhere), judged on these per-size
/// comparisons with the per-size rule's weights. 0 for no sizes.
double ExcessCost(std::span<const SizeComparison> sizes,
                  std::optional<std::uint64_t> threshold,
                  const DecisionOptions& options);

/// Judges `method` (a zerocopy method) against its baseline using the
/// samples of one path (samples of other methods are used as baselines,
/// others ignored). The threshold is the one of least expected excess cost
/// (docs/calibrator.md, "The threshold rule"): on the fitted cost model when
/// it fits; where its curves are rejected and the sizes lie three or more
/// to the octave, on a local fit of the probed sizes' costs
/// (DecisionOptions::local_fit); else over the per-size comparisons.
/// Deterministic: the bootstrap's random numbers are seeded from the
/// samples.
MethodResult Decide(std::span<const Sample> path_samples, Method method,
                    const DecisionOptions& options);

/// The samples a depth class is judged on: the zerocopy probes at `depth`
/// (depth.h), and every baseline probe, since copying sends have no
/// completions to wait for and are probed once, at stream, for all classes.
std::vector<Sample> SamplesAtDepth(std::span<const Sample> samples, std::uint32_t depth);

/// The depth classes the zerocopy samples were probed at, in calibration
/// order (numeric ascending, stream last); {kStreamDepth} when there are
/// no zerocopy samples.
std::vector<std::uint32_t> DepthsOf(std::span<const Sample> samples);

/// Groups the samples of one depth class (SamplesAtDepth) by path and
/// decides every zerocopy method that appears.
Analysis Analyze(std::span<const Sample> samples,
                 const DecisionOptions& options,
                 std::uint32_t depth = kStreamDepth);

}  // namespace zcal::calibrator

// Human-readable rendering of an analysis, shared by `zcal analyze` and
// `zcal calibrate`.
#pragma once

#include <ostream>

#include "zcal/calibrator/decision.h"

namespace zcal::agent {

/// Per path: one row per zerocopy method (verdict, threshold, reason,
/// confidence, baseline), then for each the rule that decided, the
/// threshold's interval, its expected excess cost, the fitted curves of the
/// method and its baseline, the probed sizes where a single threshold is
/// wrong, and the per-size comparisons.
void PrintAnalysis(std::ostream& out, const calibrator::Analysis& analysis,
                   const calibrator::DecisionOptions& options);

}  // namespace zcal::agent

// Human-readable rendering of an analysis, shared by `zcal analyze` and
// `zcal calibrate`.
#pragma once

#include <ostream>

#include "zcal/calibrator/decision.h"

namespace zcal::agent {

/// Per path: one row per zerocopy method (verdict, threshold, reason,
/// confidence, baseline), then the per-size comparison behind each verdict.
void PrintAnalysis(std::ostream& out, const calibrator::Analysis& analysis,
                   const calibrator::DecisionOptions& options);

}  // namespace zcal::agent

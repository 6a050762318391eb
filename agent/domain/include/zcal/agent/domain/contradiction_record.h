// A field contradiction in force, as the state file keeps it across
// restarts; the rule that raises and clears them is publish/contradiction.h.
#pragma once

#include <cstdint>

#include "zcal/agent/domain/app_traffic.h"
#include "zcal/calibrator/method.h"

namespace zcal::agent {

/// A scope kind and method whose entries are flagged, when the
/// contradiction was raised and when the rule last tripped
/// (CLOCK_REALTIME).
struct ContradictionRecord {
  AppScope scope = AppScope::kNone;
  calibrator::Method method = calibrator::Method::kMsgZerocopy;
  std::uint64_t raised_at_ns = 0;
  std::uint64_t last_seen_ns = 0;
  bool operator==(const ContradictionRecord&) const = default;
};

}  // namespace zcal::agent

// The field-contradiction part of Metrics: zcal_app_contradictions_total,
// counted by Metrics::RecordContradiction (metrics_contradictions.cc).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

#include "zcal/agent/metrics/metrics.h"

namespace zcal::agent {

struct Metrics::ContradictionView {
  ContradictionView();

  mutable std::mutex mutex;
  // Every scope kind that can be contradicted, with every zerocopy method,
  // from 0: 9 series at most.
  std::map<std::pair<AppScope, calibrator::Method>, std::uint64_t> counts;

  void AppendTo(std::vector<prometheus::MetricFamily>& out) const;
};

}  // namespace zcal::agent

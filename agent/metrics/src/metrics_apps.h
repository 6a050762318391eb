// The applications' part of Metrics: zcal_app_* rendered from the last
// read of the report objects (Metrics::SetApps, metrics_apps.cc).
#pragma once

#include <mutex>
#include <vector>

#include <prometheus/metric_family.h>

#include "zcal/agent/apps/apps_reader.h"
#include "zcal/agent/domain/app_traffic.h"
#include "zcal/agent/metrics/metrics.h"

namespace zcal::agent {

struct Metrics::AppsView {
  mutable std::mutex mutex;
  AppsSnapshot snapshot;
  AppsReadStats totals;

  /// Appends the zcal_app_* families.
  void AppendTo(std::vector<prometheus::MetricFamily>& out) const;
};

}  // namespace zcal::agent

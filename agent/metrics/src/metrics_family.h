// Building metric families by hand, for the parts of Metrics rendered at
// each scrape from state held elsewhere (the sink's counters, the peers).
#pragma once

#include <string>
#include <utility>

#include <prometheus/metric_family.h>

namespace zcal::agent {

inline prometheus::MetricFamily Family(std::string name, std::string help,
                                       prometheus::MetricType type) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

/// Appends a sample with the labels already in `metric`.
inline void AddValue(prometheus::MetricFamily& family, double value,
                     prometheus::ClientMetric metric = {}) {
  if (family.type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
}

}  // namespace zcal::agent

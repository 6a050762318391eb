// The sink part of Metrics: zcal_sink_* rendered from PeerSink::Stats() on
// each scrape (Metrics::SetSink, metrics_sink.cc).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include <prometheus/metric_family.h>

#include "zcal/agent/metrics/metrics.h"
#include "zcal/probes/peer/peer_sink.h"

namespace zcal::agent {

struct Metrics::SinkView {
  mutable std::mutex mutex;
  std::shared_ptr<const probes::PeerSink> sink;
  probes::PeerSinkStats carried;  // counters of the sinks replaced before

  /// Appends the zcal_sink_* families; nothing without a sink.
  void AppendTo(std::vector<prometheus::MetricFamily>& out) const;
};

}  // namespace zcal::agent

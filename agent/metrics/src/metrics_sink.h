// The sink part of Metrics: zcal_sink_* rendered from PeerSink::Stats() on
// each scrape.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include <prometheus/metric_family.h>

#include "zcal/agent/metrics/metrics.h"
#include "zcal/probes/peer/peer_sink.h"

namespace zcal::agent {

class Metrics::SinkView {
 public:
  void Set(std::shared_ptr<const probes::PeerSink> sink);
  /// Appends the zcal_sink_* families; nothing without a sink.
  void AppendTo(std::vector<prometheus::MetricFamily>& out) const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const probes::PeerSink> sink_;
  probes::PeerSinkStats carried_;  // counters of the sinks replaced before
};

}  // namespace zcal::agent

#include "metrics_sink.h"

#include <string>
#include <utility>

#include "metrics_family.h"

namespace zcal::agent {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

void Metrics::SinkView::Set(std::shared_ptr<const probes::PeerSink> sink) {
  std::lock_guard lock(mutex_);
  if (sink_) {
    const probes::PeerSinkStats last = sink_->Stats();
    for (std::size_t i = 0; i < probes::kSinkOutcomes; ++i) {
      carried_.outcomes[i] += last.outcomes[i];
    }
    carried_.bytes_received += last.bytes_received;
    carried_.refused_per_source += last.refused_per_source;
    carried_.accept_pauses += last.accept_pauses;
  }
  sink_ = std::move(sink);
}

void Metrics::SinkView::AppendTo(std::vector<MetricFamily>& out) const {
  std::lock_guard lock(mutex_);
  if (!sink_) return;
  const probes::PeerSinkStats now = sink_->Stats();

  MetricFamily sessions = Family(
      "zcal_sink_sessions_total",
      "Connections to the peer sink, by how they ended (served, busy, "
      "not_allowed, auth_failed, protocol_error, timeout, limit, "
      "unsupported_version).",
      MetricType::Counter);
  for (std::size_t i = 0; i < probes::kSinkOutcomes; ++i) {
    ClientMetric metric;
    metric.label.push_back(
        {"outcome",
         std::string(probes::SinkOutcomeName(static_cast<probes::SinkOutcome>(i)))});
    AddValue(sessions, static_cast<double>(carried_.outcomes[i] + now.outcomes[i]),
             std::move(metric));
  }
  out.push_back(std::move(sessions));

  MetricFamily bytes = Family("zcal_sink_bytes_received_total",
                              "Bytes the peer sink received on data connections.",
                              MetricType::Counter);
  AddValue(bytes, static_cast<double>(carried_.bytes_received + now.bytes_received));
  out.push_back(std::move(bytes));

  MetricFamily per_source = Family(
      "zcal_sink_connections_refused_per_source_total",
      "Connections the peer sink refused at accept because their source address "
      "held sink.max_connections_per_source (also counted in "
      "zcal_sink_sessions_total{outcome=\"limit\"}).",
      MetricType::Counter);
  AddValue(per_source,
           static_cast<double>(carried_.refused_per_source + now.refused_per_source));
  out.push_back(std::move(per_source));

  MetricFamily pauses = Family(
      "zcal_sink_accept_pauses_total",
      "Times the peer sink's accept(2) failed for want of file descriptors or "
      "memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) and it paused its listener; "
      "raise the process's LimitNOFILE= or lower sink.max_connections.",
      MetricType::Counter);
  AddValue(pauses, static_cast<double>(carried_.accept_pauses + now.accept_pauses));
  out.push_back(std::move(pauses));

  MetricFamily sessions_open = Family(
      "zcal_sink_sessions_open", "Peer sessions the sink is serving now.",
      MetricType::Gauge);
  AddValue(sessions_open, static_cast<double>(now.sessions_open));
  out.push_back(std::move(sessions_open));

  MetricFamily connections_open = Family(
      "zcal_sink_connections_open",
      "Sockets open to the peer sink (handshakes, sessions and data "
      "connections).",
      MetricType::Gauge);
  AddValue(connections_open, static_cast<double>(now.connections_open));
  out.push_back(std::move(connections_open));
}

}  // namespace zcal::agent

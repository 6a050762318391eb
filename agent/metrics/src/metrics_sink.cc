#include "metrics_sink.h"

#include <string>
#include <utility>

#include "metrics_family.h"

namespace zcal::agent {

void Metrics::SetSink(std::shared_ptr<const probes::PeerSink> sink) {
  std::lock_guard lock(sink_->mutex);
  if (sink_->sink) {
    const probes::PeerSinkStats last = sink_->sink->Stats();
    probes::PeerSinkStats& carried = sink_->carried;
    for (std::size_t i = 0; i < probes::kSinkOutcomes; ++i) carried.outcomes[i] += last.outcomes[i];
    carried.bytes_received += last.bytes_received;
    carried.refused_per_source += last.refused_per_source;
    carried.accept_pauses += last.accept_pauses;
  }
  sink_->sink = std::move(sink);
}

void Metrics::SinkView::AppendTo(std::vector<prometheus::MetricFamily>& out) const {
  FamilyWriter writer(out);
  std::lock_guard lock(mutex);
  if (!sink) return;
  const probes::PeerSinkStats now = sink->Stats();
  const auto total = [](std::uint64_t carried_count, std::uint64_t now_count) {
    return static_cast<double>(carried_count + now_count);
  };
  writer.Counter("zcal_sink_sessions_total",
                 "Connections to the peer sink, by how they ended (served, busy, not_allowed, "
                 "auth_failed, protocol_error, timeout, limit, unsupported_version).");
  for (std::size_t i = 0; i < probes::kSinkOutcomes; ++i) {
    writer.Add(total(carried.outcomes[i], now.outcomes[i]),
               {{"outcome",
                 std::string(probes::SinkOutcomeName(static_cast<probes::SinkOutcome>(i)))}});
  }
  writer.Counter("zcal_sink_bytes_received_total",
                 "Bytes the peer sink received on data connections.")
      .Add(total(carried.bytes_received, now.bytes_received));
  writer
      .Counter("zcal_sink_connections_refused_per_source_total",
               "Connections the peer sink refused at accept because their source address held "
               "sink.max_connections_per_source (also counted in "
               "zcal_sink_sessions_total{outcome=\"limit\"}).")
      .Add(total(carried.refused_per_source, now.refused_per_source));
  writer
      .Counter("zcal_sink_accept_pauses_total",
               "Times the peer sink's accept(2) failed for want of file descriptors or memory "
               "(EMFILE, ENFILE, ENOBUFS, ENOMEM) and it paused its listener; raise the "
               "process's LimitNOFILE= or lower sink.max_connections.")
      .Add(total(carried.accept_pauses, now.accept_pauses));
  writer.Gauge("zcal_sink_sessions_open", "Peer sessions the sink is serving now.")
      .Add(static_cast<double>(now.sessions_open));
  writer
      .Gauge("zcal_sink_connections_open",
             "Sockets open to the peer sink (handshakes, sessions and data connections).")
      .Add(static_cast<double>(now.connections_open));
}

}  // namespace zcal::agent

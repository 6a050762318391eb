#include "metrics_peers.h"

#include <limits>

namespace zcal::agent {

void Metrics::SetPeersEnabled(bool enabled) {
  std::lock_guard lock(peers_->mutex);
  peers_->enabled = enabled;
}

void Metrics::RecordPeerAttempt(PeerOutcome outcome) {
  std::lock_guard lock(peers_->mutex);
  for (std::size_t i = 0; i < kPeerOutcomes.size(); ++i) {
    if (kPeerOutcomes[i] == outcome) ++peers_->outcomes[i];
  }
}

void Metrics::RecordPeerDiscovery(std::size_t peers, DnsFailure failure) {
  std::lock_guard lock(peers_->mutex);
  peers_->discovered = peers;
  for (std::size_t i = 0; i < kDnsFailures.size(); ++i) {
    if (kDnsFailures[i] == failure) ++peers_->failures[i];
  }
}

void Metrics::SetPeers(std::map<PathId, bool> stale, InterfaceAggregates interfaces) {
  std::lock_guard lock(peers_->mutex);
  peers_->stale = std::move(stale);
  peers_->interfaces = std::move(interfaces);
}

void Metrics::PeerView::AppendTo(std::vector<prometheus::MetricFamily>& out) const {
  FamilyWriter writer(out);
  std::lock_guard lock(mutex);
  if (!enabled) return;
  writer.Counter("zcal_peer_probes_total",
                 "Peer calibrations asked of peers' sinks, by how they ended.");
  for (std::size_t i = 0; i < kPeerOutcomes.size(); ++i) {
    writer.Add(static_cast<double>(outcomes[i]),
               {{"outcome", std::string(PeerOutcomeName(kPeerOutcomes[i]))}});
  }
  writer.Counter("zcal_peer_discovery_failures_total",
                 "DNS lookups of peers.dns that gave no peers, by reason.");
  for (std::size_t i = 0; i < kDnsFailures.size(); ++i) {
    writer.Add(static_cast<double>(failures[i]),
               {{"reason", std::string(DnsFailureName(kDnsFailures[i]))}});
  }
  if (discovered) {
    writer
        .Gauge("zcal_peers_discovered",
               "Peers found by the last discovery, this host's own addresses excluded.")
        .Add(static_cast<double>(*discovered));
  }
  writer.Gauge("zcal_peer_stale",
               "1 for a kept peer whose last result is older than peers.stale_after "
               "(published under its own entry, left out of aggregates).");
  for (const auto& [path, is_stale] : stale) {
    writer.Add(is_stale ? 1 : 0, {{"path", ToString(path)}});
  }
  AppendInterfaces(writer);
}

void Metrics::PeerView::AppendInterfaces(FamilyWriter& out) const {
  // Calls fn(interface, method, depth, aggregate) for each aggregate.
  const auto each = [this](const auto& fn) {
    for (const auto& [interface, methods] : interfaces) {
      for (const auto& [key, a] : methods) {
        fn(interface, std::string(calibrator::MethodName(key.method)),
           std::string(DepthClassName(key.depth)), a);
      }
    }
  };
  out.Gauge("zcal_interface_threshold_bytes",
            "Median threshold of the fresh peer results through an interface "
            "(+Inf: zerocopy never wins there).");
  each([&](const std::string& interface, const std::string& method, const std::string& depth,
           const InterfaceAggregate& a) {
    const calibrator::MethodResult& r = a.state.published;
    const double value = r.verdict == calibrator::Verdict::kNever
                             ? std::numeric_limits<double>::infinity()
                             : static_cast<double>(r.threshold_bytes.value_or(0));
    out.Add(value, {{"interface", interface}, {"method", method}, {"depth", depth}});
  });
  out.Gauge("zcal_interface_threshold_spread_bytes",
            "Largest minus smallest threshold of the peer results aggregated.");
  each([&](const std::string& interface, const std::string& method, const std::string& depth,
           const InterfaceAggregate& a) {
    if (a.spread_bytes) {
      out.Add(static_cast<double>(*a.spread_bytes),
              {{"interface", interface}, {"method", method}, {"depth", depth}});
    }
  });
  out.Gauge("zcal_interface_peers", "Peer results aggregated into an interface's entry.");
  each([&](const std::string& interface, const std::string& method, const std::string& depth,
           const InterfaceAggregate& a) {
    out.Add(static_cast<double>(a.peers),
            {{"interface", interface}, {"method", method}, {"depth", depth}});
  });
}

}  // namespace zcal::agent

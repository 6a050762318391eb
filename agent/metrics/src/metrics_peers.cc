#include "metrics_peers.h"

#include <algorithm>

#include "metrics_family.h"

namespace zcal::agent {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

namespace {

ClientMetric Labelled(std::initializer_list<std::pair<const char*, std::string>> labels) {
  ClientMetric metric;
  for (const auto& [name, value] : labels) metric.label.push_back({name, value});
  return metric;
}

}  // namespace

void Metrics::PeerView::SetEnabled(bool enabled) {
  std::lock_guard lock(mutex_);
  enabled_ = enabled;
}

void Metrics::PeerView::RecordAttempt(PeerOutcome outcome) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < kPeerOutcomes.size(); ++i) {
    if (kPeerOutcomes[i] == outcome) ++outcomes_[i];
  }
}

void Metrics::PeerView::RecordDiscovery(std::size_t peers, DnsFailure failure) {
  std::lock_guard lock(mutex_);
  discovered_ = peers;
  for (std::size_t i = 0; i < kDnsFailures.size(); ++i) {
    if (kDnsFailures[i] == failure) ++failures_[i];
  }
}

void Metrics::PeerView::SetPublished(std::map<std::string, bool> stale,
                                     InterfaceAggregates interfaces) {
  std::lock_guard lock(mutex_);
  stale_ = std::move(stale);
  interfaces_ = std::move(interfaces);
}

void Metrics::PeerView::AppendTo(std::vector<MetricFamily>& out) const {
  std::lock_guard lock(mutex_);
  if (!enabled_) return;
  MetricFamily probes = Family(
      "zcal_peer_probes_total",
      "Peer calibrations asked of peers' sinks, by how they ended.",
      MetricType::Counter);
  for (std::size_t i = 0; i < kPeerOutcomes.size(); ++i) {
    AddValue(probes, static_cast<double>(outcomes_[i]),
             Labelled({{"outcome", std::string(PeerOutcomeName(kPeerOutcomes[i]))}}));
  }
  out.push_back(std::move(probes));

  MetricFamily failures = Family(
      "zcal_peer_discovery_failures_total",
      "DNS lookups of peers.dns that gave no peers, by reason.", MetricType::Counter);
  for (std::size_t i = 0; i < kDnsFailures.size(); ++i) {
    AddValue(failures, static_cast<double>(failures_[i]),
             Labelled({{"reason", std::string(DnsFailureName(kDnsFailures[i]))}}));
  }
  out.push_back(std::move(failures));

  if (discovered_) {
    MetricFamily discovered = Family(
        "zcal_peers_discovered",
        "Peers found by the last discovery, this host's own addresses excluded.",
        MetricType::Gauge);
    AddValue(discovered, static_cast<double>(*discovered_));
    out.push_back(std::move(discovered));
  }

  MetricFamily stale = Family(
      "zcal_peer_stale",
      "1 for a kept peer whose last result is older than peers.stale_after "
      "(published under its own entry, left out of aggregates).",
      MetricType::Gauge);
  for (const auto& [path, is_stale] : stale_) {
    AddValue(stale, is_stale ? 1 : 0, Labelled({{"path", path}}));
  }
  out.push_back(std::move(stale));

  MetricFamily threshold = Family(
      "zcal_interface_threshold_bytes",
      "Median threshold of the fresh peer results through an interface "
      "(+Inf: zerocopy never wins there).",
      MetricType::Gauge);
  MetricFamily spread = Family(
      "zcal_interface_threshold_spread_bytes",
      "Largest minus smallest threshold of the peer results aggregated.",
      MetricType::Gauge);
  MetricFamily peers = Family("zcal_interface_peers",
                              "Peer results aggregated into an interface's entry.",
                              MetricType::Gauge);
  for (const auto& [interface, methods] : interfaces_) {
    for (const auto& [key, a] : methods) {
      const std::string m(calibrator::MethodName(key.method));
      const std::string depth(DepthClassName(key.depth));
      const calibrator::MethodResult& r = a.state.published;
      const double value = r.verdict == calibrator::Verdict::kNever
                               ? std::numeric_limits<double>::infinity()
                               : static_cast<double>(r.threshold_bytes.value_or(0));
      AddValue(threshold, value,
               Labelled({{"interface", interface},
                         {"method", m},
                         {"depth", depth}}));
      if (a.spread_bytes) {
        AddValue(spread, static_cast<double>(*a.spread_bytes),
                 Labelled({{"interface", interface}, {"method", m}, {"depth", depth}}));
      }
      AddValue(peers, static_cast<double>(a.peers),
               Labelled({{"interface", interface}, {"method", m}, {"depth", depth}}));
    }
  }
  out.push_back(std::move(threshold));
  out.push_back(std::move(spread));
  out.push_back(std::move(peers));
}

}  // namespace zcal::agent

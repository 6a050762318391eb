// The peer part of Metrics: how peer probes ended, what discovery found,
// which kept peers are stale, and the per-interface aggregates.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "zcal/agent/metrics/metrics.h"
#include "zcal/agent/domain/agent_state.h"
#include "zcal/agent/domain/peer_attempt.h"

namespace zcal::agent {


class Metrics::PeerView {
 public:
  /// Whether peers are configured: without, no zcal_peer* series at all.
  void SetEnabled(bool enabled);
  void RecordAttempt(PeerOutcome outcome);
  void RecordDiscovery(std::size_t peers, DnsFailure failure);
  /// The kept peers (path -> stale) and the interface aggregates.
  void SetPublished(std::map<std::string, bool> stale, InterfaceAggregates interfaces);
  void AppendTo(std::vector<prometheus::MetricFamily>& out) const;

 private:
  mutable std::mutex mutex_;
  bool enabled_ = false;
  std::array<std::uint64_t, kPeerOutcomes.size()> outcomes_{};
  std::array<std::uint64_t, kDnsFailures.size()> failures_{};
  std::optional<std::size_t> discovered_;
  std::map<std::string, bool> stale_;
  InterfaceAggregates interfaces_;
};

}  // namespace zcal::agent

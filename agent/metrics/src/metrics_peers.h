// The peer part of Metrics: how peer probes ended, what discovery found,
// which kept peers are stale, and the per-interface aggregates; updated by
// Metrics' peer functions (metrics_peers.cc), rendered on each scrape.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "metrics_family.h"
#include "zcal/agent/domain/agent_state.h"
#include "zcal/agent/domain/peer_attempt.h"
#include "zcal/agent/metrics/metrics.h"

namespace zcal::agent {

struct Metrics::PeerView {
  mutable std::mutex mutex;
  bool enabled = false;  // without peers configured, no zcal_peer* series at all
  std::array<std::uint64_t, kPeerOutcomes.size()> outcomes{};
  std::array<std::uint64_t, kDnsFailures.size()> failures{};
  std::optional<std::size_t> discovered;
  std::map<PathId, bool> stale;  // kept peer -> stale
  InterfaceAggregates interfaces;

  void AppendTo(std::vector<prometheus::MetricFamily>& out) const;

 private:
  void AppendInterfaces(FamilyWriter& out) const;
};

}  // namespace zcal::agent

#include "zcal/agent/publish/peer_results.h"

#include <unistd.h>

#include <algorithm>
#include <limits>

#include "zcal/agent/publish/host_default.h"

namespace zcal::agent {
namespace {

using calibrator::Verdict;

// The order of the median: a threshold by its size, `always` by where it
// starts (from the smallest size probed when it does not say), `never`
// after every threshold.
std::uint64_t OrderKey(const calibrator::MethodResult& r) {
  if (r.verdict == Verdict::kNever) return std::numeric_limits<std::uint64_t>::max();
  return r.threshold_bytes.value_or(0);
}

}  // namespace

bool PeerStale(const PeerRecord& peer, const Config& config, std::uint64_t now_ns,
               std::optional<std::int64_t> now_steady_ns) {
  if (peer.last_success_ns == 0) return true;
  const auto limit_ms = static_cast<std::uint64_t>(config.peers.stale_after.count());
  if (now_steady_ns && peer.last_success_steady_ns != 0) {
    if (*now_steady_ns <= peer.last_success_steady_ns) return false;
    const auto age_ns = static_cast<std::uint64_t>(*now_steady_ns - peer.last_success_steady_ns);
    return age_ns / 1'000'000 > limit_ms;
  }
  if (now_ns <= peer.last_success_ns) return false;
  return (now_ns - peer.last_success_ns) / 1'000'000 > limit_ms;
}

InterfaceAggregates AggregatePeers(const AgentState& state, const Config& config,
                                   std::uint64_t now_ns,
                                   std::optional<std::int64_t> now_steady_ns) {
  std::map<std::string, std::map<MethodKey, std::vector<const MethodState*>>> groups;
  for (const auto& [path, peer] : state.peers) {
    if (peer.interface.empty() || PeerStale(peer, config, now_ns, now_steady_ns)) continue;
    const auto results = state.paths.find(path);
    if (results == state.paths.end()) continue;
    for (const auto& [key, s] : results->second) {
      if (UsableForHostDefault(s.published)) groups[peer.interface][key].push_back(&s);
    }
  }
  InterfaceAggregates out;
  for (auto& [interface, methods] : groups) {
    for (auto& [key, list] : methods) {
      std::sort(list.begin(), list.end(), [](const MethodState* a, const MethodState* b) {
        return OrderKey(a->published) < OrderKey(b->published);
      });
      InterfaceAggregate a;
      a.peers = list.size();
      a.state.published = list[list.size() / 2]->published;
      for (const MethodState* s : list) {
        a.state.measured_at_ns = std::max(a.state.measured_at_ns, s->measured_at_ns);
      }
      std::optional<std::uint64_t> low;
      std::optional<std::uint64_t> high;
      std::size_t thresholds = 0;
      for (const MethodState* s : list) {
        if (s->published.verdict == Verdict::kNever || !s->published.threshold_bytes) continue;
        const std::uint64_t t = *s->published.threshold_bytes;
        low = low ? std::min(*low, t) : t;
        high = high ? std::max(*high, t) : t;
        ++thresholds;
      }
      if (thresholds >= 2) a.spread_bytes = *high - *low;
      out[interface].emplace(key, std::move(a));
    }
  }
  return out;
}

void RecordPeerAttempts(AgentState& state, const std::vector<PeerAttempt>& attempts,
                        std::uint64_t now_ns, std::int64_t steady_ns) {
  for (const PeerAttempt& attempt : attempts) {
    const PathId path = attempt.path();
    PeerRecord& peer = state.peers[path];
    peer.last_attempt_ns = now_ns;
    peer.last_outcome = attempt.outcome;
    if (attempt.outcome == PeerOutcome::kSuccess && state.paths.contains(path)) {
      peer.last_success_ns = now_ns;
      peer.last_success_steady_ns = steady_ns;
      // A route that could not be read keeps the interface known before.
      if (!attempt.interface.empty()) peer.interface = attempt.interface;
    }
  }
}

void PrunePeers(AgentState& state, const Config& config) {
  if (!config.peers.enabled()) {
    state.peers.clear();
  }
  std::erase_if(state.peers, [&](const auto& item) {
    return !state.paths.contains(item.first) || item.second.last_success_ns == 0;
  });
  if (state.peers.size() > config.peers.keep) {
    std::vector<std::pair<std::uint64_t, PathId>> by_age;
    for (const auto& [path, peer] : state.peers) by_age.emplace_back(peer.last_success_ns, path);
    std::sort(by_age.begin(), by_age.end(), std::greater<>());
    for (std::size_t i = config.peers.keep; i < by_age.size(); ++i) {
      state.peers.erase(by_age[i].second);
    }
  }
  std::erase_if(state.paths, [&](const auto& item) {
    return item.first.IsPeer() && !state.peers.contains(item.first);
  });
}

}  // namespace zcal::agent

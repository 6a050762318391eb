#include "zcal/agent/publish/results.h"

#include <algorithm>

#include "zcal/agent/publish/host_default.h"
#include "zcal/agent/publish/peer_results.h"
#include "zcal/common/address.h"
#include "zcal/common/units.h"

namespace zcal::agent {

using calibrator::Method;
using calibrator::MethodResult;
using calibrator::Verdict;

std::string DescribeResult(const MethodResult& result) {
  std::string text(calibrator::VerdictName(result.verdict));
  if (result.threshold_bytes) {
    text += result.verdict == Verdict::kAlways ? " from " : " ";
    text += common::FormatSize(*result.threshold_bytes);
  }
  const std::string_view reason = calibrator::ReasonName(result.reason);
  if (!reason.empty()) text += " (" + std::string(reason) + ")";
  return text;
}

std::vector<std::string> MergeCalibration(
    AgentState& state, const std::string& path,
    const calibrator::PathResult& fresh, std::uint64_t now_ns,
    const std::optional<probes::HostLoad>& load,
    const calibrator::HysteresisOptions& options) {
  std::vector<std::string> log;
  auto& methods = state.paths[path];
  for (const auto& [method, result] : fresh.methods) {
    const std::string name =
        path + "/" + std::string(calibrator::MethodName(method));
    const auto it = methods.find(method);
    std::optional<MethodResult> published;
    std::optional<MethodResult> pending;
    if (it != methods.end()) {
      published = it->second.published;
      pending = it->second.pending;
    }
    const calibrator::HysteresisDecision decision =
        calibrator::ApplyHysteresis(published, pending, result, options);
    if (decision.publish) {
      MethodState& s = methods[method];
      s.published = result;
      s.measured_at_ns = now_ns;
      s.load = load;
      s.pending = decision.pending;
      log.push_back(name + ": " + DescribeResult(result) +
                    (published ? ", published (was " +
                                     DescribeResult(*published) + ")"
                               : ", published"));
      continue;
    }
    MethodState& s = it->second;
    s.pending = decision.pending;
    if (calibrator::Agree(s.published, result, options)) {
      s.measured_at_ns = now_ns;
      s.load = load;
      log.push_back(name + ": " + DescribeResult(s.published) +
                    ", confirmed");
    } else {
      log.push_back(name + ": measured " + DescribeResult(result) +
                    ", keeping " + DescribeResult(s.published) +
                    " until a calibration agrees");
    }
  }
  return log;
}

void PruneState(AgentState& state, const Config& config) {
  std::erase_if(state.paths, [&](const auto& item) {
    // Peer paths are not configured one by one: PrunePeers keeps them.
    return !IsPeerPath(item.first) &&
           std::none_of(config.paths.begin(), config.paths.end(),
                        [&](const PathConfig& p) { return p.name == item.first; });
  });
  for (auto& [path, methods] : state.paths) {
    std::erase_if(methods, [&](const auto& item) {
      return std::find(config.methods.begin(), config.methods.end(),
                       item.first) == config.methods.end();
    });
  }
  std::erase_if(state.paths, [](const auto& item) { return item.second.empty(); });
  PrunePeers(state, config);
}

PublishedTable BuildEntries(const AgentState& state, const Config& config,
                            const HostDefaultNic& nic, std::uint64_t now_ns,
                            std::optional<std::int64_t> now_steady_ns) {
  PublishedTable table;
  const auto add = [&](const std::map<Method, MethodState>& methods,
                       ScopeKind scope, bool estimated,
                       const PublishedEntry& where = {}) {
    for (const auto& [method, s] : methods) {
      PublishedEntry e = where;
      e.scope = scope;
      e.method = method;
      e.depth = s.depth;
      e.verdict = s.published.verdict;
      e.threshold_bytes = s.published.threshold_bytes;
      e.confidence = s.published.confidence;
      e.reason = s.published.reason;
      e.measured_at_ns = s.measured_at_ns;
      e.fingerprint = state.fingerprint;
      e.estimated = estimated;
      table.entries.push_back(std::move(e));
    }
  };
  // Each path's result under a scope of its own: it says what it measured.
  for (const PathConfig& path : config.paths) {
    const auto it = state.paths.find(path.name);
    if (it == state.paths.end()) continue;
    switch (path.type) {
      case probes::TargetKind::kLoopback:
        add(it->second, ScopeKind::kLoopback, false);
        break;
      case probes::TargetKind::kDiscard:
        add(it->second, ScopeKind::kDiscard, false);
        break;
      case probes::TargetKind::kPeer:
        break;  // not a configured path: peers are published below
    }
  }
  // Each kept peer under its own host prefix, whatever it measured: a
  // transport connected to that peer is told what its path measured.
  for (const auto& [path, peer] : state.peers) {
    const auto results = state.paths.find(path);
    const Result<common::HostPort> endpoint = common::ParseHostPort(peer.endpoint);
    if (results == state.paths.end() || !endpoint) continue;
    PublishedEntry where;
    where.address = common::ToString(endpoint->address);
    where.prefix_len = endpoint->address.IsIpv6() ? 128 : 32;
    add(results->second, ScopeKind::kPeer, false, where);
  }
  // Two peers on one address (two sinks on different ports) share one
  // prefix: the segment holds one entry per scope and method, so the one
  // measured last stays.
  std::map<std::pair<std::string, Method>, std::size_t> seen;
  std::vector<PublishedEntry> unique;
  for (PublishedEntry& e : table.entries) {
    if (e.scope != ScopeKind::kPeer) {
      unique.push_back(std::move(e));
      continue;
    }
    const auto [it, fresh] = seen.try_emplace({e.address, e.method}, unique.size());
    if (fresh) {
      unique.push_back(std::move(e));
    } else if (e.measured_at_ns > unique[it->second].measured_at_ns) {
      unique[it->second] = std::move(e);
    }
  }
  table.entries = std::move(unique);
  table.interfaces = AggregatePeers(state, config, now_ns, now_steady_ns);
  for (const auto& [interface, methods] : table.interfaces) {
    std::map<Method, MethodState> medians;
    for (const auto& [method, a] : methods) medians.emplace(method, a.state);
    PublishedEntry where;
    where.interface = interface;
    add(medians, ScopeKind::kInterface, false, where);
  }
  // The host default stands for the NIC of the default route, or the one
  // the configuration names.
  std::map<Method, MethodState> through_nic;
  const std::string nic_name = !config.host_default.interface.empty()
                                   ? config.host_default.interface
                               : nic.facts ? nic.facts->name
                                           : std::string();
  if (const auto it = table.interfaces.find(nic_name);
      !nic_name.empty() && it != table.interfaces.end()) {
    for (const auto& [method, a] : it->second) through_nic.emplace(method, a.state);
  }
  HostDefaultChoice choice = ChooseHostDefault(state, config, nic, through_nic);
  add(choice.methods, ScopeKind::kHostDefault, choice.estimated);
  table.host_default = choice.source;
  table.host_default_explanation = std::move(choice.explanation);
  return table;
}

}  // namespace zcal::agent

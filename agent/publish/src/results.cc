#include "zcal/agent/publish/results.h"

#include <algorithm>
#include <map>
#include <string>

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

std::string ResultName(std::string_view path, const MethodKey& key) {
  std::string name(path);
  name += "/" + std::string(calibrator::MethodName(key.method));
  if (key.depth != DepthClass::kStream) name += "@" + std::string(DepthClassName(key.depth));
  return name;
}

std::vector<std::string> MergeCalibration(
    AgentState& state, const std::string& path,
    const calibrator::PathResult& fresh, std::uint64_t now_ns,
    const std::optional<probes::HostLoad>& load,
    const calibrator::HysteresisOptions& options, DepthClass depth) {
  std::vector<std::string> log;
  MethodStates& methods = state.paths[path];
  for (const auto& [method, result] : fresh.methods) {
    const MethodKey key{method, depth};
    const std::string name = ResultName(path, key);
    const auto it = methods.find(key);
    std::optional<MethodResult> published;
    std::optional<MethodResult> pending;
    if (it != methods.end()) {
      published = it->second.published;
      pending = it->second.pending;
    }
    const calibrator::HysteresisDecision decision =
        calibrator::ApplyHysteresis(published, pending, result, options);
    if (decision.publish) {
      MethodState& s = methods[key];
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

std::optional<std::string> DropClass(AgentState& state, const std::string& path,
                                     const MethodKey& key, std::string_view why) {
  // The stream class is what every reader falls back to: never dropped.
  if (key.depth == DepthClass::kStream) return std::nullopt;
  const auto it = state.paths.find(path);
  if (it == state.paths.end() || it->second.erase(key) == 0) return std::nullopt;
  return ResultName(path, key) + ": not probed this round (" + std::string(why) +
         "); dropped, its readers get the stream entry";
}

void PruneState(AgentState& state, const Config& config) {
  std::erase_if(state.paths, [&](const auto& item) {
    // Peer paths are not configured one by one: PrunePeers keeps them.
    return !IsPeerPath(item.first) &&
           std::none_of(config.paths.begin(), config.paths.end(),
                        [&](const PathConfig& p) { return p.name == item.first; });
  });
  for (auto& [path, methods] : state.paths) {
    const std::string& name = path;  // clang 14: no captured bindings
    const auto type = std::find_if(config.paths.begin(), config.paths.end(),
                                   [&](const PathConfig& p) { return p.name == name; });
    // Loopback is calibrated at stream only (CalibratedDepths).
    const std::vector<std::uint32_t> depths = CalibratedDepths(
        config, type != config.paths.end() ? type->type : probes::TargetKind::kPeer);
    std::erase_if(methods, [&](const auto& item) {
      const MethodKey& key = item.first;
      // Stream stays whatever depths says: every reader falls back to it.
      return std::find(config.methods.begin(), config.methods.end(), key.method) ==
                 config.methods.end() ||
             (key.depth != DepthClass::kStream &&
              std::find(depths.begin(), depths.end(), DepthOf(key.depth)) == depths.end());
    });
  }
  std::erase_if(state.paths, [](const auto& item) { return item.second.empty(); });
  PrunePeers(state, config);
}

namespace {

// Adds the entries of `methods` under `scope` (address or interface from
// `where`).
void AddEntries(PublishedTable& table, const AgentState& state, const MethodStates& methods,
                ScopeKind scope, bool estimated, const PublishedEntry& where = {}) {
  for (const auto& [key, s] : methods) {
    // Readers fall back to a scope's stream entry, and the writer refuses
    // a class without one: a class whose stream result is not there (not
    // usable for a host default or an aggregate) is left out with it.
    if (key.depth != DepthClass::kStream && !methods.contains({key.method})) continue;
    PublishedEntry e = where;
    e.scope = scope;
    e.method = key.method;
    e.depth = key.depth;
    e.verdict = s.published.verdict;
    e.threshold_bytes = s.published.threshold_bytes;
    e.confidence = s.published.confidence;
    e.reason = s.published.reason;
    e.measured_at_ns = s.measured_at_ns;
    e.fingerprint = state.fingerprint;
    e.estimated = estimated;
    table.entries.push_back(std::move(e));
  }
}

// Each path's result under a scope of its own: it says what it measured.
void AddPathEntries(PublishedTable& table, const AgentState& state, const Config& config) {
  for (const PathConfig& path : config.paths) {
    const auto it = state.paths.find(path.name);
    if (it == state.paths.end()) continue;
    switch (path.type) {
      case probes::TargetKind::kLoopback:
        AddEntries(table, state, it->second, ScopeKind::kLoopback, false);
        break;
      case probes::TargetKind::kDiscard:
        AddEntries(table, state, it->second, ScopeKind::kDiscard, false);
        break;
      case probes::TargetKind::kPeer:
        break;  // not a configured path: peers are published below
    }
  }
}

// Each kept peer under its own host prefix, whatever it measured: a
// transport connected to that peer is told what its path measured. Two
// peers on one address (two sinks on different ports) share one prefix:
// the one measured last stays, with all of its classes.
void AddPeerEntries(PublishedTable& table, const AgentState& state) {
  struct Chosen {
    PublishedEntry where;
    std::uint64_t measured_at_ns = 0;
    const MethodStates* methods = nullptr;
  };
  std::map<std::string, Chosen> by_address;
  for (const auto& [path, peer] : state.peers) {
    const auto results = state.paths.find(path);
    if (results == state.paths.end()) continue;
    const common::HostPort& endpoint = peer.endpoint;
    std::uint64_t newest = 0;
    for (const auto& [key, s] : results->second) newest = std::max(newest, s.measured_at_ns);
    Chosen& chosen = by_address[common::ToString(endpoint.address)];
    if (chosen.methods != nullptr && newest <= chosen.measured_at_ns) continue;
    chosen.where.address = common::ToString(endpoint.address);
    chosen.where.prefix_len = endpoint.address.IsIpv6() ? 128 : 32;
    chosen.measured_at_ns = newest;
    chosen.methods = &results->second;
  }
  for (const auto& [address, chosen] : by_address) {
    AddEntries(table, state, *chosen.methods, ScopeKind::kPeer, false, chosen.where);
  }
}

// The peers' aggregates per interface, each under its interface's scope.
void AddInterfaceEntries(PublishedTable& table, const AgentState& state) {
  for (const auto& [interface, methods] : table.interfaces) {
    MethodStates medians;
    for (const auto& [key, a] : methods) medians.emplace(key, a.state);
    PublishedEntry where;
    where.interface = interface;
    AddEntries(table, state, medians, ScopeKind::kInterface, false, where);
  }
}

// The host default stands for the NIC of the default route, or the one the
// configuration names.
void AddHostDefault(PublishedTable& table, const AgentState& state, const Config& config,
                    const HostDefaultNic& nic) {
  MethodStates through_nic;
  const std::string nic_name = !config.host_default.interface.empty()
                                   ? config.host_default.interface
                               : nic.facts ? nic.facts->name
                                           : std::string();
  if (const auto it = table.interfaces.find(nic_name);
      !nic_name.empty() && it != table.interfaces.end()) {
    for (const auto& [key, a] : it->second) through_nic.emplace(key, a.state);
  }
  HostDefaultChoice choice = ChooseHostDefault(state, config, nic, through_nic);
  AddEntries(table, state, choice.methods, ScopeKind::kHostDefault, choice.estimated);
  table.host_default = std::move(choice);
}

}  // namespace

PublishedTable BuildEntries(const AgentState& state, const Config& config,
                            const HostDefaultNic& nic, std::uint64_t now_ns,
                            std::optional<std::int64_t> now_steady_ns) {
  PublishedTable table;
  AddPathEntries(table, state, config);
  AddPeerEntries(table, state);
  table.interfaces = AggregatePeers(state, config, now_ns, now_steady_ns);
  AddInterfaceEntries(table, state);
  AddHostDefault(table, state, config, nic);
  return table;
}

}  // namespace zcal::agent

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

std::string ResultName(const PathId& path, const MethodKey& key) {
  std::string name = ToString(path);
  name += "/" + std::string(calibrator::MethodName(key.method));
  if (key.depth != DepthClass::kStream) name += "@" + std::string(DepthClassName(key.depth));
  return name;
}

std::optional<probes::TargetKind> PathKind(const Config& config, const PathId& path) {
  if (path.IsPeer()) return probes::TargetKind::kPeer;
  const auto it = std::find_if(config.paths.begin(), config.paths.end(),
                               [&](const PathConfig& p) { return p.name == path.name(); });
  if (it == config.paths.end()) return std::nullopt;
  return it->type;
}

std::vector<std::string> MergeCalibration(
    AgentState& state, const PathId& path,
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

std::optional<std::string> DropClass(AgentState& state, const PathId& path,
                                     const MethodKey& key, std::string_view why) {
  // The stream class is what every reader falls back to: never dropped.
  if (key.depth == DepthClass::kStream) return std::nullopt;
  const auto it = state.paths.find(path);
  if (it == state.paths.end() || it->second.erase(key) == 0) return std::nullopt;
  return ResultName(path, key) + ": not probed this round (" + std::string(why) +
         "); dropped, its readers get the stream entry";
}

void PruneState(AgentState& state, const Config& config) {
  // Peer paths are not configured one by one: PrunePeers keeps them.
  std::erase_if(state.paths,
                [&](const auto& item) { return !PathKind(config, item.first).has_value(); });
  for (auto& [path, methods] : state.paths) {
    // Loopback is calibrated at stream only (CalibratedDepths).
    const std::vector<std::uint32_t> depths = CalibratedDepths(config, *PathKind(config, path));
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
  PruneDecidedFor(state);
}

void PruneDecidedFor(AgentState& state) {
  std::erase_if(state.decided_for,
                [&](const auto& item) { return !state.paths.contains(item.first); });
}

namespace {

// Adds the entries of `methods` under `scope` (path, address or interface
// from `where`).
void AddEntries(PublishedTable& table, const AgentState& state, const MethodStates& methods,
                ScopeKind scope, bool estimated, const PublishedEntry& where = {}) {
  for (const auto& [key, s] : methods) {
    // Readers fall back to a scope's stream entry, and the writer refuses
    // a class without one: a class whose stream result is not there (not
    // usable for a host default or an aggregate) is left out with it.
    if (key.depth != DepthClass::kStream && !methods.contains({key.method})) continue;
    PublishedEntry e = EntryOf(key, s, where);
    e.scope = scope;
    e.fingerprint = state.fingerprint;
    e.estimated = estimated;
    table.entries.push_back(std::move(e));
  }
}

// Each path's result under a scope of its own: it says what it measured.
void AddPathEntries(PublishedTable& table, const AgentState& state, const Config& config) {
  for (const PathConfig& path : config.paths) {
    PublishedEntry where;
    where.path = PathId::Configured(path.name);
    const auto it = state.paths.find(*where.path);
    if (it == state.paths.end()) continue;
    switch (path.type) {
      case probes::TargetKind::kLoopback:
        AddEntries(table, state, it->second, ScopeKind::kLoopback, false, where);
        break;
      case probes::TargetKind::kDiscard:
        AddEntries(table, state, it->second, ScopeKind::kDiscard, false, where);
        break;
      case probes::TargetKind::kPeer:
        break;  // not a configured path: peers are published below
    }
  }
}

// Each kept peer under its own host prefix, whatever it measured: a
// transport connected to that peer is told what its path measured. In the
// order of the text of their address, then of their path, the order in
// which SegmentEntries keeps one peer of a shared address.
void AddPeerEntries(PublishedTable& table, const AgentState& state) {
  std::map<std::pair<std::string, std::string>, std::pair<PathId, const MethodStates*>> ordered;
  for (const auto& [path, peer] : state.peers) {
    const auto results = state.paths.find(path);
    if (results == state.paths.end()) continue;
    ordered.emplace(std::pair{common::ToString(path.endpoint().address), ToString(path)},
                    std::pair{path, &results->second});
  }
  for (const auto& [text, peer] : ordered) {
    const auto& [path, methods] = peer;
    PublishedEntry where;
    where.path = path;
    where.address = text.first;
    where.prefix_len = path.endpoint().address.IsIpv6() ? 128 : 32;
    AddEntries(table, state, *methods, ScopeKind::kPeer, false, where);
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

std::vector<PublishedEntry> SegmentEntries(std::span<const PublishedEntry> table) {
  // Per address, the peer whose newest result is newest.
  struct Chosen {
    PathId path;
    std::uint64_t newest = 0;
  };
  std::map<std::string, Chosen> by_address;
  std::map<PathId, std::uint64_t> newest;
  for (const PublishedEntry& e : table) {
    if (e.scope != ScopeKind::kPeer || !e.path) continue;
    std::uint64_t& n = newest[*e.path];
    n = std::max(n, e.measured_at_ns);
  }
  for (const PublishedEntry& e : table) {
    if (e.scope != ScopeKind::kPeer || !e.path) continue;
    const std::uint64_t n = newest[*e.path];
    const auto [it, added] = by_address.try_emplace(e.address, Chosen{*e.path, n});
    if (!added && n > it->second.newest) it->second = Chosen{*e.path, n};
  }
  std::vector<PublishedEntry> entries;
  for (const PublishedEntry& e : table) {
    if (e.scope == ScopeKind::kPeer && e.path && by_address.at(e.address).path != *e.path) {
      continue;
    }
    entries.push_back(e);
  }
  return entries;
}

}  // namespace zcal::agent

#include "zcal/agent/results.h"

#include <algorithm>

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
    return std::none_of(config.paths.begin(), config.paths.end(),
                        [&](const PathConfig& p) { return p.name == item.first; });
  });
  for (auto& [path, methods] : state.paths) {
    std::erase_if(methods, [&](const auto& item) {
      return std::find(config.methods.begin(), config.methods.end(),
                       item.first) == config.methods.end();
    });
  }
  std::erase_if(state.paths, [](const auto& item) { return item.second.empty(); });
}

std::vector<PublishedEntry> BuildEntries(const AgentState& state,
                                         const Config& config) {
  std::vector<PublishedEntry> entries;
  const auto add = [&](const std::map<Method, MethodState>& methods,
                       ScopeKind scope) {
    for (const auto& [method, s] : methods) {
      PublishedEntry e;
      e.scope = scope;
      e.method = method;
      e.verdict = s.published.verdict;
      e.threshold_bytes = s.published.threshold_bytes;
      e.confidence = s.published.confidence;
      e.reason = s.published.reason;
      e.measured_at_ns = s.measured_at_ns;
      e.fingerprint = state.fingerprint;
      entries.push_back(std::move(e));
    }
  };
  for (const PathConfig& path : config.paths) {
    const auto it = state.paths.find(path.name);
    if (it == state.paths.end()) continue;
    switch (path.type) {
      case PathType::kLoopback:
        add(it->second, ScopeKind::kLoopback);
        break;
    }
  }
  if (!config.host_default.empty()) {
    if (const auto it = state.paths.find(config.host_default);
        it != state.paths.end()) {
      add(it->second, ScopeKind::kHostDefault);
    }
  }
  return entries;
}

}  // namespace zcal::agent

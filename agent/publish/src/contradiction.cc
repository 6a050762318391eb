#include "zcal/agent/publish/contradiction.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string_view>

#include "zcal/agent/publish/results.h"
#include "zcal/common/units.h"

namespace zcal::agent {

using calibrator::Verdict;

std::map<ContradictionKey, FieldEvidence> FieldEvidenceOf(const AppsWindow& window) {
  std::map<ContradictionKey, FieldEvidence> out;
  for (const auto& [name, cells] : window.apps) {
    for (const auto& [cell, counters] : cells) {
      if (counters.completions == 0) continue;
      FieldEvidence& e = out[{cell.scope, cell.method}];
      // A forged report may claim more copied than completions: it counts
      // as all copied, never more.
      const std::uint64_t copied = std::min(counters.copied, counters.completions);
      e.completions += counters.completions;
      e.copied += copied;
      auto& [app_completions, app_copied] = e.apps[name];
      app_completions += counters.completions;
      app_copied += copied;
    }
  }
  return out;
}

bool Contradicts(const FieldEvidence& evidence, const AppsSettings& settings) {
  if (evidence.completions == 0 ||
      evidence.completions < settings.contradiction_min_completions) {
    return false;
  }
  return static_cast<double>(evidence.copied) >=
         settings.contradiction_share * static_cast<double>(evidence.completions);
}

std::optional<ScopeKind> EntryScopeOf(AppScope scope) {
  switch (scope) {
    case AppScope::kHostDefault: return ScopeKind::kHostDefault;
    case AppScope::kPeer: return ScopeKind::kPeer;
    case AppScope::kInterface: return ScopeKind::kInterface;
    case AppScope::kLoopback:
    case AppScope::kNone: return std::nullopt;
  }
  return std::nullopt;
}

bool SaysZerocopyPays(Verdict verdict) {
  return verdict == Verdict::kThreshold || verdict == Verdict::kAlways;
}

namespace {

bool Matches(const PublishedEntry& e, const ContradictionKey& key) {
  const std::optional<ScopeKind> scope = EntryScopeOf(key.scope);
  return scope && e.scope == *scope && e.method == key.method;
}

// The entries of `key` that say zerocopy pays, and the newest measurement
// among them.
struct Standing {
  bool pays = false;
  std::uint64_t newest_ns = 0;
};

Standing StandingOf(std::span<const PublishedEntry> table, const ContradictionKey& key) {
  Standing s;
  for (const PublishedEntry& e : table) {
    if (!Matches(e, key) || !SaysZerocopyPays(e.verdict)) continue;
    s.pays = true;
    s.newest_ns = std::max(s.newest_ns, e.measured_at_ns);
  }
  return s;
}

std::uint64_t SpanSeconds(const AppsWindow& window) {
  return window.to_ns > window.from_ns ? (window.to_ns - window.from_ns) / 1'000'000'000 : 0;
}

std::string KeyName(const ContradictionKey& key) {
  return std::string(AppScopeName(key.scope)) + "/" +
         std::string(calibrator::MethodName(key.method));
}

}  // namespace

ContradictionUpdate ContradictionTracker::Apply(const AppsWindow& window,
                                                const AppsSettings& settings,
                                                std::span<const PublishedEntry> table,
                                                std::uint64_t now_ns) {
  ContradictionUpdate update;
  const auto hold_ns = static_cast<std::uint64_t>(settings.window.count()) * 1'000'000'000;
  for (const auto& [key, evidence] : FieldEvidenceOf(window)) {
    if (!EntryScopeOf(key.scope) || !Contradicts(evidence, settings)) continue;
    if (!StandingOf(table, key).pays) continue;
    const auto [it, added] = active_.try_emplace(key);
    Contradiction& c = it->second;
    c.key = key;
    c.evidence = evidence;
    c.window_seconds = SpanSeconds(window);
    c.last_seen_ns = now_ns;
    if (added) {
      c.raised_at_ns = now_ns;
      update.raised.push_back(c);
    }
  }
  for (auto it = active_.begin(); it != active_.end();) {
    const Contradiction& c = it->second;
    const Standing standing = StandingOf(table, c.key);
    std::string why;
    if (!standing.pays) {
      why = "no entry of that scope and method says zerocopy pays any more";
    } else if (standing.newest_ns > c.raised_at_ns && now_ns >= c.last_seen_ns &&
               now_ns - c.last_seen_ns >= hold_ns) {
      why = "measured again since it was raised, and no new evidence for " +
            std::to_string(settings.window.count()) + " s";
    }
    if (why.empty()) {
      ++it;
      continue;
    }
    update.cleared.emplace_back(c, std::move(why));
    it = active_.erase(it);
  }
  return update;
}

void ContradictionTracker::Mark(std::span<PublishedEntry> entries) const {
  for (PublishedEntry& e : entries) {
    e.contradicted = false;
    if (!SaysZerocopyPays(e.verdict)) continue;
    for (const auto& [key, c] : active_) {
      if (Matches(e, key)) e.contradicted = true;
    }
  }
}

std::vector<ContradictionRecord> ContradictionTracker::Records() const {
  std::vector<ContradictionRecord> records;
  for (const auto& [key, c] : active_) {
    records.push_back({key.scope, key.method, c.raised_at_ns, c.last_seen_ns});
  }
  return records;
}

void ContradictionTracker::Restore(std::span<const ContradictionRecord> records) {
  active_.clear();
  for (const ContradictionRecord& r : records) {
    if (!EntryScopeOf(r.scope)) continue;
    Contradiction c;
    c.key = {r.scope, r.method};
    c.raised_at_ns = r.raised_at_ns;
    c.last_seen_ns = r.last_seen_ns;
    active_[c.key] = c;
  }
}

std::string DescribeRaised(const Contradiction& c, std::span<const PublishedEntry> table) {
  const FieldEvidence& e = c.evidence;
  const auto percent = static_cast<long>(std::lround(
      100.0 * static_cast<double>(e.copied) / static_cast<double>(std::max<std::uint64_t>(e.completions, 1))));
  std::string text = "field contradiction on " + KeyName(c.key) + ": the applications saw " +
                     std::to_string(e.copied) + " of " + std::to_string(e.completions) +
                     " zerocopy completions copied (" + std::to_string(percent) + "%) within " +
                     common::FormatDuration(std::chrono::seconds(c.window_seconds)) + " (";
  std::vector<std::pair<std::string, std::pair<std::uint64_t, std::uint64_t>>> apps(
      e.apps.begin(), e.apps.end());
  std::stable_sort(apps.begin(), apps.end(), [](const auto& a, const auto& b) {
    return a.second.second > b.second.second;
  });
  constexpr std::size_t kNamed = 5;
  for (std::size_t i = 0; i < apps.size() && i < kNamed; ++i) {
    if (i != 0) text += ", ";
    text += apps[i].first + " " + std::to_string(apps[i].second.second) + "/" +
            std::to_string(apps[i].second.first);
  }
  if (apps.size() > kNamed) text += ", " + std::to_string(apps.size() - kNamed) + " more";
  text += ") where zcal publishes ";
  std::string published;
  for (const PublishedEntry& entry : table) {
    if (!Matches(entry, c.key) || !SaysZerocopyPays(entry.verdict) ||
        entry.depth != DepthClass::kStream) {
      continue;
    }
    calibrator::MethodResult r;
    r.verdict = entry.verdict;
    r.threshold_bytes = entry.threshold_bytes;
    published = DescribeResult(r);
    break;  // the first stream entry: for peers, one of several
  }
  text += published.empty() ? "that zerocopy pays" : published;
  text += "; its entries are flagged for readers and recalibrated";
  return text;
}

std::string DescribeCleared(const Contradiction& c, std::string_view why) {
  return "field contradiction on " + KeyName(c.key) + " cleared: " + std::string(why);
}

}  // namespace zcal::agent

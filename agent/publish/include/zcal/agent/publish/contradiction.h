// Field contradiction: the applications' reports (docs/shm-abi.md, "Report
// objects") show the kernel copying zerocopy sends of a scope where the
// published table says zerocopy pays there. The rule is pure: the window of
// reports, the settings, the table and the time in; what was raised and
// cleared out. The publisher logs, counts, flags and asks for the
// recalibration (docs/operations.md, "Field contradictions").
//
// A report says which *kind* of scope answered a send (host default,
// loopback, peer, interface, none), not which peer or interface: report
// ABI 1 has no room for it. So a contradiction is of a scope kind and a
// method, and flags every entry of that kind and method that says
// zerocopy pays (every peer entry of the method, for kind `peer`).
//
// Thread safety: none; the publisher's owner (the event loop) owns it.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zcal/agent/domain/app_traffic.h"
#include "zcal/agent/domain/apps_settings.h"
#include "zcal/agent/domain/contradiction_record.h"
#include "zcal/agent/domain/published_entry.h"
#include "zcal/calibrator/method.h"

namespace zcal::agent {

/// What a contradiction is of: a scope kind and a send method.
struct ContradictionKey {
  AppScope scope = AppScope::kNone;
  calibrator::Method method = calibrator::Method::kMsgZerocopy;
  friend auto operator<=>(const ContradictionKey&, const ContradictionKey&) = default;
};

/// What the applications reported for one scope kind and method within a
/// window.
struct FieldEvidence {
  std::uint64_t completions = 0;  ///< zerocopy completions
  std::uint64_t copied = 0;       ///< of them, the kernel copied
  /// By application name: (completions, copied), names with completions.
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> apps;
  bool operator==(const FieldEvidence&) const = default;
};

/// The window's evidence per scope kind and method (cells with completions
/// only; every scope kind, loopback and none included: the rule skips them).
std::map<ContradictionKey, FieldEvidence> FieldEvidenceOf(const AppsWindow& window);

/// Whether evidence is enough to contradict an entry: at least
/// settings.contradiction_min_completions completions, of which at least
/// settings.contradiction_share came back copied.
bool Contradicts(const FieldEvidence& evidence, const AppsSettings& settings);

/// The entries' scope a report's scope kind answers with: host_default,
/// peer and interface; nullopt for loopback (published `never`: the kernel
/// copies there by design) and none (no entry answered), which never trip
/// the rule.
std::optional<ScopeKind> EntryScopeOf(AppScope scope);

/// A verdict that tells readers to send with zerocopy from some size:
/// threshold or always.
bool SaysZerocopyPays(calibrator::Verdict verdict);

/// One contradiction, from when it was raised until it clears.
struct Contradiction {
  ContradictionKey key;
  FieldEvidence evidence;         ///< of the last window that tripped the rule
  std::uint64_t window_seconds = 0;  ///< that window's span
  std::uint64_t raised_at_ns = 0;    ///< CLOCK_REALTIME
  std::uint64_t last_seen_ns = 0;    ///< the last Apply whose window tripped it
};

/// What one Apply changed.
struct ContradictionUpdate {
  /// Raised by this Apply: each is logged, counted and recalibrated once.
  std::vector<Contradiction> raised;
  /// Cleared by this Apply, each with why ("measured again since, ...").
  std::vector<std::pair<Contradiction, std::string>> cleared;
  bool changed() const { return !raised.empty() || !cleared.empty(); }
};

/// The contradictions in force, and the rule that raises and clears them.
///
/// Raised: where a scope kind's evidence within the window Contradicts
/// and an entry of that kind and method in the table says zerocopy pays.
/// Held: readers' guards answer copy for a flagged entry, so its copied
/// completions stop; a window without new evidence is no sign that the
/// entry is right. Cleared when
/// - no entry of that kind and method says zerocopy pays any more (a
///   calibration published `never` there, or the entries went), or
/// - an entry of that kind and method was measured after the
///   contradiction was raised (its measured_at_ns: a calibration published
///   or confirmed it), and `settings.window` has passed since the rule last
///   tripped.
class ContradictionTracker {
 public:
  /// Applies the window read at `now_ns` (CLOCK_REALTIME) against `table`
  /// (the published entries, before Mark).
  ContradictionUpdate Apply(const AppsWindow& window, const AppsSettings& settings,
                            std::span<const PublishedEntry> table, std::uint64_t now_ns);

  /// Sets `contradicted` on each entry of a contradiction in force that
  /// says zerocopy pays (every depth class); clears it on the others.
  void Mark(std::span<PublishedEntry> entries) const;

  const std::map<ContradictionKey, Contradiction>& active() const { return active_; }

  /// The contradictions in force, as the state file keeps them.
  std::vector<ContradictionRecord> Records() const;
  /// Puts saved contradictions in force (their evidence is not kept: a
  /// restored one has none until the rule trips again); replaces those in
  /// force. Records of a scope kind that never trips the rule are skipped.
  void Restore(std::span<const ContradictionRecord> records);

 private:
  std::map<ContradictionKey, Contradiction> active_;
};

/// The log line of a raised contradiction: scope, method, the figures, the
/// applications (those with copied completions first, at most five named)
/// and what the table said, e.g. "field contradiction on peer/msg_zerocopy:
/// the applications saw 900 of 1000 zerocopy completions copied (90%)
/// within 3600 s (db 800/850, web 100/150) where zcal publishes threshold
/// 16KiB; the entries are flagged for readers and their paths recalibrated".
std::string DescribeRaised(const Contradiction& c, std::span<const PublishedEntry> table);
/// The log line of a cleared one: "field contradiction on peer/msg_zerocopy
/// cleared: WHY".
std::string DescribeCleared(const Contradiction& c, std::string_view why);

}  // namespace zcal::agent

// What `zcal export`, `zcal exec` and the agent's exports share: reading
// the values for a key from the segment with libzcal, with the refusal
// rules (no segment, no usable entry for a method the consumer reads, a
// stale table under --fresh), the marking of a method it may not read
// (env's) and --fallback (docs/export.md). One reading for all three, so that a file
// the agent keeps current holds what `zcal export` prints for its key.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zcal/agent/report/export_format.h"
#include "zcal/common/result.h"

namespace zcal::agent {

/// The key and its options, as the command line spells them (--segment,
/// --for, --scope, --interface, --fallback, --fresh, --strict-depth); at
/// most one of for_address, scope and interface is set.
struct ExportKeyArgs {
  std::string segment;  ///< "" = $ZCAL_SEGMENT, else /zcal
  std::string for_address;
  std::string scope;
  std::string interface;
  std::string fallback;
  bool fresh = false;
  /// A scope's stream entry does not stand in for the asked depth class:
  /// a method without an entry of that class has no usable entry.
  bool strict_depth = false;
  /// The asked class must exist in the segment (for some scope and
  /// method): a depth given on the command line that the agent publishes
  /// nowhere is a mistake to say, not a stream answer to pass on. The
  /// agent's own exports leave it off: a class may be missing for a while
  /// (not probed this round because its neighbours answer).
  bool require_class = false;
};

struct ExportSelection {
  ExportValues values;
  nlohmann::json show;  ///< zcal show --json's document; null without a segment
};

/// Reads the values of `plan.methods` for the key at `plan.depth`
/// (zcal_lookup_depth: the class's entry of the matching scope, else that
/// scope's stream entry, marked depth_fallback). A method without a
/// usable entry (none, or inconclusive; with strict_depth also one whose
/// scope has only a stream entry) takes the fallback when one is given;
/// otherwise a required one refuses the whole export and any other is
/// marked (ExportSource::kMissing). Warnings (a stale table, a fallback
/// used, a method marked missing, a stream entry standing in for the
/// class) go to `warnings` as lines starting with `command`. The error is one sentence: kInvalidArgument for a bad option
/// value, kNotFound for no segment or no usable entry for a required
/// method, others for a segment that cannot be read.
/// `now_ns` is the wall clock (ns since the epoch) the entries' ages in
/// `show` are taken against: the service's clock in the agent.
Result<ExportSelection> SelectExport(const ExportKeyArgs& args, const ExportPlan& plan,
                                     std::string_view command, std::ostream& warnings,
                                     std::uint64_t now_ns);

}  // namespace zcal::agent

// The files the agent keeps current (section `exports:`, docs/export.md):
// after each publish, each file's content is computed from the segment as
// `zcal export` computes it for the same key and format, and the file is
// replaced (atomically, keeping its owner and mode, flushed) only when that
// content differs from what this agent last wrote there, or, before its
// first write, from what the file holds.
//
// Thread safety: none; the publisher calls it on the event loop.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "zcal/agent/config/config.h"
#include "zcal/agent/metrics/metrics.h"
#include "zcal/common/clock.h"

namespace zcal::agent {

class Exporter {
 public:
  /// `clock`'s wall clock stamps the ages the json format writes.
  Exporter(std::shared_ptr<Metrics> metrics, std::shared_ptr<const common::Clock> clock)
      : metrics_(std::move(metrics)), clock_(std::move(clock)) {}

  /// Takes a new list of exports. An export whose format, key, fallback,
  /// methods, depth and path are unchanged keeps what it last wrote (so a reload writes
  /// nothing that has not changed); a new one compares with its file at
  /// the next Update.
  void Configure(const std::vector<ExportConfig>& exports);

  /// For each export, reads its key's values from `segment` with libzcal
  /// and rewrites the file if its content changed, counting
  /// zcal_export_writes_total{format}. When the content cannot be produced
  /// (no segment, or no usable entry for a method the consumer reads and no
  /// fallback) or the file cannot be written, the file is left as it is, zcal_export_errors_total{format}
  /// counts the attempt, and the reason is logged once until it changes.
  void Update(const std::string& segment);

 private:
  struct Slot {
    ExportConfig config;
    /// What the file holds as far as this agent knows, in the form that is
    /// compared (ComparableText); nullopt before the first Update.
    std::optional<std::string> known;
    std::string failure;  ///< the reason last logged, "" after a success
  };
  void UpdateOne(Slot& slot, const std::string& segment);
  void Failed(Slot& slot, const std::string& reason);

  std::shared_ptr<Metrics> metrics_;
  std::shared_ptr<const common::Clock> clock_;
  std::vector<Slot> slots_;
};

/// The part of an export's text that decides whether it changed: the text
/// itself, except for json, whose document also holds the segment's
/// generation, publish and heartbeat times and ages, which change at every
/// publish and heartbeat; those are left out of the comparison (the file
/// holds them as of its last write). Text that is no JSON compares as is.
std::string ComparableText(ExportFormat format, const std::string& text);

}  // namespace zcal::agent

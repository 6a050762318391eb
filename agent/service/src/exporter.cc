#include "zcal/agent/service/exporter.h"

#include <sstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "zcal/agent/report/export_format.h"
#include "zcal/agent/report/export_select.h"
#include "zcal/common/atomic_file.h"
#include "zcal/common/bounded_read.h"

namespace zcal::agent {

namespace {

// An exported file is a few hundred bytes (json a few KiB per entry); a
// file larger than this is not one the agent wrote, and is replaced.
constexpr std::size_t kMaxExportBytes = 4 << 20;

std::string KeyText(const ExportConfig& e) {
  const std::string depth = e.depth ? ", depth " + e.depth->asked : "";
  if (!e.for_address.empty()) return "for " + e.for_address + depth;
  if (!e.interface.empty()) return "interface " + e.interface + depth;
  return "scope " + e.scope + depth;
}

}  // namespace

std::string ComparableText(ExportFormat format, const std::string& text) {
  if (format != ExportFormat::kJson) return text;
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return text;
  for (const char* key : {"generation", "publish_time_ns", "publish_age_seconds",
                          "heartbeat_ns", "heartbeat_age_seconds"})
    doc.erase(key);
  if (auto it = doc.find("entries"); it != doc.end() && it->is_array())
    for (nlohmann::json& entry : *it)
      if (entry.is_object()) entry.erase("age_seconds");
  return doc.dump();
}

void Exporter::Configure(const std::vector<ExportConfig>& exports) {
  std::vector<Slot> next;
  for (const ExportConfig& e : exports) {
    Slot slot{e, std::nullopt, ""};
    for (Slot& old : slots_)
      if (old.config == e) slot = std::move(old);
    next.push_back(std::move(slot));
  }
  slots_ = std::move(next);
}

void Exporter::Update(const std::string& segment) {
  for (Slot& slot : slots_) UpdateOne(slot, segment);
}

void Exporter::Failed(Slot& slot, const std::string& reason) {
  metrics_->RecordExportError(slot.config.format);
  if (reason == slot.failure) return;
  spdlog::warn("export {} ({} {}): {}; the file is left as it is", slot.config.path,
               ExportFormatName(slot.config.format), KeyText(slot.config), reason);
  slot.failure = reason;
}

void Exporter::UpdateOne(Slot& slot, const std::string& segment) {
  const ExportConfig& e = slot.config;
  ExportKeyArgs args;
  args.segment = segment;
  args.for_address = e.for_address;
  args.interface = e.interface;
  args.scope = e.scope;
  args.fallback = e.fallback;
  args.strict_depth = e.strict_depth;
  // Warnings (a stale table, a fallback used, a method marked missing) are
  // in the text itself (ZCAL_STALE, ZCAL_SOURCE, ZCAL_MISSING, the comment
  // line), not for the agent's log.
  std::ostringstream warnings;
  const ExportFormat formats[] = {e.format};
  auto plan = PlanExport(formats, e.methods, "methods", e.depth);
  if (!plan) return Failed(slot, plan.error().message);
  auto selection = SelectExport(args, *plan, "zcal agent", warnings, clock_->Wall());
  if (!selection) return Failed(slot, selection.error().message);
  auto text = FormatExport(e.format, selection->values, selection->show);
  if (!text) return Failed(slot, text.error().message);

  const std::string comparable = ComparableText(e.format, *text);
  if (!slot.known) {
    // Before the first write: what the file holds (from an earlier run, or
    // written by zcal export) counts as written.
    auto current = common::ReadBounded(e.path, kMaxExportBytes, common::InputKind::kRegular,
                                       "exported file");
    if (current) slot.known = ComparableText(e.format, *current);
  }
  if (slot.known && *slot.known == comparable) {
    slot.failure.clear();
    return;
  }
  common::AtomicFileOptions options;
  options.keep_existing = true;  // the owner and mode an operator gave it
  options.durable = true;
  if (auto written = common::WriteFileAtomically(e.path, *text, options); !written)
    return Failed(slot, written.error().message);
  slot.known = comparable;
  metrics_->RecordExportWrite(e.format);
  if (!slot.failure.empty())
    spdlog::info("export {}: written again", e.path);
  slot.failure.clear();
  spdlog::debug("export {}: written ({} bytes)", e.path, text->size());
}

}  // namespace zcal::agent

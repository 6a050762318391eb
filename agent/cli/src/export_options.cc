#include "export_options.h"

#include <optional>
#include <vector>

namespace zcal::agent {

void AddExportKeyOptions(CLI::App& app, ExportKeyArgs& args) {
  app.add_option("--segment", args.segment,
                 "Segment name, \"/NAME\" (default: $ZCAL_SEGMENT, else /zcal)");
  CLI::Option* for_opt = app.add_option(
      "--for", args.for_address,
      "The values for traffic to this peer address, as a transport looks them up");
  CLI::Option* scope = app.add_option(
      "--scope", args.scope, "host_default (the default) or loopback: that scope's values");
  CLI::Option* interface = app.add_option(
      "--interface", args.interface, "The values for traffic leaving this interface");
  for_opt->excludes(scope, interface);
  scope->excludes(interface);
  app.add_option("--fallback", args.fallback,
                 "never, always or a size in bytes: printed, with a warning and "
                 "ZCAL_SOURCE=fallback, for each method without a usable entry "
                 "(default: fail for a method the consumer reads, mark the others)");
  app.add_flag("--fresh", args.fresh,
               "Refuse a stale table (republished at agent start, not yet confirmed)");
  app.add_flag("--strict-depth", args.strict_depth,
               "Refuse a scope's stream entry in place of --depth's class: a method without "
               "an entry of that class has no usable entry (default: the stream entry "
               "answers, marked ZCAL_DEPTH_FALLBACK)");
}

void ExportPlanOptions::Add(CLI::App& app) {
  methods_option_ = app.add_option(
      "--methods", methods_,
      "Comma-separated zerocopy methods the consumer reads (msg_zerocopy, uring_send_zc, "
      "uring_send_zc_fixed): only these are written, and each must have a usable entry "
      "(default: the format's; env marks a method without one)");
  depth_option_ = app.add_option(
      "--depth", depth_,
      "Zerocopy sends the consumer keeps in flight per connection: 1, 4, 16, stream, or a "
      "number from 1 to 128, which takes its class (the class at or below it, stream from "
      "32); the values are that class's entries, the scope's stream entry where it has "
      "none (default: the format's consumer's, stream for every format)");
}

Result<ExportPlan> ExportPlanOptions::Plan(std::span<const ExportFormat> formats) const {
  std::optional<ExportDepth> depth;
  if (depth_option_ != nullptr && depth_option_->count() > 0) {
    auto parsed = ParseExportDepth(depth_);
    if (!parsed) return tl::unexpected(parsed.error());
    depth = std::move(*parsed);
  }
  std::vector<calibrator::Method> named;
  if (methods_option_ != nullptr && methods_option_->count() > 0) {
    auto parsed = ParseExportMethods(methods_);
    if (!parsed) return tl::unexpected(parsed.error());
    named = std::move(*parsed);
  }
  return PlanExport(formats, named, "--methods", depth);
}

}  // namespace zcal::agent

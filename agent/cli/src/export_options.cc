#include "export_options.h"

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
}

void ExportMethodsOption::Add(CLI::App& app) {
  option_ = app.add_option(
      "--methods", text_,
      "Comma-separated zerocopy methods the consumer reads (msg_zerocopy, uring_send_zc, "
      "uring_send_zc_fixed): only these are written, and each must have a usable entry "
      "(default: the format's; env marks a method without one)");
}

Result<ExportPlan> ExportMethodsOption::Plan(std::span<const ExportFormat> formats) const {
  std::vector<calibrator::Method> named;
  if (option_ != nullptr && option_->count() > 0) {
    auto parsed = ParseExportMethods(text_);
    if (!parsed) return tl::unexpected(parsed.error());
    named = std::move(*parsed);
  }
  return PlanExport(formats, named);
}

}  // namespace zcal::agent

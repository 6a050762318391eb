#include "export_options.h"

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
                 "(default: fail)");
  app.add_flag("--fresh", args.fresh,
               "Refuse a stale table (republished at agent start, not yet confirmed)");
}

}  // namespace zcal::agent

// The report page's embedded assets (src/assets/, and Debian's
// Chart.js) and the Content-Security-Policy that admits exactly them.
#pragma once

#include <string>

namespace zcal::agent::report_assets {

/// The page's own script (src/assets/report.js).
const std::string& Script();
/// Chart.js 3.9.1 as Debian ships it (chart.min.js; license banner kept,
/// its URL lines dropped by embed_assets.py).
const std::string& ChartJs();
/// The style sheet (src/assets/report.css).
const std::string& Style();
/// "default-src 'none'; script-src 'sha256-...' 'sha256-...'; style-src
/// 'sha256-...'; base-uri 'none'; form-action 'none'": SHA-256, base64, of
/// the three texts above, as computed when they were embedded.
const std::string& Policy();

}  // namespace zcal::agent::report_assets

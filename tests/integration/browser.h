// Headless Chromium for the report tests: loads a page with the network
// off, and returns its DOM after the scripts ran, what its console said,
// and a screenshot.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace zcal::agent::testing {

/// The browser: $ZCAL_CHROMIUM, else /usr/bin/chromium; "" when neither is
/// an executable file (the tests then skip, saying so).
std::string ChromiumPath();

struct LoadedPage {
  int exit_status = -1;
  std::string dom;                   ///< --dump-dom
  std::vector<std::string> console;  ///< every console message, in order
  std::string log;                   ///< the browser's stderr, for failures
  double seconds = 0;                ///< wall time of the browser's run
};

/// Loads `url` at 1280 x `height` in a fresh profile, with every host name
/// but 127.0.0.1 unresolvable and every proxied request sent to a closed
/// port (loopback is never proxied), so that no request leaves the
/// machine; the screenshot
/// goes to `screenshot` (PNG).
LoadedPage LoadPage(const std::string& url, const std::filesystem::path& screenshot,
                    int height = 800);

/// Width and height of a PNG file; {0, 0} when it is not one.
std::pair<int, int> PngSize(const std::filesystem::path& png);

/// The opening tags of every element with attribute `name`="`value`"
/// ("canvas", "data-rendered", "1"), as written in the DOM.
std::vector<std::string> Tags(const std::string& dom, const std::string& element);

/// The value of attribute `name` in an opening tag; "" when absent.
std::string Attribute(const std::string& tag, const std::string& name);

/// Every absolute URL with a scheme other than data: or file: and every
/// protocol-relative one ("//host/") in `text`.
std::vector<std::string> ExternalUrls(const std::string& text);

}  // namespace zcal::agent::testing

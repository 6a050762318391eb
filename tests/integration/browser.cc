#include "browser.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "test_util.h"

namespace zcal::agent::testing {

std::string ChromiumPath() {
  const char* env = std::getenv("ZCAL_CHROMIUM");
  const std::string path = env != nullptr && *env != 0 ? env : "/usr/bin/chromium";
  return access(path.c_str(), X_OK) == 0 ? path : std::string();
}

LoadedPage LoadPage(const std::string& url, const std::filesystem::path& screenshot,
                    int height) {
  TempDir profile;
  const std::vector<std::string> argv = {
      "/usr/bin/timeout", "120", ChromiumPath(),
      "--headless=new", "--no-sandbox", "--disable-gpu",
      "--no-first-run", "--no-default-browser-check", "--disable-extensions",
      "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
      "--proxy-server=127.0.0.1:9", "--enable-logging=stderr", "--v=0",
      "--user-data-dir=" + profile.path().string(),
      "--window-size=1280," + std::to_string(height),
      "--screenshot=" + screenshot.string(), "--dump-dom", url};
  const auto start = std::chrono::steady_clock::now();
  const CommandResult run = RunCommand(argv);
  LoadedPage page;
  page.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  page.exit_status = run.status;
  page.dom = run.out;
  page.log = run.err;
  std::istringstream lines(run.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(":CONSOLE") != std::string::npos) page.console.push_back(line);
  }
  return page;
}

std::pair<int, int> PngSize(const std::filesystem::path& png) {
  std::ifstream in(png, std::ios::binary);
  unsigned char head[24] = {};
  if (!in.read(reinterpret_cast<char*>(head), sizeof head)) return {0, 0};
  if (head[1] != 'P' || head[2] != 'N' || head[3] != 'G' || head[12] != 'I') return {0, 0};
  const auto be32 = [&](int at) {
    return (head[at] << 24) | (head[at + 1] << 16) | (head[at + 2] << 8) | head[at + 3];
  };
  return {be32(16), be32(20)};
}

std::vector<std::string> Tags(const std::string& dom, const std::string& element) {
  std::vector<std::string> tags;
  const std::string open = "<" + element + " ";
  for (std::size_t at = dom.find(open); at != std::string::npos; at = dom.find(open, at + 1)) {
    const std::size_t end = dom.find('>', at);
    if (end == std::string::npos) break;
    tags.push_back(dom.substr(at, end - at + 1));
  }
  return tags;
}

std::string Attribute(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const std::size_t at = tag.find(key);
  if (at == std::string::npos) return "";
  const std::size_t start = at + key.size();
  return tag.substr(start, tag.find('"', start) - start);
}

std::vector<std::string> ExternalUrls(const std::string& text) {
  static const std::regex kUrl(R"((?:\b[a-zA-Z][a-zA-Z0-9+.-]*:)?//[^\s"'<>()]+)");
  std::vector<std::string> urls;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kUrl);
       it != std::sregex_iterator(); ++it) {
    const std::string url = it->str();
    if (url.starts_with("file:") || url.starts_with("data:")) continue;
    urls.push_back(url);
  }
  return urls;
}

}  // namespace zcal::agent::testing

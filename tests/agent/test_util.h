// Helpers shared by the agent's unit and integration tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace zcal::agent::testing {

/// A directory under $TMPDIR removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

void WriteFile(const std::filesystem::path& path, std::string_view text);
std::string ReadFile(const std::filesystem::path& path);

struct HttpResponse {
  int status = 0;
  std::string body;
};

/// GET http://127.0.0.1:PORT/TARGET (HTTP/1.0). nullopt when the
/// connection fails or the response is not HTTP.
std::optional<HttpResponse> HttpGet(int port, const std::string& target);

/// A TCP port on 127.0.0.1 that was free a moment ago.
int FreePort();

/// Runs argv, waits, and returns exit status and stdout (stderr discarded
/// unless `stderr_out` is given).
struct CommandResult {
  int status = -1;  ///< exit status, or 128 + signal
  std::string out;
  std::string err;
};
CommandResult RunCommand(const std::vector<std::string>& argv);

/// Calls `condition` every 50 ms until it is true or `timeout` passes.
bool WaitFor(const std::function<bool()>& condition,
             std::chrono::milliseconds timeout);

/// "%XX"-escapes a query string value.
std::string UrlEncode(std::string_view text);

}  // namespace zcal::agent::testing
